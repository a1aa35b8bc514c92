import { sql } from 'kysely'
import { approxCountDistinct, MonthlyRollup, rollupTable } from '../../../src/index.js'
import { localMonth } from '../../../src/bench-kit.js'
import { median, percentile, summarize } from '../../report/stats.js'
import type { AcrossReport } from '../across/across-report.js'
import { acrossQueries } from '../across/across-queries.js'
import { measureViews } from '../across/across-views.js'
import { fleetSide } from '../across/fleet-rollup.js'
import { maintenanceCost } from '../across/maintenance-cost.js'
import { dashboardMonths } from '../dashboard.js'
import { SCHEMA, SOURCE, type RollupRun } from '../rollup-run.js'

/**
 * Phase `--across`: the dashboard's six aggregates and the top 20 tenants by spend per month, asked
 * of the whole fleet — from the source (what an admin view runs without a rollup), from the rollup
 * table (`readAcross`) and from the same rollup with a fleet level and a per-tenant level (the top
 * 20 reads the latter) — interleaved, with the plans; again with a `(paid_at) INCLUDE (…)` covering
 * index on the source; what the levels add to refresh and drain (the fleet level alone, both); and, where the server has hll, fleet-wide distinct counts per month from
 * united sketches against `count(distinct)`.
 *
 * ### Examples
 * ```ts
 * report.across = await acrossPhase(run, console.error)
 * ```
 */
export async function acrossPhase(run: RollupRun, log: (line: string) => void): Promise<AcrossReport> {
  const months = dashboardMonths(localMonth(run.until, run.o.zone))
  log(
    'across tenants: the rollup with a fleet level and a per-tenant level (its table copied from the rollup table, the levels filled from it)',
  )
  const side = await fleetSide(run, { name: 'leveled', perTenant: true })
  const queries = await measureViews(run, side.rollup, acrossQueries(SOURCE, run.o.zone, months), log)
  const covered = await withCoveringIndex(run, log, () => measureViews(run, side.rollup, acrossQueries(SOURCE, run.o.zone, months), log))
  log('across tenants: refresh and drain, without levels, with the fleet level alone, with both levels')
  const fleetOnly = await fleetSide(run, { name: 'fleeted', perTenant: false })
  const cost = { reps: run.o.reps, tenants: Math.min(200, run.o.tenants - 1), rounds: 5 }
  const deferredOnly = await fleetSide(run, { name: 'deferred', perTenant: false, deferred: true })
  const deferredSide = await fleetSide(run, { name: 'deferred_both', perTenant: true, deferred: true })
  const maintenance = [
    ...(await maintenanceCost(run, fleetOnly.rollup, { ...cost, label: 'fleet level' })),
    ...(await maintenanceCost(run, side.rollup, { ...cost, label: 'fleet + per-tenant levels' })),
    ...(await maintenanceCost(run, deferredOnly.rollup, { ...cost, label: 'deferred fleet level' })),
    ...(await maintenanceCost(run, deferredSide.rollup, { ...cost, label: 'deferred fleet + per-tenant levels (both deferred)' })),
  ]
  log(
    'across tenants: the deferred fleet level (+ per-tenant level) — views with nothing pending, with two months pending, refreshFleet of two months',
  )
  const deferred = await deferredViews(run, deferredSide.rollup, months, log)
  return {
    queries,
    covered,
    fleet: { rows: side.fleet.rows, fillSeconds: side.fleet.fillSeconds },
    ...(side.tenantLevel ? { tenantLevel: { rows: side.tenantLevel.rows, fillSeconds: side.tenantLevel.fillSeconds } } : {}),
    maintenance,
    deferred,
    distinct: await fleetDistinct(run, log),
    method: methodOf(run),
  }
}

/**
 * The deferred levels' views with nothing pending (after `refreshFleet`) and with this month and the
 * one before pending (marked as writes mark them; a deferred per-tenant level: every tenant's buckets
 * of those months), then `refreshFleet` of those two months timed (marked again before each call;
 * at least 5 calls).
 */
async function deferredViews(
  run: RollupRun,
  rollup: MonthlyRollup,
  months: ReturnType<typeof dashboardMonths>,
  log: (line: string) => void,
): Promise<NonNullable<AcrossReport['deferred']>> {
  const level = rollup.parts.fleet!
  const thisMonth = localMonth(run.until, run.o.zone)
  const [y, m] = thisMonth.split('-').map(Number) as [number, number]
  const before = m === 1 ? `${y - 1}-12-01` : `${y}-${String(m - 1).padStart(2, '0')}-01`
  const pendingMonths = [before, thisMonth]
  const tenantLevel = (rollup.parts.levels ?? []).find((l) => l.perTenant && l.deferred)
  // Pending: the two months, and (a deferred per-tenant level) every tenant's buckets of them — as if every tenant wrote in both.
  const mark = async () => {
    await sql`insert into ${sql.raw(level.pending!)} (month) select unnest(${pendingMonths}::date[])`.execute(run.db)
    if (tenantLevel)
      await sql`insert into ${sql.raw(tenantLevel.pending!)} (tenant_id, month)
        select distinct tenant_id, month from ${sql.raw(rollup.parts.target.qualified)} where month = any(${pendingMonths}::date[])`.execute(
        run.db,
      )
  }
  await rollup.refreshFleet(run.db)
  const queries = await measureViews(run, rollup, acrossQueries(SOURCE, run.o.zone, months), log)
  await mark()
  const queriesPending = await measureViews(run, rollup, acrossQueries(SOURCE, run.o.zone, months), log)
  const ms: number[] = []
  for (let i = 0; i < Math.max(5, Math.min(run.o.reps, 30)); i++) {
    if (i) await mark()
    const t0 = performance.now()
    await rollup.refreshFleet(run.db)
    ms.push(performance.now() - t0)
  }
  return { queries, queriesPending, pendingMonths, refreshFleetMs: summarize(ms) }
}

/** Runs `measure` with a `(paid_at) INCLUDE (tenant_id, category, amount, status)` index on the source (after VACUUM), then drops it. */
async function withCoveringIndex<T>(
  run: RollupRun,
  log: (line: string) => void,
  measure: () => Promise<T>,
): Promise<{ index: string; queries: T }> {
  const index = `${SCHEMA}.expenses_paid_at_covering`
  const ddl = `create index expenses_paid_at_covering on ${SOURCE} (paid_at) include (tenant_id, category, amount, status)`
  log(`across tenants: again with ${ddl}`)
  await sql.raw(ddl).execute(run.db)
  await sql.raw(`vacuum analyze ${SOURCE}`).execute(run.db)
  try {
    return { index: ddl, queries: await measure() }
  } finally {
    await sql.raw(`drop index ${index}`).execute(run.db)
  }
}

/** Distinct amounts per month across every tenant: an hll rollup's sketches united against count(distinct). */
async function fleetDistinct(run: RollupRun, log: (line: string) => void): Promise<AcrossReport['distinct']> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_available_extensions where name = 'hll'`.execute(run.db)
  if (rows[0]!.n === 0) {
    log('across tenants: no hll extension here, fleet-wide distinct counts skipped')
    return null
  }
  const target = rollupTable(`${SCHEMA}.expenses_amounts_monthly`, { groupBy: {}, measures: { amounts: 'hll' }, tenantType: 'bigint' })
  const rollup = new MonthlyRollup({
    source: SOURCE,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: [],
    measures: { amounts: approxCountDistinct(sql`amount`, { log2m: 14 }) },
    zone: run.o.zone,
  })
  await target.create(run.db)
  const started = performance.now()
  for (let tenantId = 1; tenantId <= Math.max(1, run.o.tenants); tenantId++)
    await rollup.rebuild(run.db, { tenantId, since: run.since, until: run.until })
  const buildSeconds = (performance.now() - started) / 1000
  const from = localMonth(run.since, run.o.zone).slice(0, 7)
  const to = localMonth(run.until, run.o.zone).slice(0, 7)
  const estimates = await rollup.readAcross(run.db, { from, to, groupBy: [] })
  const { rows: exact } = await sql<{ month: string; n: number }>`
    select to_char(date_trunc('month', paid_at at time zone ${run.o.zone}), 'YYYY-MM') as month, count(distinct amount)::int as n
    from ${sql.raw(SOURCE)} group by 1`.execute(run.db)
  const truth = new Map(exact.map((r) => [r.month, r.n]))
  const errors = estimates.flatMap((e) => {
    const n = truth.get(e.month)
    return n ? [Math.abs(Number(e.amounts) - n) / n] : []
  })
  log(`across tenants: distinct amounts per month, p95 error ${(100 * percentile(errors, 95)).toFixed(2)}% over ${errors.length} months`)
  return { months: errors.length, errorP50: median(errors), errorP95: percentile(errors, 95), errorMax: Math.max(...errors), buildSeconds }
}

function methodOf(run: RollupRun): string {
  return (
    `every tenant's rows (${run.o.rows.toLocaleString('en-US')} in the source, ${run.o.tenants} tenants), each aggregate from the source ` +
    `(local-month bounds in UTC; no tenant condition), from the rollup table (readAcross: its month index) and from the same rollup with a ` +
    `fleet level by category and a per-tenant level (tenant × month; readAcross reads the fleet level when the view needs no tenant detail, ` +
    `the per-tenant level for the top 20 tenants), one warm-up each, then ` +
    `${run.o.reps} rounds of the three in turn (order rotating); p50/p95 and the ratio of medians. Then the same with a (paid_at) INCLUDE ` +
    `(tenant_id, category, amount, status) index on the source after VACUUM ANALYZE, dropped afterwards. Refresh/drain: refreshAt of this ` +
    `month (big and typical tenant) by each rollup alternately, ${run.o.reps} each after a warm-up, each pair after one new source row in ` +
    `the bucket (not timed; its category turning through the seed's); drain: 5 rounds, each inserting one source row in every bucket ` +
    `drained and marking the same keys in both logs (INSERT into the log), then timing refreshDirty of each, order alternating; ratio = median of per-round levels ÷ plain; ` +
    `done four times: the rollup with the fleet level alone, then with both levels, then with a deferred fleet level alone and with a deferred per-tenant level beside it (writes mark months and tenant buckets pending; refreshFleet recomputes them), each against the rollup without levels. The views of the deferred levels (fleet and per-tenant): after refreshFleet (nothing pending), then with this month and the one before marked pending (read from the rollup table beside the level), interleaved as above; then refreshFleet of those two months timed (marked again before each call). Distinct counts: an hll(14,5) rollup (approxCountDistinct(amount, { log2m: 14 })) of amount per ` +
    `tenant and month, united across tenants per month, against count(distinct amount) of the same rows`
  )
}
