import type { TopLevelSpec } from 'vega-lite'
import type { PlanningReport } from './render-planning-report.js'

/**
 * The planning-cost curve as a Vega-Lite spec: planning time of one search (warm and fresh
 * connection) against partial indexes, one line per layout, both axes on log scales.
 *
 * ### Examples
 * ```ts
 * writeFileSync('planning.svg', await renderChart(planningChart(report)))
 * ```
 */
export function planningChart(report: PlanningReport): TopLevelSpec {
  const values = report.points.flatMap((p) => [
    { indexes: p.indexes, series: `${p.layout}, warm connection`, ms: p.warmPlanMs.noIndex },
    { indexes: p.indexes, series: `${p.layout}, fresh connection`, ms: p.freshPlanMs.noIndex },
  ])
  return {
    title: { text: 'Planning time of one search vs per-tenant partial indexes', subtitle: 'median, tenant without an index of its own' },
    width: 520,
    height: 300,
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: {
        field: 'indexes',
        type: 'quantitative',
        title: 'partial HNSW indexes (log scale)',
        scale: { type: 'log', nice: false, padding: 12 },
      },
      y: { field: 'ms', type: 'quantitative', title: 'planning time, ms (log scale)', scale: { type: 'log', nice: false, padding: 12 } },
      color: { field: 'series', type: 'nominal', title: null },
      strokeDash: { field: 'series', type: 'nominal', title: null },
    },
  }
}
