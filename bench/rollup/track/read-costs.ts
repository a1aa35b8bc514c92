import { sql } from 'kysely'
import { localMonth } from '../../../src/bench-kit.js'
import { approxCountDistinct, MonthlyRollup, rollupTable, type Database } from '../../../src/index.js'
import { median, summarize, type Percentiles } from '../../report/stats.js'
import { drainLog } from './drain-log.js'

/** A fresh read beside a plain one of the same range, with some of its months dirty. */
export interface FreshReadCost {
  tenantId: number
  months: number
  dirtyMonths: number
  plainMs: Percentiles
  freshMs: Percentiles
  /** Median over repetitions of fresh ÷ plain, measured in turn. */
  ratio: number
}

/**
 * `read({ fresh: true })` against `read()` over the last 12 months of a tenant, with 0, 1 and 3 of
 * them dirty (a no-op UPDATE of one row per month, tracking on), interleaved after a warm-up.
 * The log is drained afterwards.
 *
 * ### Examples
 * ```ts
 * const costs = await measureFreshReads(db, rollup, source, { tenantId: 1, end, zone, reps: 30 })
 * ```
 */
export async function measureFreshReads(
  db: Database,
  rollup: MonthlyRollup,
  source: string,
  o: { tenantId: number; end: Date; zone: string; reps: number },
): Promise<FreshReadCost[]> {
  const to = localMonth(o.end, o.zone).slice(0, 7)
  const fromDate = new Date(o.end.getTime() - 11 * 30.5 * 86_400_000)
  const from = localMonth(fromDate, o.zone).slice(0, 7)
  const out: FreshReadCost[] = []
  for (const dirtyMonths of [0, 1, 3]) {
    for (let m = 0; m < dirtyMonths; m++) {
      const at = new Date(o.end.getTime() - m * 30.5 * 86_400_000)
      await sql`update ${sql.raw(source)} set amount = amount where tenant_id = ${o.tenantId} and id = (
        select id from ${sql.raw(source)} where tenant_id = ${o.tenantId} and paid_at <= ${at} order by paid_at desc limit 1)`.execute(db)
    }
    const read = { tenantId: o.tenantId, from, to }
    await rollup.read(db, read)
    await rollup.read(db, { ...read, fresh: true })
    const plain: number[] = []
    const fresh: number[] = []
    for (let i = 0; i < o.reps; i++) {
      let t0 = performance.now()
      await rollup.read(db, read)
      plain.push(performance.now() - t0)
      t0 = performance.now()
      await rollup.read(db, { ...read, fresh: true })
      fresh.push(performance.now() - t0)
    }
    out.push({
      tenantId: o.tenantId,
      months: 12,
      dirtyMonths,
      plainMs: summarize(plain),
      freshMs: summarize(fresh),
      ratio: median(fresh.map((f, i) => f / plain[i]!)),
    })
    await drainLog(rollup, db)
  }
  return out
}

/** approxCountDistinct against count(distinct …) of the same rows. */
export interface DistinctError {
  expression: string
  /** Relative errors |approx − exact| ÷ exact, by what was combined. */
  perBucket: ErrorSummary
  /** The big tenant's months, categories combined by `read({ groupBy: [] })` (a union of sketches). */
  perMonth: ErrorSummary
  /** The big tenant's whole range in one row (`combineMonths`, categories combined). */
  wholeRange: { exact: number; approx: number; error: number }
  /** Every tenant's whole range in one row each. */
  perTenantRange: ErrorSummary
  rebuildSeconds: number
}

export interface ErrorSummary {
  n: number
  /** Of those with at least 1,000 distinct values. */
  large: number
  median: number
  p95: number
  max: number
}

/**
 * Builds a second rollup on the same source with an `'hll'` measure — distinct amounts per tenant,
 * month and category (the expenses have no user column; amounts repeat, 99,900 possible values) —
 * rebuilt for every tenant, then compares what `read` returns with exact `count(distinct amount)`
 * of the same rows: per bucket, per month across categories, and over the whole range.
 *
 * ### Examples
 * ```ts
 * const error = await measureDistinctError(db, { source, target: 'pgscale_bench.expenses_distinct', zone, tenants: 1000, since, until })
 * ```
 */
export async function measureDistinctError(
  db: Database,
  o: { source: string; target: string; zone: string; tenants: number; since: Date; until: Date },
): Promise<DistinctError> {
  const target = rollupTable(o.target, { groupBy: { category: 'varchar(64)' }, measures: { amounts: 'hll' }, tenantType: 'bigint' })
  const rollup = new MonthlyRollup({
    source: o.source,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { amounts: approxCountDistinct(sql`amount`) },
    where: sql`status <> 'cancelled'`,
    zone: o.zone,
  })
  await target.create(db)
  const t0 = performance.now()
  for (let tenant = 1; tenant <= o.tenants; tenant++) await rollup.rebuild(db, { tenantId: tenant, since: o.since, until: o.until })
  const rebuildSeconds = (performance.now() - t0) / 1000
  const from = localMonth(o.since, o.zone).slice(0, 7)
  const to = localMonth(o.until, o.zone).slice(0, 7)
  const month = sql`to_char(date_trunc('month', paid_at at time zone ${o.zone}), 'YYYY-MM')`
  const exact = async (tenantId: number, by: 'bucket' | 'month' | 'range') => {
    const key = by === 'bucket' ? sql`${month} || '|' || category` : by === 'month' ? month : sql`'all'`
    const { rows } = await sql<{ key: string; n: number }>`select ${key} as key, count(distinct amount)::int as n
      from ${sql.raw(o.source)} where tenant_id = ${tenantId} and status <> 'cancelled' group by 1`.execute(db)
    return new Map(rows.map((r) => [r.key, r.n]))
  }
  const errors = (pairs: Array<[number, number]>) => pairs.map(([approx, ex]) => [Math.abs(approx - ex) / ex, ex] as const)
  const bucketTruth = await exact(1, 'bucket')
  const buckets = await rollup.read(db, { tenantId: 1, from, to })
  const perBucket = errors(buckets.map((r) => [Number(r.amounts), bucketTruth.get(`${r.month}|${String(r.category)}`) ?? 0]))
  const monthTruth = await exact(1, 'month')
  const months = await rollup.read(db, { tenantId: 1, from, to, groupBy: [] })
  const perMonth = errors(months.map((r) => [Number(r.amounts), monthTruth.get(r.month) ?? 0]))
  const whole = (await rollup.read(db, { tenantId: 1, from, to, groupBy: [], combineMonths: true }))[0]!
  const wholeExact = (await exact(1, 'range')).get('all')!
  const ranges: Array<[number, number]> = []
  for (let tenant = 1; tenant <= o.tenants; tenant++) {
    const row = (await rollup.read(db, { tenantId: tenant, from, to, groupBy: [], combineMonths: true }))[0]
    if (row) ranges.push([Number(row.amounts), (await exact(tenant, 'range')).get('all') ?? 0])
  }
  await sql.raw(`drop table ${o.target}`).execute(db)
  return {
    expression: 'approxCountDistinct(amount) (hll, default log2m 11)',
    perBucket: summarizeErrors(perBucket),
    perMonth: summarizeErrors(perMonth),
    wholeRange: { exact: wholeExact, approx: Number(whole.amounts), error: Math.abs(Number(whole.amounts) - wholeExact) / wholeExact },
    perTenantRange: summarizeErrors(errors(ranges)),
    rebuildSeconds,
  }
}

function summarizeErrors(pairs: ReadonlyArray<readonly [number, number]>): ErrorSummary {
  const e = pairs.map(([err]) => err).sort((a, b) => a - b)
  const at = (q: number) => (e.length ? e[Math.min(e.length - 1, Math.floor(q * e.length))]! : 0)
  return {
    n: e.length,
    large: pairs.filter(([, ex]) => ex >= 1000).length,
    median: at(0.5),
    p95: at(0.95),
    max: e.length ? e[e.length - 1]! : 0,
  }
}
