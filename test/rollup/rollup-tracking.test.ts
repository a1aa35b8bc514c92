import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  connect,
  explain,
  hasCitusShardNodes,
  indexesUsed,
  InvalidArgumentError,
  planNodes,
  SchemaMismatchError,
  type Database,
} from '../../src/index.js'
import { seededRandom } from '../../src/bench-kit.js'
import { expensesCopyText, expensesRollup as declareExpensesRollup } from '../../bench/synthetic/expenses.js'
import { CITUS_OPT_IN, itWithServer, skipBecause } from '../support/skip.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

/**
 * `track` / `refreshDirty` / `drain` against the from-scratch truth: every write kind, from plain
 * SQL (never through the rollup), in a zone with DST and at local month edges; rolled-back writes,
 * writers and drainers at once, a drainer killed midway, untrack and track again.
 */
const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const { target, rollup } = expensesRollup(ZONE)
const TENANTS = [1, 2, 3, 4, 5, 6]
const withServer = itWithServer(testTarget())

/** On a Citus cluster (the opt-in run) `expenses` is distributed and the rollup colocated: the triggers run on its shards. */
let citus = false

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'tracking', rows: 6_000, tenants: 6, bigTenantRows: 2_000, months: 14 })
  await target.create(t.db)
  citus = await hasCitusShardNodes(t.db)
  for (const tenantId of TENANTS) await rollup.rebuild(t.db, { tenantId, since: '2000-01-01', until: '2030-12-31' })
  await rollup.track(t.db)
  await rollup.track(t.db) // idempotent
})

beforeEach(async () => {
  await drainAll(t.db)
})

describe('on Citus', () => {
  it('on Citus: the log is distributed colocated with the source, and each shard of the source has the triggers', async (ctx) => {
    if (!citus) return skipBecause(ctx, CITUS_OPT_IN)
    const { rows } = await sql<{ colocated: boolean; shards: number; shardsWithTriggers: number }>`
      select (select count(distinct colocationid) = 1 from pg_dist_partition
                where logicalrelid in ('expenses'::regclass, 'expenses_monthly'::regclass, 'expenses_monthly_dirty'::regclass)) as colocated,
        (select count(*)::int from pg_dist_shard where logicalrelid = 'expenses'::regclass) as shards,
        (select count(*)::int from run_command_on_shards('expenses',
           $$select count(*) from pg_trigger where tgrelid = '%s'::regclass and tgname like 'pgscale_expenses_monthly_track_%%'$$)
         where result::int = 3) as "shardsWithTriggers"`.execute(t.db)
    expect(rows[0]!.colocated).toBe(true)
    // INSERT, UPDATE and DELETE fire on the shards; Citus keeps a TRUNCATE trigger on the coordinator's table.
    expect(rows[0]!.shardsWithTriggers).toBe(rows[0]!.shards)
  })

  it('on Citus: a source distributed by another column, or a rollup table not colocated, is refused with a typed error', async (ctx) => {
    if (!citus) return skipBecause(ctx, CITUS_OPT_IN)
    await sql`create table other_expenses (like expenses)`.execute(t.db)
    await sql`select create_distributed_table('other_expenses', 'category')`.execute(t.db)
    const other = declareExpensesRollup({ source: 'other_expenses', target: 'other_monthly', zone: ZONE })
    await other.target.create(t.db).catch(() => {})
    const refused = await other.rollup.track(t.db).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(SchemaMismatchError)
    expect((refused as Error).message).toMatch(/distributed by category/)
    const { rows } = await sql<{ log: string | null }>`select to_regclass('other_monthly_dirty')::text as log`.execute(t.db)
    expect(rows[0]!.log).toBeNull()
  })
})

async function drainAll(db: Database): Promise<number> {
  let buckets = 0
  for (;;) {
    const done = await rollup.refreshDirty(db, { limit: 50 })
    buckets += done.buckets
    if (done.remaining === 0) return buckets
  }
}

async function pending(db: Database = t.db): Promise<Array<{ tenant_id: number; month: string }>> {
  const { rows } = await sql<{ tenant_id: number; month: string }>`
    select distinct tenant_id::int, to_char(month, 'YYYY-MM') as month from expenses_monthly_dirty order by 1, 2`.execute(db)
  return rows
}

/** Every tenant's rollup equals the from-scratch aggregate (all months). */
async function expectTruth(db: Database = t.db) {
  for (const tenantId of TENANTS)
    expect([tenantId, await rollupSnapshot(db, 'expenses_monthly', tenantId)]).toEqual([tenantId, await fromScratch(db, ZONE, tenantId)])
}

const insert = (tenant: number, paidAt: string, category: string, amount: string) =>
  sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (${tenant}, ${paidAt}::timestamptz, ${category}, ${amount}::numeric, 'paid')`

describe('MonthlyRollup.track', () => {
  it('marks the keys of plain-SQL inserts, at the local month edges (Mexico City: 06:00Z ends February 2024)', async () => {
    await insert(1, '2024-03-01T05:59:59Z', 'edge', '1.00').execute(t.db)
    await insert(1, '2024-03-01T06:00:00Z', 'edge', '2.00').execute(t.db)
    expect(await pending()).toEqual([
      { tenant_id: 1, month: '2024-02' },
      { tenant_id: 1, month: '2024-03' },
    ])
    expect(await rollup.refreshDirty(t.db)).toEqual({ buckets: 2, remaining: 0 })
    await expectTruth()
  })

  it('marks an INSERT … SELECT and a COPY once per key, not once per row', async () => {
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status)
      select 2, timestamptz '2024-05-10T12:00:00Z' + g * interval '1 minute', 'bulk', 1, 'paid' from generate_series(1, 500) g`.execute(
      t.db,
    )
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from expenses_monthly_dirty`.execute(t.db)
    expect(rows[0]!.n).toBe(1)
    await t.db.copyFrom(
      'copy expenses (tenant_id, paid_at, category, amount, status) from stdin',
      expensesCopyText([
        { tenantId: 3, paidAt: new Date('2024-07-01T12:00:00Z'), category: 'copied', amount: '5.00', status: 'paid' },
        { tenantId: 4, paidAt: new Date('2023-12-31T12:00:00Z'), category: 'copied', amount: '6.00', status: 'paid' },
      ]),
    )
    expect(await pending()).toEqual([
      { tenant_id: 2, month: '2024-05' },
      { tenant_id: 3, month: '2024-07' },
      { tenant_id: 4, month: '2023-12' },
    ])
    await drainAll(t.db)
    await expectTruth()
  })

  it('an UPDATE marks the old and the new bucket of a row that moves month and tenant (month only on Citus); a DELETE the old', async () => {
    const ids: number[] = []
    for (const [paidAt, category] of [
      ['2023-04-10T12:00:00Z', 'moves-month'],
      ['2023-06-10T12:00:00Z', 'moves-tenant'],
      ['2023-08-10T12:00:00Z', 'deleted'],
    ]) {
      const { rows } = await sql<{ id: number }>`insert into expenses (tenant_id, paid_at, category, amount, status)
        values (5, ${paidAt}::timestamptz, ${category}, 7, 'paid') returning id::int`.execute(t.db)
      ids.push(rows[0]!.id)
    }
    await drainAll(t.db)
    const [a, b, c] = ids
    // (Citus refuses an UPDATE of the distribution column, and stable functions of a column in SET.)
    await sql`update expenses set paid_at = '2023-02-24T12:00:00Z' where tenant_id = 5 and id = ${a}`.execute(t.db) // April → February
    if (!citus)
      await sql`update expenses set tenant_id = 6 where id = ${b}`.execute(t.db) // tenant 5 → 6, June
    else await sql`update expenses set amount = 8 where tenant_id = 5 and id = ${b}`.execute(t.db) // June, in place
    await sql`delete from expenses where tenant_id = 5 and id = ${c}`.execute(t.db)
    expect(await pending()).toEqual([
      { tenant_id: 5, month: '2023-02' },
      { tenant_id: 5, month: '2023-04' },
      { tenant_id: 5, month: '2023-06' },
      { tenant_id: 5, month: '2023-08' },
      ...(citus ? [] : [{ tenant_id: 6, month: '2023-06' }]),
    ])
    await drainAll(t.db)
    await expectTruth()
  })

  it('a TRUNCATE marks every bucket the rollup holds; the drain empties the rollup', async () => {
    await sql`create table expenses_keep as select * from expenses`.execute(t.db)
    try {
      await sql`truncate expenses`.execute(t.db)
      const { rows } = await sql<{ n: number }>`select count(distinct (tenant_id, month))::int as n from expenses_monthly`.execute(t.db)
      expect((await pending()).length).toBe(rows[0]!.n)
      await drainAll(t.db)
      const { rows: left } = await sql<{ n: number }>`select count(*)::int as n from expenses_monthly`.execute(t.db)
      expect(left[0]!.n).toBe(0)
    } finally {
      await sql`insert into expenses select * from expenses_keep`.execute(t.db) // marked again, as an insert
      await sql`drop table expenses_keep`.execute(t.db)
    }
    await drainAll(t.db)
    await expectTruth()
  })

  it("marks for a writer whose search_path differs from the tracker's", async () => {
    await t.db.transaction().execute(async (trx) => {
      await sql`create schema if not exists elsewhere`.execute(trx)
      await sql`set local search_path = elsewhere`.execute(trx) // the log's unqualified name would not resolve here
      await sql`insert into public.expenses (tenant_id, paid_at, category, amount, status) values (2, '2022-08-08T12:00:00Z', 'path', 1, 'paid')`.execute(
        trx,
      )
    })
    expect(await pending()).toEqual([{ tenant_id: 2, month: '2022-08' }])
    await drainAll(t.db)
    await expectTruth()
  })

  withServer('two track calls at once (two connections) both succeed and leave one set of triggers', async () => {
    const { target: other, rollup: otherRollup } = expensesRollup(ZONE, 'expenses_twice_monthly')
    await other.create(t.db)
    const second = await connect(t.url!, { maxConnections: 1 })
    try {
      await Promise.all([otherRollup.track(t.db), otherRollup.track(second)])
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_trigger where tgrelid = 'expenses'::regclass and tgname like 'pgscale_expenses_twice_monthly_track_%'`.execute(
        t.db,
      )
      expect(rows[0]!.n).toBe(4)
      await insert(2, '2020-02-02T12:00:00Z', 'twice', '1.00').execute(t.db)
      const { rows: marked } = await sql<{ n: number }>`select count(*)::int as n from expenses_twice_monthly_dirty`.execute(t.db)
      expect(marked[0]!.n).toBe(1)
    } finally {
      await otherRollup.untrack(t.db)
      await second.close()
    }
  })

  it('a track that fails between its statements creates nothing, and the next one works', async () => {
    const { target: other, rollup: otherRollup } = expensesRollup(ZONE, 'expenses_broken_monthly')
    await other.create(t.db)
    // A view where the log would be: the table is "there", its index cannot be built.
    await sql`create view expenses_broken_monthly_dirty as select 1 as tenant_id`.execute(t.db)
    await expect(otherRollup.track(t.db)).rejects.toThrow()
    const triggers = async () =>
      (
        await sql<{ n: number }>`
        select count(*)::int as n from pg_trigger where tgrelid = 'expenses'::regclass and tgname like 'pgscale_expenses_broken_monthly_track_%'`.execute(
          t.db,
        )
      ).rows[0]!.n
    expect(await triggers()).toBe(0)
    const { rows } = await sql<{ fn: string | null }>`select to_regproc('expenses_broken_monthly_track')::text as fn`.execute(t.db)
    expect(rows[0]!.fn).toBeNull()
    await sql`drop view expenses_broken_monthly_dirty`.execute(t.db)
    await otherRollup.track(t.db)
    expect(await triggers()).toBe(4)
    await otherRollup.untrack(t.db)
  })

  it('a rolled-back write leaves nothing in the log', async () => {
    await t.db
      .transaction()
      .execute(async (trx) => {
        await insert(1, '2022-02-02T12:00:00Z', 'undone', '9.00').execute(trx)
        expect((await sql<{ n: number }>`select count(*)::int as n from expenses_monthly_dirty`.execute(trx)).rows[0]!.n).toBe(1)
        throw new Error('undo')
      })
      .catch(() => {})
    expect(await pending()).toEqual([])
  })

  withServer('writers of the same bucket never wait on each other: two open transactions both write it', async () => {
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      await t.db.transaction().execute(async (trx) => {
        await insert(2, '2024-09-09T12:00:00Z', 'w1', '1.00').execute(trx)
        // The first writer has not committed; the second must not queue behind it.
        await other.transaction().execute(async (trx2) => {
          await sql`set local lock_timeout = '2s'`.execute(trx2)
          await insert(2, '2024-09-10T12:00:00Z', 'w2', '1.00').execute(trx2)
        })
      })
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from expenses_monthly_dirty where tenant_id = 2`.execute(t.db)
      expect(rows[0]!.n).toBe(2) // one row each: the log has no key to collide on
      await drainAll(t.db)
      await expectTruth()
    } finally {
      await other.close()
    }
  })

  it('untrack stops marking and keeps what is pending; track again marks again', async () => {
    await insert(3, '2021-05-05T12:00:00Z', 'before-untrack', '1.00').execute(t.db)
    await rollup.untrack(t.db)
    await rollup.untrack(t.db) // idempotent
    await insert(3, '2021-06-05T12:00:00Z', 'untracked', '1.00').execute(t.db)
    expect(await pending()).toEqual([{ tenant_id: 3, month: '2021-05' }])
    await rollup.track(t.db)
    await insert(3, '2021-07-05T12:00:00Z', 'tracked', '1.00').execute(t.db)
    expect(await pending()).toEqual([
      { tenant_id: 3, month: '2021-05' },
      { tenant_id: 3, month: '2021-07' },
    ])
    await drainAll(t.db)
    // June was written while untracked: stale until rebuilt, as documented.
    expect(await rollupSnapshot(t.db, 'expenses_monthly', 3)).not.toBe(await fromScratch(t.db, ZONE, 3))
    await rollup.rebuild(t.db, { tenantId: 3, since: '2021-06-01', until: '2021-06-30' })
    await expectTruth()
  })

  it('refreshDirty of one tenant leaves the others pending; bad options are typed errors', async () => {
    await insert(4, '2024-01-10T12:00:00Z', 'x', '1.00').execute(t.db)
    await insert(5, '2024-01-10T12:00:00Z', 'x', '1.00').execute(t.db)
    expect(await rollup.refreshDirty(t.db, { tenantId: 4 })).toEqual({ buckets: 1, remaining: 0 })
    expect(await pending()).toEqual([{ tenant_id: 5, month: '2024-01' }])
    await expect(rollup.refreshDirty(t.db, { limit: 0 })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(rollup.refreshDirty(t.db, { tenantId: '' })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(rollup.drain(t.db, { intervalMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(await pending()).toEqual([{ tenant_id: 5, month: '2024-01' }])
  })

  it('a backlog of many writes to few buckets is refreshed once per bucket (the claimed keys coalesced); remaining is a bounded count', async () => {
    await drainAll(t.db)
    for (let i = 0; i < 300; i++) await insert(1 + (i % 2), '2024-02-10T12:00:00Z', 'x', '1.00').execute(t.db)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from expenses_monthly_dirty`.execute(t.db)
    expect(rows[0]!.n).toBe(300)
    const stats = await rollup.dirtyStats(t.db)
    expect(stats).toMatchObject({ rows: 300, capped: false })
    expect(stats.oldestMarkedAt).toBeInstanceOf(Date)
    // Ten rows claimed; the other 290 of the same two keys go with them: one refresh per bucket.
    expect(await rollup.refreshDirty(t.db, { limit: 10 })).toEqual({ buckets: 2, remaining: 0 })
    expect(await rollupSnapshot(t.db, 'expenses_monthly', 1)).toBe(await fromScratch(t.db, ZONE, 1))
    expect(await rollupSnapshot(t.db, 'expenses_monthly', 2)).toBe(await fromScratch(t.db, ZONE, 2))
    // Beyond 10,000 pending rows, remaining stops counting and says so.
    await sql`insert into expenses_monthly_dirty (tenant_id, month) select 3, '2024-03-01' from generate_series(1, 10050)`.execute(t.db)
    expect(await rollup.refreshDirty(t.db, { tenantId: 4 })).toEqual({ buckets: 0, remaining: 0 })
    const capped = await rollup.refreshDirty(t.db, { limit: 1, tenantId: 3 })
    expect(capped).toEqual({ buckets: 1, remaining: 0 })
    expect((await rollup.dirtyStats(t.db)).rows).toBe(0)
    await sql`insert into expenses_monthly_dirty (tenant_id, month) select 3 + g % 2, '2024-03-01' from generate_series(1, 20100) g`.execute(
      t.db,
    )
    const some = await rollup.refreshDirty(t.db, { limit: 1 }) // one key coalesced; the other tenant's 10,050 rows wait
    expect(some).toEqual({ buckets: 1, remaining: 10_000, moreRemaining: true })
    expect(await rollup.dirtyStats(t.db)).toMatchObject({ rows: 10_050, capped: false })
    await drainAll(t.db)
  })
})

describe('read({ fresh: true })', () => {
  const asTruth = (rows: Array<Record<string, unknown>>) =>
    JSON.stringify(rows.map(({ month, category, total, count }) => ({ month, category, total, count })))

  it('equals the from-scratch truth right after a committed write, before any drain; the plain read is stale until the drain', async () => {
    const range = { tenantId: 4, from: '2024-01', to: '2024-12' }
    await insert(4, '2024-04-04T12:00:00Z', 'fresh', '12.34').execute(t.db)
    await sql`delete from expenses where id = (select min(id) from expenses where tenant_id = 4 and paid_at >= '2024-06-01' and paid_at < '2024-07-01')`.execute(
      t.db,
    )
    const truth = await fromScratch(t.db, ZONE, 4, '2024-01-01', '2024-12-01')
    expect(asTruth(await rollup.read(t.db, { ...range, fresh: true }))).toBe(truth)
    expect(asTruth(await rollup.read(t.db, range))).not.toBe(truth) // the rollup table itself is stale
    await drainAll(t.db)
    expect(asTruth(await rollup.read(t.db, range))).toBe(truth)
    expect(asTruth(await rollup.read(t.db, { ...range, fresh: true }))).toBe(truth)
  })

  it('combines over groups like a plain read (groupBy: [])', async () => {
    await insert(4, '2024-04-05T12:00:00Z', 'fresh-2', '1.00').execute(t.db)
    const fresh = await rollup.read(t.db, { tenantId: 4, from: '2024-04', to: '2024-04', groupBy: [], fresh: true })
    await drainAll(t.db)
    expect(fresh).toEqual(await rollup.read(t.db, { tenantId: 4, from: '2024-04', to: '2024-04', groupBy: [] }))
  })

  it('aggregates live only the dirty months, through the source index; the clean ones come from the rollup table', async () => {
    await insert(4, '2024-04-06T12:00:00Z', 'plan', '1.00').execute(t.db)
    const plan = await explain(t.db, rollup.readQuery(t.db, { tenantId: 4, from: '2024-01', to: '2024-12', fresh: true }).compile(t.db))
    const used = indexesUsed(plan)
    expect(used).toContain('expenses_tenant_paid_at')
    expect(used.some((i) => i.startsWith('expenses_monthly'))).toBe(true)
    // The source is never scanned whole: only the dirty months' ranges.
    expect(
      planNodes(plan)
        .filter((n) => n['Node Type'] === 'Seq Scan')
        .map((n) => n['Relation Name']),
    ).not.toContain('expenses')
    await expect(rollup.read(t.db, { tenantId: 4, from: '2024-01', to: '2024-12', fresh: 'yes' as never })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
  })
})

describe('a partitioned source', () => {
  it('is tracked on its parent: rows written to any partition, and a row moved between partitions, are marked', async () => {
    await sql`create table expenses_parts (like expenses including defaults) partition by hash (tenant_id)`.execute(t.db)
    for (let i = 0; i < 4; i++)
      await sql
        .raw(`create table expenses_parts_${i} partition of expenses_parts for values with (modulus 4, remainder ${i})`)
        .execute(t.db)
    const { target: partsTarget, rollup: partsRollup } = declareExpensesRollup({
      source: 'expenses_parts',
      target: 'expenses_parts_monthly',
      zone: ZONE,
    })
    await partsTarget.create(t.db)
    await partsRollup.track(t.db)
    await sql`insert into expenses_parts (tenant_id, paid_at, category, amount, status)
      select 1 + g % 6, timestamptz '2024-01-15T12:00:00Z' + (g % 5) * interval '31 days', 'p', 2, 'paid' from generate_series(1, 300) g`.execute(
      t.db,
    )
    const keys = async () =>
      (
        await sql<{
          k: string
        }>`select distinct tenant_id || ':' || to_char(month, 'YYYY-MM') as k from expenses_parts_monthly_dirty order by 1`.execute(t.db)
      ).rows.map((r) => r.k)
    expect(await keys()).toHaveLength(30) // 6 tenants × 5 months, from four partitions
    await partsRollup.refreshDirty(t.db)
    await sql`update expenses_parts set tenant_id = 2 where id = (select min(id) from expenses_parts where tenant_id = 1)`.execute(t.db)
    expect(await keys()).toEqual(['1:2024-02', '2:2024-02']) // tenant 1's first row: g = 6, February
    await partsRollup.refreshDirty(t.db)
    const { rows } = await sql<{ diff: number }>`
      select count(*)::int as diff from (
        (select tenant_id::int, month, category, total, count from expenses_parts_monthly
         except
         select tenant_id, date_trunc('month', paid_at at time zone ${ZONE})::date, category, sum(amount)::numeric(14,2), count(*)::int
         from expenses_parts group by 1, 2, 3)
        union all
        (select tenant_id, date_trunc('month', paid_at at time zone ${ZONE})::date, category, sum(amount)::numeric(14,2), count(*)::int
         from expenses_parts group by 1, 2, 3
         except
         select tenant_id::int, month, category, total, count from expenses_parts_monthly)) d`.execute(t.db)
    expect(rows[0]!.diff).toBe(0)
    await partsRollup.untrack(t.db)
  })
})

describe('draining under load', () => {
  withServer('writers and two drainers at once, each on its own connections: the rollup ends equal to the truth', async () => {
    const writers = await connect(t.url!, { maxConnections: 3 })
    const drainers = [await connect(t.url!, { maxConnections: 1 }), await connect(t.url!, { maxConnections: 1 })]
    const stop = new AbortController()
    try {
      const draining = drainers.map((db) => rollup.drain(db, { limit: 20, intervalMs: 20, signal: stop.signal }))
      const random = seededRandom('tracking-load')
      const until = performance.now() + 2_000
      const writer = async () => {
        while (performance.now() < until) {
          const tenant = TENANTS[Math.floor(random.next() * TENANTS.length)]!
          const day = new Date(
            Date.UTC(2024, Math.floor(random.next() * 12), 1 + Math.floor(random.next() * 27), Math.floor(random.next() * 24)),
          )
          const kind = random.next()
          if (kind < 0.6) await insert(tenant, day.toISOString(), 'load', (random.next() * 100).toFixed(2)).execute(writers)
          else if (kind < 0.8)
            await sql`update expenses set paid_at = ${new Date(day.getTime() + 20 * 86_400_000).toISOString()}::timestamptz
              where tenant_id = ${tenant} and id = (select id from expenses where tenant_id = ${tenant} order by id desc limit 1)`.execute(
              writers,
            )
          else
            await sql`delete from expenses where tenant_id = ${tenant} and id = (select id from expenses where tenant_id = ${tenant} order by id desc limit 1)`.execute(
              writers,
            )
        }
      }
      await Promise.all([writer(), writer(), writer()])
      stop.abort()
      const drained = await Promise.all(draining)
      expect(drained.every((d) => d.buckets > 0)).toBe(true) // both drainers took work
      await drainAll(t.db)
      await expectTruth()
    } finally {
      stop.abort()
      await writers.close()
      for (const db of drainers) await db.close()
    }
  })

  withServer('a drainer killed mid-drain leaves its keys to the next one', async () => {
    for (const tenantId of [1, 2, 3]) await insert(tenantId, '2024-11-11T12:00:00Z', 'killed', '3.00').execute(t.db)
    const victim = await connect(t.url!, { maxConnections: 1 })
    try {
      const killed = victim.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
        await rollup.refreshDirty(trx, { limit: 1000 })
        // Claimed and refreshed, not committed: the connection dies here.
        await sql`select pg_terminate_backend(${rows[0]!.pid}::int)`.execute(t.db)
        await sql`select 1`.execute(trx)
      })
      await expect(killed).rejects.toThrow()
      // The pool replaced the dead connection.
      expect((await sql<{ one: number }>`select 1 as one`.execute(victim)).rows[0]!.one).toBe(1)
      expect(await pending()).toEqual([
        { tenant_id: 1, month: '2024-11' },
        { tenant_id: 2, month: '2024-11' },
        { tenant_id: 3, month: '2024-11' },
      ])
      expect(await rollup.refreshDirty(t.db)).toEqual({ buckets: 3, remaining: 0 })
      await expectTruth()
    } finally {
      await victim.close().catch(() => {})
    }
  })

  withServer(
    'a drainer killed between its own statements (claimed, waiting to rebuild) leaves its keys, and its pool serves the next drain',
    async () => {
      await insert(1, '2024-12-05T12:00:00Z', 'between', '1.00').execute(t.db)
      await drainAll(t.db) // the bucket exists in the rollup table
      await insert(1, '2024-12-06T12:00:00Z', 'between', '2.00').execute(t.db)
      const blocker = await connect(t.url!, { maxConnections: 1 })
      const drainer = await connect(t.url!, { maxConnections: 1 })
      try {
        let release!: () => void
        const released = new Promise<void>((resolve) => (release = resolve))
        // Another transaction holds the bucket's rows: the drain claims its key, takes the bucket
        // lock, and waits in the rebuild's delete — between its statements.
        const holding = blocker.transaction().execute(async (trx) => {
          await sql`select 1 from expenses_monthly where tenant_id = 1 and month = '2024-12-01' for update`.execute(trx)
          await released
        })
        const { rows: own } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(drainer)
        // Its failure is caught at once: the kill below can reject it before that statement returns
        // (through PgBouncer the FATAL often arrives first), and a rejection without a handler then
        // fails the run even though the test expects it.
        const draining = rollup.refreshDirty(drainer).then(
          () => undefined,
          (err: unknown) => err,
        )
        // The drainer's one connection, waiting in the rebuild: on a lock here, or (Citus) on the
        // worker that holds the bucket's shard.
        let pid: number | undefined
        for (let i = 0; i < 100 && pid === undefined; i++) {
          const { rows } = await sql<{ pid: number }>`
          select pid from pg_stat_activity where pid = ${own[0]!.pid} and state = 'active'
            and (wait_event_type = 'Lock' or (${citus} and query like '%with months as%'))`.execute(t.db)
          pid = rows[0]?.pid
          if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
        }
        expect(pid).toBeDefined()
        // ::int: on Citus an untyped parameter picks its global-pid overload, which never ends here.
        await sql`select pg_terminate_backend(${pid!}::int)`.execute(t.db)
        expect(await draining).toBeInstanceOf(Error)
        release()
        await holding
        expect(await pending()).toEqual([{ tenant_id: 1, month: '2024-12' }])
        expect(await rollup.refreshDirty(drainer)).toEqual({ buckets: 1, remaining: 0 })
        await expectTruth()
      } finally {
        await blocker.close()
        await drainer.close().catch(() => {})
      }
    },
  )

  it('a drain that fails rolls back: the keys stay pending', async () => {
    await insert(6, '2024-10-10T12:00:00Z', 'failed', '1.00').execute(t.db)
    await expect(
      t.db.transaction().execute(async (trx) => {
        await rollup.refreshDirty(trx)
        throw new Error('the app failed after the drain')
      }),
    ).rejects.toThrow(/app failed/)
    expect(await pending()).toEqual([{ tenant_id: 6, month: '2024-10' }])
  })
})
