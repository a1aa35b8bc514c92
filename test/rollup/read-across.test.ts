import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { approxCountDistinct, explain, hasCitusShardNodes, InvalidArgumentError, MonthlyRollup, rollupTable } from '../../src/index.js'
import { indexesUsed } from '../../src/bench-kit.js'
import { seedExpenses } from './rollup-fixture.js'
import { skipBecause } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * Admin views across tenants (`readAcross`) against a from-scratch aggregate of the source: the
 * fleet by month and by group, per tenant, a subset of tenants, the top n per month and over the
 * range, fresh reads with dirty buckets of several tenants, the refusals, the month index's plan,
 * and (where the server has hll) a fleet-wide distinct count that unites sketches.
 */
const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const target = rollupTable('across_monthly', {
  groupBy: { category: 'varchar(64)' },
  measures: { total: 'numeric(14,2)', count: 'integer', smallest: 'numeric(14,2)', largest: 'numeric(14,2)' },
  tenantType: 'bigint',
})
const measures = { total: sql`sum(amount)`, count: sql`count(*)`, smallest: sql`min(amount)`, largest: sql`max(amount)` }
const rollup = new MonthlyRollup({
  source: 'expenses',
  target,
  at: 'paid_at',
  tenant: 'tenant_id',
  groupBy: ['category'],
  measures,
  where: sql`status <> 'cancelled'`,
  zone: ZONE,
})
const TENANTS = 8

/** The same aggregates computed from the source: per tenant (or not), month (or the range) and category (or not). */
async function truth(o: {
  perTenant?: boolean
  byCategory?: boolean
  combineMonths?: boolean
  from: string
  to: string
  tenants?: number[]
}) {
  // The month inline, not from a subquery: Citus's planner fails on that shape ("PlaceHolderVar
  // found where not expected"). The zone as a literal, so that select and group by are one expression.
  const m = sql`date_trunc('month', paid_at at time zone ${sql.lit(ZONE)})::date`
  const month = o.combineMonths ? sql`${`${o.from.slice(0, 7)}..${o.to.slice(0, 7)}`}::text` : sql`to_char(${m}, 'YYYY-MM')`
  const keys = [...(o.combineMonths ? [] : [m]), ...(o.perTenant ? [sql`tenant_id`] : []), ...(o.byCategory ? [sql`category`] : [])]
  const { rows } = await sql<Record<string, unknown>>`
    select ${month} as month${o.perTenant ? sql`, tenant_id::text as tenant_id` : sql``}${o.byCategory ? sql`, category` : sql``},
      sum(amount)::numeric(14,2)::text as total, count(*)::int as count, min(amount)::numeric(14,2)::text as smallest, max(amount)::numeric(14,2)::text as largest
    from expenses
    where status <> 'cancelled' and ${m} >= ${o.from}::date and ${m} <= ${o.to}::date ${o.tenants ? sql`and tenant_id = any(${o.tenants}::bigint[])` : sql``}
    ${keys.length ? sql`group by ${sql.join(keys)}` : sql``}`.execute(t.db)
  return rows
}

const norm = (rows: ReadonlyArray<Record<string, unknown>>) =>
  rows
    .map((r) =>
      JSON.stringify(
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [k, v === null ? null : k === 'count' || k === 'rank' ? Number(v) : String(v)]),
        ),
      ),
    )
    .sort()

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'across', rows: 8_000, tenants: TENANTS, bigTenantRows: 3_000, months: 12 })
  await target.create(t.db)
  if (await hasCitusShardNodes(t.db)) await rollup.distribute(t.db) // colocated with expenses (the opt-in Citus run)
  for (let tenantId = 1; tenantId <= TENANTS; tenantId++) await rollup.rebuild(t.db, { tenantId, since: '2020-01-01', until: '2030-12-31' })
  await sql`analyze across_monthly`.execute(t.db)
})

describe('readAcross', () => {
  it('the fleet by month, by month and category, per tenant, and a subset equal a from-scratch aggregate', async () => {
    const range = { from: '2025-01', to: '2025-12' }
    expect(norm(await rollup.readAcross(t.db, { ...range, groupBy: [] }))).toEqual(
      norm(await truth({ from: '2025-01-01', to: '2025-12-01' })),
    )
    expect(norm(await rollup.readAcross(t.db, range))).toEqual(
      norm(await truth({ from: '2025-01-01', to: '2025-12-01', byCategory: true })),
    )
    expect(norm(await rollup.readAcross(t.db, { ...range, groupBy: [], perTenant: true }))).toEqual(
      norm(await truth({ from: '2025-01-01', to: '2025-12-01', perTenant: true })),
    )
    expect(norm(await rollup.readAcross(t.db, { ...range, groupBy: [], tenants: [2, 5] }))).toEqual(
      norm(await truth({ from: '2025-01-01', to: '2025-12-01', tenants: [2, 5] })),
    )
    expect(norm(await rollup.readAcross(t.db, { ...range, groupBy: [], combineMonths: true }))).toEqual(
      norm(await truth({ from: '2025-01-01', to: '2025-12-01', combineMonths: true })),
    )
  })

  it('the top n tenants by a measure, per month and over the range, ranked with ties broken by tenant', async () => {
    const perTenant = await truth({ from: '2025-07-01', to: '2025-09-01', perTenant: true, combineMonths: true })
    const expected = [...perTenant]
      .sort((a, b) => Number(b.total) - Number(a.total) || Number(a.tenant_id) - Number(b.tenant_id))
      .slice(0, 3)
      .map((r, i) => ({ ...r, rank: i + 1 }))
    const top = await rollup.readAcross(t.db, {
      from: '2025-07',
      to: '2025-09',
      groupBy: [],
      combineMonths: true,
      top: { by: 'total', n: 3 },
    })
    expect(norm(top)).toEqual(norm(expected))
    expect(top.map((r) => r.rank)).toEqual([1, 2, 3])
    const monthly = await rollup.readAcross(t.db, { from: '2025-07', to: '2025-09', groupBy: [], top: { by: 'count', n: 2, order: 'asc' } })
    expect(monthly).toHaveLength(6)
    expect(new Set(monthly.map((r) => r.month))).toEqual(new Set(['2025-07', '2025-08', '2025-09']))
  })

  it('fresh: dirty buckets of several tenants aggregated live (on Citus refused, typed); without it, the stored rows', async () => {
    await rollup.track(t.db)
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values
      (3, '2025-11-10T18:00:00Z', 'travel', 100, 'paid'), (6, '2025-12-03T18:00:00Z', 'meals', 7.5, 'paid')`.execute(t.db)
    const now = norm(await truth({ from: '2025-11-01', to: '2025-12-01' }))
    const stale = await rollup.readAcross(t.db, { from: '2025-11', to: '2025-12', groupBy: [] })
    expect(norm(stale)).not.toEqual(now)
    if (await hasCitusShardNodes(t.db)) {
      // Citus cannot plan the live aggregate across tenants: refused, typed; the drain, then the read.
      await expect(rollup.readAcross(t.db, { from: '2025-11', to: '2025-12', groupBy: [], fresh: true })).rejects.toThrow(
        InvalidArgumentError,
      )
    } else {
      const fresh = await rollup.readAcross(t.db, { from: '2025-11', to: '2025-12', groupBy: [], fresh: true })
      expect(norm(fresh)).toEqual(now)
    }
    await rollup.refreshDirty(t.db)
    expect(norm(await rollup.readAcross(t.db, { from: '2025-11', to: '2025-12', groupBy: [] }))).toEqual(now)
  })

  it('refuses what it cannot combine or read, before sending anything', async () => {
    const distinct = new MonthlyRollup({
      source: 'expenses',
      target: rollupTable('across_distinct', { groupBy: {}, measures: { payers: 'integer' }, tenantType: 'bigint' }),
      at: 'paid_at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { payers: sql`count(distinct category)` },
      zone: ZONE,
    })
    for (const attempt of [
      () => distinct.readAcross(t.db, { from: '2025-01', to: '2025-02' }),
      () => rollup.readAcross(t.db, { from: '2025-03', to: '2025-01' }),
      // @ts-expect-error not a group column: refused at compile time, and at run time (under test)
      () => rollup.readAcross(t.db, { from: '2025-01', to: '2025-02', groupBy: ['nope'] }),
      // @ts-expect-error not a measure: refused at compile time, and at run time (under test)
      () => rollup.readAcross(t.db, { from: '2025-01', to: '2025-02', top: { by: 'nope', n: 3 } }),
      () => rollup.readAcross(t.db, { from: '2025-01', to: '2025-02', top: { by: 'total', n: 0 } }),
      () => rollup.readAcross(t.db, { from: '2025-01', to: '2025-02', tenants: [] }),
    ])
      await expect(attempt()).rejects.toBeInstanceOf(InvalidArgumentError)
  })

  it('a narrow range across every tenant reads the month index', async (ctx) => {
    if (await hasCitusShardNodes(t.db))
      return skipBecause(ctx, 'on Citus the plan is the distributed one (each shard plans its own); checked on a single node')
    const plan = await explain(t.db, rollup.readAcrossQuery(t.db, { from: '2025-12', to: '2025-12', groupBy: [] }))
    expect(indexesUsed(plan)).toContain('across_monthly_month')
  })

  it('a fleet-wide distinct count unites the sketches (never adds them): equal to one sketch of every row', async (ctx) => {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_available_extensions where name = 'hll'`.execute(t.db)
    if (rows[0]!.n === 0) return skipBecause(ctx, 'the server has no hll extension (PGlite ships none; npm run db:install adds it)')
    const users = rollupTable('across_users', { groupBy: { category: 'varchar(64)' }, measures: { payers: 'hll' }, tenantType: 'bigint' })
    const sketches = new MonthlyRollup({
      source: 'expenses',
      target: users,
      at: 'paid_at',
      tenant: 'tenant_id',
      groupBy: ['category'],
      measures: { payers: approxCountDistinct(sql`amount`) },
      zone: ZONE,
    })
    await users.create(t.db)
    for (let tenantId = 1; tenantId <= TENANTS; tenantId++)
      await sketches.rebuild(t.db, { tenantId, since: '2025-01-01', until: '2025-12-31' })
    const [fleet] = await sketches.readAcross(t.db, { from: '2025-01', to: '2025-12', groupBy: [], combineMonths: true })
    const { rows: exact } = await sql<{ estimate: string; distinct: number }>`
      select round(hll_cardinality(hll_add_agg(hll_hash_any(amount))))::text as estimate, count(distinct amount)::int as distinct
      from expenses where paid_at >= '2025-01-01T06:00:00Z' and paid_at < '2026-01-01T06:00:00Z'`.execute(t.db)
    expect(String(fleet!.payers)).toBe(exact[0]!.estimate)
    expect(Math.abs(Number(fleet!.payers) - exact[0]!.distinct) / exact[0]!.distinct).toBeLessThan(0.05)
  })
})
