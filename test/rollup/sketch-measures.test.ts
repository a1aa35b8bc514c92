import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  approxCountDistinct,
  approxPercentiles,
  connect,
  ExtensionMissingError,
  InvalidArgumentError,
  MonthlyRollup,
  rollupTable,
} from '../../src/index.js'
import { ensureSketchExtensions, fleetTable } from '../../src/bench-kit.js'
import { itWithServer, skipBecause } from '../support/skip.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'

const NO_SKETCHES = 'the server has no hll and tdigest extensions (PGlite ships neither; npm run db:install adds them to a native server)'

/**
 * Distinct counts and percentiles that combine across groups and months (hll, tdigest), checked
 * against exact `count(distinct …)` and `percentile_cont` of the same rows. Where the server has no
 * hll/tdigest (PGlite; a server without Debian's packages) the table's creation is a typed error.
 */
const t = useTestDatabase()
const ZONE = 'Europe/Madrid'
const target = rollupTable('visits_monthly', {
  groupBy: { page: 'text' },
  measures: { visits: 'bigint', users: 'hll', latency: 'tdigest' },
  tenantType: 'integer',
})
const rollup = new MonthlyRollup({
  source: 'visits',
  target,
  at: 'at',
  tenant: 'tenant_id',
  groupBy: ['page'],
  measures: { visits: sql`count(*)`, users: approxCountDistinct(sql`user_id`), latency: approxPercentiles(sql`latency_ms`) },
  zone: ZONE,
})
let available = false

beforeAll(async () => {
  const { rows } = await sql<{
    n: number
  }>`select count(*)::int as n from pg_available_extensions where name in ('hll', 'tdigest')`.execute(t.db)
  available = rows[0]!.n === 2
  await sql`create table visits (id bigint generated always as identity, tenant_id integer not null, at timestamptz not null, page text not null, user_id integer not null, latency_ms double precision not null)`.execute(
    t.db,
  )
  await sql`create index on visits (tenant_id, at)`.execute(t.db)
  // 60,000 visits of 3 tenants over 2024, users 1-4,000 coming back across pages and months;
  // latencies skewed (a long tail), from a fixed formula.
  await sql`insert into visits (tenant_id, at, page, user_id, latency_ms)
    select 1 + g % 3, timestamptz '2024-01-01T00:00:00Z' + (g * 523 % 525600) * interval '1 minute', 'p' || (g % 7),
      1 + (g * 7919) % 4000, 5 + 200 * power(((g * 104729) % 1000) / 1000.0, 4)
    from generate_series(1::bigint, 60000) g`.execute(t.db)
})

const relativeError = (estimate: number, exact: number) => Math.abs(estimate - exact) / exact

describe('approximate measures', () => {
  itWithServer(testTarget())('two processes creating the extensions at once both succeed (the loser finds them created)', async (ctx) => {
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      for (let round = 0; round < 8; round++) {
        await sql`drop extension if exists hll`.execute(t.db)
        await sql`drop extension if exists tdigest`.execute(t.db)
        await Promise.all([ensureSketchExtensions(t.db, ['hll', 'tdigest']), ensureSketchExtensions(other, ['hll', 'tdigest'])])
      }
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname in ('hll', 'tdigest')`.execute(
        other,
      )
      expect(rows[0]!.n).toBe(2)
    } finally {
      await other.close()
    }
  })

  it('without the extensions on the server, creating the table is a typed error naming the package', async () => {
    if (available) {
      await target.create(t.db)
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname in ('hll', 'tdigest')`.execute(
        t.db,
      )
      expect(rows[0]!.n).toBe(2)
      return
    }
    const failed = await target.create(t.db).catch((err: unknown) => err)
    expect(failed).toBeInstanceOf(ExtensionMissingError)
    expect((failed as Error).message).toMatch(/postgresql-\d+-(hll|tdigest)/)
  })

  it('distinct users per month and page within 3 standard errors (2.3% each) of count(distinct), and unions when folded', async (ctx) => {
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    for (const tenantId of [1, 2, 3]) await rollup.rebuild(t.db, { tenantId, since: '2024-01-01', until: '2024-12-31' })
    const rows = await rollup.read(t.db, { tenantId: 2, from: '2024-01', to: '2024-12' })
    const { rows: exact } = await sql<{ month: string; page: string; users: number; visits: string }>`
      select to_char(date_trunc('month', at at time zone ${ZONE}), 'YYYY-MM') as month, page, count(distinct user_id)::int as users, count(*)::text as visits
      from visits where tenant_id = 2 group by 1, 2 order by 1, 2`.execute(t.db)
    expect(rows.map((r) => `${r.month}/${String(r.page)}`)).toEqual(exact.map((e) => `${e.month}/${e.page}`))
    rows.forEach((r, i) => {
      expect(String(r.visits)).toBe(exact[i]!.visits)
      expect(relativeError(Number(r.users), exact[i]!.users)).toBeLessThan(0.07)
    })
    // Folding the pages unites the sketches: a user of two pages counts once (a sum would not).
    const perMonth = await rollup.read(t.db, { tenantId: 2, from: '2024-01', to: '2024-12', groupBy: [] })
    const { rows: exactMonth } = await sql<{ users: number }>`
      select count(distinct user_id)::int as users from visits where tenant_id = 2 group by date_trunc('month', at at time zone ${ZONE}) order by 1`.execute(
      t.db,
    )
    expect(perMonth).toHaveLength(12)
    const sortedEstimates = perMonth.map((r) => Number(r.users)).sort((a, b) => a - b)
    const sortedExact = exactMonth.map((e) => e.users).sort((a, b) => a - b)
    sortedEstimates.forEach((u, i) => expect(relativeError(u, sortedExact[i]!)).toBeLessThan(0.07))
    const summed = rows.filter((r) => r.month === '2024-03').reduce((n, r) => n + Number(r.users), 0)
    expect(Number(perMonth.find((r) => r.month === '2024-03')!.users)).toBeLessThan(summed * 0.8)
    // Across months: one row for the year, a union again.
    const year = await rollup.read(t.db, { tenantId: 2, from: '2024-01', to: '2024-12', groupBy: [], combineMonths: true })
    const { rows: exactYear } = await sql<{ users: number; visits: string }>`
      select count(distinct user_id)::int as users, count(*)::text as visits from visits where tenant_id = 2`.execute(t.db)
    expect(year).toHaveLength(1)
    expect(year[0]!.month).toBe('2024-01..2024-12')
    expect(String(year[0]!.visits)).toBe(exactYear[0]!.visits)
    expect(relativeError(Number(year[0]!.users), exactYear[0]!.users)).toBeLessThan(0.07)
    expect(Number(year[0]!.users)).toBeLessThan(perMonth.reduce((n, r) => n + Number(r.users), 0) * 0.5)
  })

  it('percentiles per month, and merged over pages and months, near percentile_cont of the rows', async (ctx) => {
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    const wanted = { percentiles: { latency: [0.5, 0.95] } }
    const byMonth = await rollup.read(t.db, { tenantId: 1, from: '2024-06', to: '2024-06', groupBy: [], ...wanted })
    const { rows: exact } = await sql<{ p: number[] }>`
      select percentile_cont(array[0.5, 0.95]) within group (order by latency_ms) as p from visits
      where tenant_id = 1 and at >= timestamptz '2024-06-01 00:00 Europe/Madrid' and at < timestamptz '2024-07-01 00:00 Europe/Madrid'`.execute(
      t.db,
    )
    const [p50, p95] = byMonth[0]!.latency as number[]
    expect(Math.abs(p50! - exact[0]!.p[0]!)).toBeLessThan(0.02 * 205) // within 2% of the value range
    expect(Math.abs(p95! - exact[0]!.p[1]!)).toBeLessThan(0.02 * 205)
    const perPage = await rollup.read(t.db, { tenantId: 1, from: '2024-06', to: '2024-06', ...wanted })
    expect(perPage).toHaveLength(7)
    for (const r of perPage) expect((r.latency as number[]).length).toBe(2)
    const year = await rollup.read(t.db, { tenantId: 1, from: '2024-01', to: '2024-12', groupBy: [], combineMonths: true, ...wanted })
    const { rows: exactYear } = await sql<{ p: number[] }>`
      select percentile_cont(array[0.5, 0.95]) within group (order by latency_ms) as p from visits where tenant_id = 1`.execute(t.db)
    const [y50, y95] = year[0]!.latency as number[]
    expect(Math.abs(y50! - exactYear[0]!.p[0]!)).toBeLessThan(0.02 * 205)
    expect(Math.abs(y95! - exactYear[0]!.p[1]!)).toBeLessThan(0.02 * 205)
    // Without percentiles asked for, a tdigest measure is left out of the rows.
    expect(Object.keys((await rollup.read(t.db, { tenantId: 1, from: '2024-06', to: '2024-06', groupBy: [] }))[0]!).sort()).toEqual([
      'month',
      'users',
      'visits',
    ])
  })

  it('tracked writes keep the sketches right: a drain, and a fresh read before it', async (ctx) => {
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    await rollup.track(t.db)
    // 500 new users in March, on one page.
    await sql`insert into visits (tenant_id, at, page, user_id, latency_ms)
      select 3, timestamptz '2024-03-15T12:00:00Z', 'p0', 100000 + g, 10 from generate_series(1, 500) g`.execute(t.db)
    const { rows: exact } = await sql<{ users: number }>`
      select count(distinct user_id)::int as users from visits where tenant_id = 3
        and at >= timestamptz '2024-03-01 00:00 Europe/Madrid' and at < timestamptz '2024-04-01 00:00 Europe/Madrid'`.execute(t.db)
    const fresh = await rollup.read(t.db, { tenantId: 3, from: '2024-03', to: '2024-03', groupBy: [], fresh: true })
    expect(relativeError(Number(fresh[0]!.users), exact[0]!.users)).toBeLessThan(0.07)
    await rollup.refreshDirty(t.db)
    const drained = await rollup.read(t.db, { tenantId: 3, from: '2024-03', to: '2024-03', groupBy: [] })
    expect(drained[0]!.users).toEqual(fresh[0]!.users)
    await rollup.untrack(t.db)
  })

  it('a sketch of a chosen precision (log2m 14): stored at that precision, within 3 standard errors (0.81% each) of count(distinct)', async (ctx) => {
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    const precise = rollupTable('visits_precise', { groupBy: {}, measures: { users: 'hll' }, tenantType: 'integer' })
    const sketches = new MonthlyRollup({
      source: 'visits',
      target: precise,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { users: approxCountDistinct(sql`user_id`, { log2m: 14 }) },
      zone: ZONE,
    })
    await precise.create(t.db)
    await sketches.rebuild(t.db, { tenantId: 1, since: '2024-01-01', until: '2024-12-31' })
    const { rows: stored } = await sql<{ log2m: number; n: number }>`
      select min(hll_log2m(users))::int as log2m, count(*)::int as n from visits_precise`.execute(t.db)
    expect(stored[0]).toEqual({ log2m: 14, n: 12 })
    const [year] = await sketches.read(t.db, { tenantId: 1, from: '2024-01', to: '2024-12', combineMonths: true })
    const { rows: exact } = await sql<{
      users: number
    }>`select count(distinct user_id)::int as users from visits where tenant_id = 1`.execute(t.db)
    expect(relativeError(Number(year!.users), exact[0]!.users)).toBeLessThan(3 * 0.0081)
  })

  it('refuses a sketch precision outside 4–16 before anything is sent', () => {
    for (const log2m of [3, 17, 11.5, Number.NaN]) expect(() => approxCountDistinct(sql`user_id`, { log2m })).toThrow(InvalidArgumentError)
    expect(() => approxCountDistinct(sql`user_id`, { log2m: 4 })).not.toThrow()
  })

  it('a t-digest of a chosen compression (400): stored at it, p95 within 2% of the value range; bad compressions refused before anything is sent', async (ctx) => {
    for (const compression of [9, 10_001, 100.5, Number.NaN])
      expect(() => approxPercentiles(sql`latency_ms`, { compression })).toThrow(InvalidArgumentError)
    expect(() => approxPercentiles(sql`latency_ms`, null as never)).toThrow(InvalidArgumentError)
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    const precise = rollupTable('visits_digest', { groupBy: {}, measures: { latency: 'tdigest' }, tenantType: 'integer' })
    const digests = new MonthlyRollup({
      source: 'visits',
      target: precise,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { latency: approxPercentiles(sql`latency_ms`, { compression: 400 }) },
      zone: ZONE,
    })
    await precise.create(t.db)
    await digests.rebuild(t.db, { tenantId: 2, since: '2024-01-01', until: '2024-12-31' })
    const { rows: stored } = await sql<{ compression: string[] }>`
      select array_agg(distinct substring(latency::text from 'compression ([0-9]+)')) as compression from visits_digest`.execute(t.db)
    expect(stored[0]!.compression).toEqual(['400'])
    const [year] = await digests.read(t.db, {
      tenantId: 2,
      from: '2024-01',
      to: '2024-12',
      combineMonths: true,
      percentiles: { latency: [0.95] },
    })
    const { rows: exact } = await sql<{ p95: number; range: number }>`
      select percentile_cont(0.95) within group (order by latency_ms) as p95, max(latency_ms) - min(latency_ms) as range
      from visits where tenant_id = 2`.execute(t.db)
    expect(Math.abs((year!.latency as number[])[0]! - exact[0]!.p95) / exact[0]!.range).toBeLessThan(0.02)
  })

  it("a fleet level of sketches: hll unions of the level equal the rollup table's, t-digests merge within 2% of the value range", async (ctx) => {
    if (!available) return skipBecause(ctx, NO_SKETCHES)
    const sketched = rollupTable('visits_sk', {
      groupBy: { page: 'text' },
      measures: { visits: 'bigint', users: 'hll', latency: 'tdigest' },
      tenantType: 'integer',
    })
    const fleet = fleetTable('visits_sk_fleet', { of: sketched, groupBy: [] })
    const config = {
      source: 'visits',
      target: sketched,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: ['page'] as const,
      measures: { visits: sql`count(*)`, users: approxCountDistinct(sql`user_id`), latency: approxPercentiles(sql`latency_ms`) },
      zone: ZONE,
    }
    const withFleet = new MonthlyRollup({ ...config, fleet })
    const without = new MonthlyRollup(config)
    await sketched.create(t.db)
    await fleet.create(t.db)
    for (const tenantId of [1, 2, 3]) await withFleet.rebuild(t.db, { tenantId, since: '2024-01-01', until: '2024-12-31' })
    const o = { from: '2024-01', to: '2024-12', groupBy: [], percentiles: { latency: [0.5, 0.95] } }
    expect(withFleet.readAcrossQuery(t.db, o).compile(t.db).sql).toContain('"visits_sk_fleet"')
    const fromFleet = await withFleet.readAcross(t.db, o)
    const fromTable = await without.readAcross(t.db, o)
    expect(fromFleet.map((r) => [r.month, r.visits, r.users])).toEqual(fromTable.map((r) => [r.month, r.visits, r.users]))
    const { rows: exact } = await sql<{ month: string; p: number[]; range: number }>`
      select to_char(date_trunc('month', at at time zone ${ZONE}), 'YYYY-MM') as month,
        percentile_cont(array[0.5, 0.95]) within group (order by latency_ms) as p, max(latency_ms) - min(latency_ms) as range
      from visits group by 1 order by 1`.execute(t.db)
    expect(fromFleet).toHaveLength(exact.length)
    fromFleet.forEach((row, i) => {
      const estimate = row.latency as number[]
      exact[i]!.p.forEach((p, k) => expect(Math.abs(estimate[k]! - p) / exact[i]!.range).toBeLessThan(0.02))
    })
  })

  it('refuses percentiles of a measure that is not a tdigest, and out-of-range percentiles', async () => {
    const range = { tenantId: 1, from: '2024-01', to: '2024-01' }
    // @ts-expect-error users is an hll, not a tdigest: refused at compile time, and at run time (under test)
    await expect(rollup.read(t.db, { ...range, percentiles: { users: [0.5] } })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(rollup.read(t.db, { ...range, percentiles: { latency: [1.5] } })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(rollup.read(t.db, { ...range, percentiles: { latency: [] } })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(rollup.read(t.db, { ...range, combineMonths: 'yes' as never })).rejects.toBeInstanceOf(InvalidArgumentError)
    // @ts-expect-error a sketch is a measure, never a group: refused at compile time, and at run time (under test)
    expect(() => rollupTable('bad', { groupBy: { users: 'hll' }, measures: { n: 'bigint' } })).toThrow(InvalidArgumentError)
  })
})
