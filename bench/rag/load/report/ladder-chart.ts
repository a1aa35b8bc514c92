import type { TopLevelSpec } from 'vega-lite'
import type { LoadBenchReport } from '../run-load-bench.js'

/**
 * The ladder (or any shape's steps, in order) as a Vega-Lite spec: throughput (bars, left axis) and
 * read p95 (line, right axis) against clients, with the `--max-p95-ms` bound drawn as a rule.
 *
 * ### Examples
 * ```ts
 * writeFileSync('ladder.svg', await renderChart(ladderChart(report)))
 * ```
 */
export function ladderChart(report: LoadBenchReport): TopLevelSpec {
  // The ladder's steps by clients; a shape's other phases by phase and clients (a spike's base and
  // recovery have the same clients).
  const label = (s: LoadBenchReport['steps'][number]) => (s.phase === 'step' ? String(s.clients) : `${s.phase} ${s.clients}`)
  const values = report.steps.map((s) => ({ clients: label(s), throughput: s.throughput, readP95: s.readP95Ms }))
  const order = values.map((v) => v.clients)
  const maxP95 = report.config.maxP95Ms
  const subtitle = [
    report.saturates
      ? `saturates at ${report.saturates.clients} clients (${report.saturates.throughput.toFixed(0)} ops/s)`
      : 'no saturation step',
    report.breaks ? `breaks at ${report.breaks.clients} (${report.breaks.why})` : `no step over ${maxP95} ms`,
  ].join('; ')
  const x = { field: 'clients', type: 'ordinal' as const, sort: order, title: 'concurrent clients', axis: { labelAngle: 0 } }
  return {
    title: {
      text: `rag-bench load — ${report.config.chunks.toLocaleString('en-US')} chunks, ${report.config.tenantCount} tenants`,
      subtitle,
    },
    width: 520,
    height: 300,
    data: { values },
    layer: [
      {
        mark: { type: 'bar', color: '#9ecae9', width: { band: 0.6 } },
        encoding: { x, y: { field: 'throughput', type: 'quantitative', title: 'operations per second (bars)' } },
      },
      {
        layer: [
          {
            mark: { type: 'line', color: '#d1495b', point: { color: '#d1495b' } },
            encoding: { x, y: { field: 'readP95', type: 'quantitative', title: 'read p95, ms (line; dashed: --max-p95-ms)' } },
          },
          {
            data: { values: [{ bound: maxP95 }] },
            mark: { type: 'rule', color: '#d1495b', strokeDash: [4, 4] },
            encoding: { y: { field: 'bound', type: 'quantitative' } },
          },
        ],
      },
    ],
    resolve: { scale: { y: 'independent' } },
  }
}
