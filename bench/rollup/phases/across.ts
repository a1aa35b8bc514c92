import { sql } from 'kysely'
import { approxCountDistinct, explain, MonthlyRollup, rollupTable } from '../../../src/index.js'
import { localMonth, planShape } from '../../../src/bench-kit.js'
import { median, percentile, summarize } from '../../report/stats.js'
import type { AcrossReport } from '../across/across-report.js'
import { acrossQueries, rollupSide } from '../across/across-queries.js'
import { dashboardMonths } from '../dashboard.js'
import { SCHEMA, SOURCE, time, type RollupRun } from '../rollup-run.js'

/**
 * Phase `--across`: the dashboard's six aggregates and the top 20 tenants by spend per month, asked
 * of the whole fleet — from the source (what an admin view runs without a rollup) and from the
 * rollup (`readAcross`), interleaved, with both plans — and, where the server has hll, fleet-wide
 * distinct counts per month from united sketches against `count(distinct)`.
 *
 * ### Examples
 * ```ts
 * report.across = await acrossPhase(run, console.error)
 * ```
 */
export async function acrossPhase(run: RollupRun, log: (line: string) => void): Promise<AcrossReport> {
  const months = dashboardMonths(localMonth(run.until, run.o.zone))
  const queries: AcrossReport['queries'] = []
  for (const q of acrossQueries(SOURCE, run.o.zone, months)) {
    log(`across tenants: ${q.name}`)
    await time(run.db, q.source)
    await rollupSide(run.rollup, run.db, q)
    const src: number[] = []
    const rol: number[] = []
    for (let i = 0; i < run.o.reps; i++) {
      src.push(await time(run.db, q.source))
      const t0 = performance.now()
      await rollupSide(run.rollup, run.db, q)
      rol.push(performance.now() - t0)
    }
    const sourcePlan = planShape(await explain(run.db, q.source))
    const rollupPlan = planShape(await explain(run.db, run.rollup.readAcrossQuery(run.db, q.rollup[0]!)))
    queries.push({
      name: q.name,
      sourceMs: summarize(src),
      rollupMs: summarize(rol),
      speedup: median(src) / median(rol),
      sourcePlan,
      rollupPlan,
    })
  }
  return { queries, distinct: await fleetDistinct(run, log), method: methodOf(run) }
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
    `(local-month bounds in UTC; no tenant condition) and from the rollup (readAcross: its month index), one warm-up each, then ` +
    `${run.o.reps} repetitions interleaved; p50/p95 and the ratio of medians. Distinct counts: an hll(14,5) rollup (approxCountDistinct(amount, { log2m: 14 })) of amount per ` +
    `tenant and month, united across tenants per month, against count(distinct amount) of the same rows`
  )
}
