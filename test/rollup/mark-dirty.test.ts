import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { connect, hasCitusShardNodes, InvalidArgumentError, MigrationRequiredError, type Database } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

/**
 * `rollup.markDirty`: the writer marks, in its own transaction, the buckets of writes the triggers
 * do not see (here: a load with `session_replication_role = replica`). Against the from-scratch
 * truth; rolled back, bad input, an untracked rollup, two writers marking one bucket at once.
 */
const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const { target, rollup } = expensesRollup(ZONE, 'marked_monthly')
const TENANTS = [1, 2, 3, 4]
const withServer = itWithServer(testTarget())
let citus = false

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'mark-dirty', rows: 2_000, tenants: 4, bigTenantRows: 600, months: 12 })
  await target.create(t.db)
  citus = await hasCitusShardNodes(t.db)
  for (const tenantId of TENANTS) await rollup.rebuild(t.db, { tenantId, since: '2000-01-01', until: '2030-12-31' })
  await rollup.track(t.db)
})

beforeEach(async () => {
  while ((await rollup.refreshDirty(t.db)).remaining > 0);
})

async function pending(): Promise<Array<{ tenant_id: number; month: string }>> {
  const { rows } = await sql<{ tenant_id: number; month: string }>`
    select distinct tenant_id::int, to_char(month, 'YYYY-MM') as month from marked_monthly_dirty order by 1, 2`.execute(t.db)
  return rows
}

async function expectTruth(db: Database = t.db) {
  for (const tenantId of TENANTS)
    expect([tenantId, await rollupSnapshot(db, 'marked_monthly', tenantId)]).toEqual([tenantId, await fromScratch(db, ZONE, tenantId)])
}

/** Inserts rows the triggers do not see (replica mode: ordinary triggers off for this transaction). */
const untrackedInsert = (tenant: number, paidAt: string) =>
  sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (${tenant}, ${paidAt}::timestamptz, 'marked', 5, 'paid')`

describe('MonthlyRollup.markDirty', () => {
  it("marks the moments' local months in the writer's transaction (Mexico City: 05:59:59Z is still February); the drain heals them", async () => {
    const moments = ['2024-03-01T05:59:59Z', '2024-03-01T06:00:00Z', '2024-03-20T12:00:00Z']
    const marked = await t.db.transaction().execute(async (trx) => {
      // Citus does not carry this setting to the shards: there the triggers mark too (same keys).
      if (!citus) await sql`set local session_replication_role = replica`.execute(trx)
      for (const at of moments) await untrackedInsert(3, at).execute(trx)
      return rollup.markDirty(trx, { tenantId: 3, at: [moments[0]!, new Date(moments[1]!), moments[2]!] })
    })
    if (!citus) expect(marked).toEqual({ months: 2 })
    expect(await pending()).toEqual([
      { tenant_id: 3, month: '2024-02' },
      { tenant_id: 3, month: '2024-03' },
    ])
    await rollup.refreshDirty(t.db)
    await expectTruth()
  })

  it('a rolled-back transaction leaves no mark; no moments mark nothing', async () => {
    await expect(
      t.db.transaction().execute(async (trx) => {
        await rollup.markDirty(trx, { tenantId: 2, at: ['2024-06-10T12:00:00Z'] })
        throw new Error('the writer failed after marking')
      }),
    ).rejects.toThrow(/writer failed/)
    expect(await rollup.markDirty(t.db, { tenantId: 2, at: [] })).toEqual({ months: 0 })
    expect(await pending()).toEqual([])
  })

  it('bad input is a typed error and writes nothing', async () => {
    for (const options of [
      { tenantId: {} as unknown as number, at: ['2024-01-01'] },
      { tenantId: 1, at: '2024-01-01' as unknown as string[] },
      { tenantId: 1, at: [new Date(Number.NaN)] },
      { tenantId: 1, at: ['2024-01-01', 'not a moment'] },
      { tenantId: 1, at: [{} as unknown as string] },
      { tenantId: 1, at: ['2024-05'] }, // a month, not a row's moment
      { tenantId: 'abc', at: ['2024-05-01'] }, // not a bigint (the tenant type)
    ])
      await expect(rollup.markDirty(t.db, options)).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(await pending()).toEqual([])
  })

  it('on a rollup that is not tracked, a MigrationRequiredError naming track', async () => {
    const untracked = expensesRollup(ZONE, 'untracked_monthly')
    await untracked.target.create(t.db)
    const err = await untracked.rollup.markDirty(t.db, { tenantId: 1, at: ['2024-01-10T00:00:00Z'] }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MigrationRequiredError)
    expect((err as Error).message).toMatch(/"untracked_monthly_dirty" does not exist.*rollup\.track/)
  })

  withServer('two writers marking the same bucket at once both commit; the drain refreshes it once', async () => {
    const a = await connect(t.url!, { maxConnections: 1 })
    const b = await connect(t.url!, { maxConnections: 1 })
    try {
      let release!: () => void
      const both = new Promise<void>((resolve) => (release = resolve))
      let marked = 0
      const writer = (db: Database, at: string) =>
        db.transaction().execute(async (trx) => {
          if (!citus) await sql`set local session_replication_role = replica`.execute(trx)
          await untrackedInsert(4, at).execute(trx)
          await rollup.markDirty(trx, { tenantId: 4, at: [at] })
          if (++marked === 2) release()
          await both // each holds its mark uncommitted until the other has marked too
        })
      const first = writer(a, '2024-08-10T12:00:00Z')
      const second = writer(b, '2024-08-11T12:00:00Z')
      await Promise.all([first, second])
      expect(await pending()).toEqual([{ tenant_id: 4, month: '2024-08' }])
      expect(await rollup.refreshDirty(t.db)).toEqual({ buckets: 1, remaining: 0 })
      await expectTruth()
    } finally {
      await a.close()
      await b.close()
    }
  })
})
