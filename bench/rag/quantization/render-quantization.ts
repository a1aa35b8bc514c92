import type { TopLevelSpec } from 'vega-lite'
import type { QuantizationReport } from './run-quantization-bench.js'

const mb = (b: number) => (b / 1024 ** 2).toFixed(1)

/**
 * The quantization report as text: one row per option and tenant class, then the cheapest option
 * that keeps recall@10 ≥ 0.98 per class.
 *
 * ### Examples
 * ```ts
 * console.log(renderQuantizationReport(report))
 * ```
 */
export function renderQuantizationReport(r: QuantizationReport): string {
  const c = r.config
  const lines = [
    `rag-bench quantization — ${r.machine.cpu}, ${r.machine.cores} cores; PostgreSQL ${r.server.serverVersion}, pgvector ${r.server.pgvectorVersion}`,
    `corpus: ${c.chunks.toLocaleString('en-US')} chunks × ${c.dim}, ${c.tenantCount} tenants (${c.mixLabel}); ef_search ${c.efSearch}`,
    `method: ${r.method}`,
    '',
    'option                                  chunks/s  build s  heap MB  HNSW MB  class   recall@10  p50 ms  p95 ms',
  ]
  for (const o of r.options) {
    for (const [i, k] of o.classes.entries()) {
      const head =
        i === 0
          ? `${o.label.padEnd(38)} ${o.ingest.chunksPerSecond.toFixed(0).padStart(9)} ${o.build.seconds.toFixed(1).padStart(8)} ${mb(o.bytes.heap).padStart(8)} ${mb(o.bytes.hnsw).padStart(8)}`
          : ' '.repeat(38 + 10 + 9 + 9 + 9)
      lines.push(
        `${head}  ${k.cls.padEnd(6)} ${k.recallAt10.toFixed(3).padStart(10)} ${k.p50Ms.toFixed(2).padStart(7)} ${k.p95Ms.toFixed(2).padStart(7)}`,
      )
    }
  }
  lines.push('', 'cheapest option with recall@10 ≥ 0.98, per tenant class:')
  for (const x of r.cheapest) {
    lines.push(
      `  ${x.cls.padEnd(7)} ${x.option ? `${x.option} (recall ${x.recallAt10!.toFixed(3)}, HNSW ${mb(x.hnswBytes!)} MB)` : 'none of the options measured'}`,
    )
  }
  return lines.join('\n')
}

/**
 * Recall against index size as a Vega-Lite spec: one point per option and tenant class.
 *
 * ### Examples
 * ```ts
 * writeFileSync('frontier.svg', await renderChart(quantizationChart(report)))
 * ```
 */
export function quantizationChart(r: QuantizationReport): TopLevelSpec {
  const values = r.options.flatMap((o) =>
    o.classes.map((k) => ({ option: o.label, cls: `${k.cls} tenants`, mb: o.bytes.hnsw / 1024 ** 2, recall: k.recallAt10 })),
  )
  const low = Math.max(0, Math.floor((Math.min(...values.map((v) => v.recall)) - 0.01) * 100) / 100)
  return {
    title: {
      text: 'recall@10 vs HNSW index size',
      subtitle: `${r.config.chunks.toLocaleString('en-US')} chunks × ${r.config.dim}; ef_search ${r.config.efSearch}`,
    },
    width: 520,
    height: 300,
    data: { values },
    mark: { type: 'point', filled: true, size: 90 },
    encoding: {
      x: { field: 'mb', type: 'quantitative', title: 'HNSW indexes, MB', scale: { zero: true } },
      y: { field: 'recall', type: 'quantitative', title: 'recall@10 (tie-aware)', scale: { domain: [low, 1] } },
      color: { field: 'option', type: 'nominal', title: null },
      shape: { field: 'cls', type: 'nominal', title: null },
    },
  }
}
