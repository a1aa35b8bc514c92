import { renderTable } from '../report/table.js'
import type { AcrossReport } from './across/across-report.js'

/**
 * The `--across` section of rollup-bench's report: each admin view from the source and from the
 * rollup, p50/p95 and the speedup, then the fleet-wide distinct counts' error.
 *
 * ### Examples
 * ```ts
 * console.log(renderAcrossReport(report.across).join('\n'))
 * ```
 */
export function renderAcrossReport(r: AcrossReport): string[] {
  const out = [
    'Admin views across tenants (--across): the whole fleet from the source vs from the rollup (readAcross)',
    renderTable(
      ['aggregate (every tenant)', 'source p50 ms', 'source p95', 'rollup p50 ms', 'rollup p95', 'speedup'],
      r.queries.map((q) => [
        q.name,
        q.sourceMs.p50.toFixed(1),
        q.sourceMs.p95.toFixed(1),
        q.rollupMs.p50.toFixed(2),
        q.rollupMs.p95.toFixed(2),
        `${q.speedup.toFixed(1)}×`,
      ]),
    ),
  ]
  if (r.distinct)
    out.push(
      `Fleet-wide distinct amounts per month (hll sketches united, ${r.distinct.months} months) against count(distinct): error p50 ${(100 * r.distinct.errorP50).toFixed(2)}%, p95 ${(100 * r.distinct.errorP95).toFixed(2)}%, max ${(100 * r.distinct.errorMax).toFixed(2)}%`,
    )
  out.push(`method: ${r.method}`)
  return out
}
