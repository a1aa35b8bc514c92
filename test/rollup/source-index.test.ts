import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { explain, MonthlyRollup, rollupTable } from '../../src/index.js'
import { bucketAggregate } from '../../src/bench-kit.js'
import { useTestDatabase } from '../support/test-database.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

/** The covering index a rollup recommends: the columns it reads, and the index-only scan it gives. */
const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const { target, rollup } = expensesRollup(ZONE)

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'source-index', rows: 8_000, tenants: 4, bigTenantRows: 5_000, months: 6 })
  await target.create(t.db)
})

describe('MonthlyRollup.sourceIndex', () => {
  it('covers exactly the columns the aggregate reads (groups, measures, where), whatever the expressions', async () => {
    const index = await rollup.sourceIndex(t.db)
    expect(index.key).toEqual(['tenant_id', 'paid_at'])
    expect(index.include).toEqual(['category', 'amount', 'status'])
    expect(index.sql).toBe(
      `create index if not exists "${index.name}" on "expenses" ("tenant_id", "paid_at") include ("category", "amount", "status")`,
    )
    const narrow = new MonthlyRollup({
      source: 'expenses',
      target: rollupTable('narrow_monthly', { groupBy: {}, measures: { big: 'bigint' }, tenantType: 'bigint' }),
      at: 'paid_at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { big: sql`count(*) filter (where amount > 100)` },
      zone: ZONE,
    })
    expect((await narrow.sourceIndex(t.db, { concurrently: true })).include).toEqual(['amount'])
    expect((await narrow.sourceIndex(t.db, { concurrently: true })).sql).toMatch(/^create index concurrently if not exists/)
    // Nothing was left behind by the inspection.
    const { rows } = await sql<{
      n: number
    }>`select count(*)::int as n from pg_class where relname like 'pgscale_source_columns_%'`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
  })

  it('once created and the table vacuumed, a bucket is aggregated by an index-only scan and refreshes stay exact', async () => {
    const index = await rollup.sourceIndex(t.db)
    await sql.raw(index.sql).execute(t.db)
    // Its key is the plain (tenant, at) index's key, so it replaces that index.
    await sql`drop index expenses_tenant_paid_at`.execute(t.db)
    await sql`vacuum analyze expenses`.execute(t.db)
    const plan = await explain(t.db, bucketAggregate(rollup.parts, 1, '2025-11-01'))
    expect(JSON.stringify(plan)).toContain('Index Only Scan')
    expect(JSON.stringify(plan)).toContain(index.name)
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-11-15T00:00:00Z' })
    expect(await rollupSnapshot(t.db, 'expenses_monthly', 1)).toBe(await fromScratch(t.db, ZONE, 1, '2025-11-01', '2025-11-01'))
  })
})
