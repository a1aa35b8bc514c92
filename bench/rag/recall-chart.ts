import type { TopLevelSpec } from 'vega-lite'
import type { SearchRow } from './rag-report.js'

/**
 * The recall-vs-latency chart of a rag-bench run as a Vega-Lite spec: one line per tenant class
 * and strategy over `ef_search` (relaxed iterative scan; the point's shape says which
 * `ef_search`), x = p50 latency in ms on a log scale, y = tie-aware recall@10; both axes fitted to
 * the data.
 *
 * ### Examples
 * ```ts
 * writeFileSync('recall.svg', await renderChart(recallLatencyChart(report.search.rows)))
 * ```
 */
export function recallLatencyChart(rows: readonly SearchRow[], title = 'recall@10 vs p50 latency'): TopLevelSpec {
  const values = rows
    .filter((r) => r.iterativeScan === 'relaxed')
    .map((r) => ({
      series: `${r.tenantClass} tenants, ${r.strategy} index`,
      efSearch: r.efSearch,
      p50: r.latencyMs.p50,
      recall: r.recallAt10,
    }))
  const recalls = values.map((v) => v.recall)
  const low = Math.max(0, Math.floor((Math.min(...recalls) - 0.005) * 100) / 100)
  return {
    title: { text: title, subtitle: 'relaxed iterative scan; one point per ef_search' },
    width: 560,
    height: 320,
    data: { values },
    encoding: {
      x: { field: 'p50', type: 'quantitative', title: 'p50 latency, ms (log scale)', scale: { type: 'log', nice: false, padding: 16 } },
      y: { field: 'recall', type: 'quantitative', title: 'recall@10 (tie-aware)', scale: { domain: [low, 1], zero: false } },
      color: { field: 'series', type: 'nominal', title: null },
    },
    layer: [
      { mark: { type: 'line', strokeWidth: 1.5 }, encoding: { order: { field: 'efSearch', type: 'quantitative' } } },
      {
        mark: { type: 'point', filled: true, size: 70 },
        encoding: {
          shape: {
            field: 'efSearch',
            type: 'nominal',
            title: 'ef_search',
            sort: [...new Set(values.map((v) => v.efSearch))].sort((a, b) => a - b),
          },
        },
      },
    ],
  }
}
