import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, provision, type ProvisionedDatabase } from '../../src/index.js'
import { findLocalBinaries } from '../../src/bench-kit.js'
import { useTestDatabase } from '../support/test-database.js'
import { expensesRollup as sharedExpensesRollup } from '../../bench/synthetic/expenses.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from './rollup-fixture.js'
import { CITUS_OPT_IN, describeUnless } from '../support/skip.js'

/**
 * The rollup on Citus, colocated with its source (opt-in: PGSCALE_TEST_CITUS_WORKERS=N with Citus
 * installed; CI has no Citus). Without Citus, `distribute` is a typed error — checked on every run.
 */
const t = useTestDatabase()
const found = findLocalBinaries()
const workers = Number(process.env.PGSCALE_TEST_CITUS_WORKERS ?? 0)
const citusRun = found.ok && found.binaries.citusVersion !== undefined && workers > 0
const ZONE = 'America/Mexico_City'

describe('rollup.distribute', () => {
  it('without Citus: an InvalidArgumentError, nothing changed', async () => {
    if (await t.db.hasCitus()) return
    const { rollup } = expensesRollup(ZONE)
    await expect(rollup.distribute(t.db)).rejects.toBeInstanceOf(InvalidArgumentError)
  })
})

describeUnless(!citusRun && CITUS_OPT_IN)('the rollup on a Citus coordinator (opt-in)', () => {
  let p: ProvisionedDatabase
  // The bench's rollup, as it is: this test distributes by hand (the fixture's create would colocate).
  const { target, rollup } = sharedExpensesRollup({ source: 'expenses', target: 'expenses_monthly', zone: ZONE })
  beforeAll(async () => {
    p = await provision({ provider: 'local', citus: { workers } })
    await seedExpenses(p.db, { seed: 'citus', rows: 6_000, tenants: 6, bigTenantRows: 2_000, months: 6 }, { distribute: false })
    await target.create(p.db)
  }, 120_000)
  afterAll(() => p?.stop())

  it('refuses a source that is not distributed, then colocates with it once it is', async () => {
    await expect(rollup.distribute(p.db)).rejects.toThrow(/is not distributed; distribute it by tenant_id first/)
    await sql`select create_distributed_table('expenses', 'tenant_id')`.execute(p.db)
    // Two at once, then once more: distributed once.
    await Promise.all([rollup.distribute(p.db), rollup.distribute(p.db)])
    await rollup.distribute(p.db)
    const { rows } = await sql<{
      rel: string
      col: number
    }>`select logicalrelid::text as rel, colocationid as col from pg_dist_partition order by 1`.execute(p.db)
    expect(rows.map((r) => r.rel)).toEqual(['expenses', 'expenses_monthly'])
    expect(new Set(rows.map((r) => r.col)).size).toBe(1)
  })

  it('refreshAt, rebuild and read equal the from-scratch aggregate; ten concurrent refreshes of one bucket agree', async () => {
    await rollup.rebuild(p.db, { tenantId: 1, since: '2025-09-01', until: '2025-11-01' })
    expect(await rollupSnapshot(p.db, 'expenses_monthly', 1)).toBe(await fromScratch(p.db, ZONE, 1, '2025-09-01', '2025-11-01'))
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (1, '2025-10-15T12:00:00Z', 'citus', 42, 'paid')`.execute(
      p.db,
    )
    await Promise.all(Array.from({ length: 10 }, () => rollup.refreshAt(p.db, { tenantId: 1, moment: '2025-10-15T12:00:00Z' })))
    expect(await rollupSnapshot(p.db, 'expenses_monthly', 1)).toBe(await fromScratch(p.db, ZONE, 1, '2025-09-01', '2025-11-01'))
    const read = await rollup.read(p.db, { tenantId: 1, from: '2025-10', to: '2025-10' })
    expect(read.some((r) => r.category === 'citus')).toBe(true)
  })
})
