import type { TopLevelSpec } from 'vega-lite'
import type { RollupBenchReport } from './run-rollup-bench.js'

/**
 * rollup-bench's dashboard queries as a Vega-Lite spec: per query and tenant, p50 from the source
 * table and from the rollup as two points on a log-scale ms axis joined by a line, the speed-up
 * written beside.
 *
 * ### Examples
 * ```ts
 * writeFileSync('rollup.svg', await renderChart(speedupChart(report)))
 * ```
 */
export function speedupChart(report: RollupBenchReport): TopLevelSpec {
  const values = (['big', 'typical'] as const).flatMap((tenant) =>
    report.tenants[tenant].dashboard.map((d) => ({
      query: `${tenant}: ${d.name}`,
      source: d.sourceMs.p50,
      rollup: d.rollupMs.p50,
      label: `${d.speedup >= 10 ? d.speedup.toFixed(0) : d.speedup.toFixed(1)}×`,
    })),
  )
  const y = { field: 'query', type: 'nominal' as const, title: null, sort: null, axis: { labelLimit: 400 } }
  const ms = values.flatMap((v) => [v.source, v.rollup])
  const x = {
    type: 'quantitative' as const,
    title: 'p50, ms (log scale)',
    scale: { type: 'log' as const, domain: [Math.min(...ms) / 1.5, Math.max(...ms) * 2.5] },
  }
  return {
    title: {
      text: 'Dashboard queries: source table vs rollup (p50)',
      subtitle: `${report.seeding.rows.toLocaleString('en-US')} source rows; big tenant ${report.tenants.big.rows.toLocaleString('en-US')} rows, typical ${report.tenants.typical.rows.toLocaleString('en-US')}; the speed-up beside each`,
    },
    width: 420,
    height: { step: 24 },
    data: { values },
    layer: [
      { mark: { type: 'rule', color: '#999' }, encoding: { y, x: { ...x, field: 'rollup' }, x2: { field: 'source' } } },
      {
        transform: [{ fold: ['source', 'rollup'], as: ['path', 'ms'] }],
        mark: { type: 'point', filled: true, size: 70 },
        encoding: {
          y,
          x: { ...x, field: 'ms' },
          color: {
            field: 'path',
            type: 'nominal',
            title: null,
            sort: ['source', 'rollup'],
            legend: { labelExpr: "datum.label === 'source' ? 'source table' : 'rollup'" },
          },
        },
      },
      {
        mark: { type: 'text', align: 'left', dx: 8, fontSize: 11 },
        encoding: { y, x: { ...x, field: 'source' }, text: { field: 'label' } },
      },
    ],
  }
}
