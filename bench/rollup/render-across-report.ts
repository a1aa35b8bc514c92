import { renderTable } from '../report/table.js'
import type { AcrossReport, AcrossView } from './across/across-report.js'

function viewsTable(views: readonly AcrossView[], source: string): string {
  return renderTable(
    ['aggregate (every tenant)', `${source} p50 ms`, 'rollup p50', 'level p50', 'level p95', 'rollup ×', 'level ×', 'reads'],
    views.map((q) => [
      q.name,
      q.sourceMs.p50.toFixed(1),
      q.rollupMs.p50.toFixed(2),
      q.fleetMs.p50.toFixed(2),
      q.fleetMs.p95.toFixed(2),
      `${q.speedup.toFixed(1)}×`,
      `${q.fleetSpeedup.toFixed(1)}×`,
      q.reads ?? (q.readsFleet ? 'fleet level' : 'rollup table'),
    ]),
  )
}

/**
 * The `--across` section of rollup-bench's report: each admin view from the source, the rollup table
 * and the level `readAcross` picks (without and with a covering index on the source), what the
 * levels add to refresh and drain, then the fleet-wide distinct counts' error.
 *
 * ### Examples
 * ```ts
 * console.log(renderAcrossReport(report.across).join('\n'))
 * ```
 */
export function renderAcrossReport(r: AcrossReport): string[] {
  const out = [
    'Admin views across tenants (--across): the whole fleet from the source vs from the rollup table and its levels (readAcross)',
    viewsTable(r.queries, 'source'),
  ]
  if (r.covered) out.push(`With ${r.covered.index}:`, viewsTable(r.covered.queries, 'covered source'))
  if (r.fleet)
    out.push(
      `The fleet level: ${r.fleet.rows.toLocaleString('en-US')} rows, filled from the rollup table in ${r.fleet.fillSeconds.toFixed(2)} s`,
    )
  if (r.tenantLevel)
    out.push(
      `The per-tenant level: ${r.tenantLevel.rows.toLocaleString('en-US')} rows, filled from the rollup table in ${r.tenantLevel.fillSeconds.toFixed(2)} s`,
    )
  if (r.maintenance.length)
    out.push(
      renderTable(
        ['write', 'without levels p50 ms', 'p95', 'with levels p50 ms', 'p95', 'ratio'],
        r.maintenance.map((m) => [
          m.what,
          m.plainMs.p50.toFixed(2),
          m.plainMs.p95.toFixed(2),
          m.fleetMs.p50.toFixed(2),
          m.fleetMs.p95.toFixed(2),
          `${m.ratio.toFixed(2)}×`,
        ]),
      ),
    )
  if (r.deferred)
    out.push(
      'The deferred levels (fleet and per-tenant, kept by refreshFleet), nothing pending:',
      viewsTable(r.deferred.queries, 'source'),
      `The same with ${r.deferred.pendingMonths.map((m) => m.slice(0, 7)).join(' and ')} pending (read from the rollup table beside the level):`,
      viewsTable(r.deferred.queriesPending, 'source'),
      `refreshFleet of those ${r.deferred.pendingMonths.length} months: p50 ${r.deferred.refreshFleetMs.p50.toFixed(1)} ms, p95 ${r.deferred.refreshFleetMs.p95.toFixed(1)} ms`,
    )
  if (r.distinct)
    out.push(
      `Fleet-wide distinct amounts per month (hll sketches united, ${r.distinct.months} months) against count(distinct): error p50 ${(100 * r.distinct.errorP50).toFixed(2)}%, p95 ${(100 * r.distinct.errorP95).toFixed(2)}%, max ${(100 * r.distinct.errorMax).toFixed(2)}%`,
    )
  out.push(`method: ${r.method}`)
  return out
}
