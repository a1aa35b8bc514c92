import type { TopLevelSpec } from 'vega-lite'
import type { FilterBenchReport, FilterResult, TenantSection } from './run-filter-bench.js'

/**
 * The filter report as text: the unfiltered baseline, then one row per filter and strategy
 * (recall@10, p50/p95, searches short of k), the targets each strategy missed, and the indexes' cost.
 *
 * ### Examples
 * ```ts
 * console.log(renderFilterReport(report))
 * ```
 */
export function renderFilterReport(r: FilterBenchReport): string {
  const lines = [
    `rag-bench filters — ${r.machine.cpu}, ${r.machine.cores} cores; PostgreSQL ${r.server.serverVersion}, pgvector ${r.server.pgvectorVersion}`,
    `method: ${r.method}`,
    ...(r.optimizeSeconds === undefined ? [] : [`optimize(): ${r.optimizeSeconds.toFixed(1)} s`]),
    '',
    ...tenantLines(r.tenant, r.filters, r.targets),
  ]
  if (r.hard) lines.push('', ...tenantLines(r.hard.tenant, r.hard.filters, r.hard.targets))
  const unsupported = r.filters.flatMap((f) => f.unsupported.map((p) => `${p}: ${f.label}`))
  if (unsupported.length) lines.push('', `not expressible in the peer's filter language (n/a): ${unsupported.join('; ')}`)
  const l = r.indexes.load
  lines.push(
    '',
    `metadata indexes: bulk load ${l.withoutSeconds.toFixed(1)} s without, ${l.withSeconds.toFixed(1)} s with ${r.indexes.built.length} (×${l.ratio.toFixed(2)}); built after the load:`,
    ...r.indexes.built.map(
      (b) =>
        `  ${`${b.field} (${b.type})`.padEnd(20)} ${b.seconds.toFixed(2).padStart(6)} s ${(b.bytes / 1024 ** 2).toFixed(2).padStart(7)} MB`,
    ),
  )
  for (const p of r.peers) lines.push('skipped' in p ? `peer ${p.name}: skipped (${p.skipped})` : `peer ${p.name} ${p.version}`)
  return lines.join('\n')
}

/**
 * Recall against latency per strategy as a Vega-Lite spec: one point per filter and strategy.
 *
 * ### Examples
 * ```ts
 * writeFileSync('filters.svg', await renderChart(filterChart(report)))
 * ```
 */
export function filterChart(r: FilterBenchReport): TopLevelSpec {
  const values = r.filters.flatMap((f) =>
    Object.entries(f.strategies).map(([strategy, s]) => ({ filter: f.label, strategy, p50: s.p50Ms, recall: s.recallAt10 })),
  )
  const low = Math.max(0, Math.floor((Math.min(...values.map((v) => v.recall)) - 0.01) * 100) / 100)
  return {
    title: {
      text: 'filtered search: recall@10 vs p50 latency',
      subtitle: `${r.tenant.chunks.toLocaleString('en-US')}-chunk tenant × ${r.config.dim}; dashed: 0.98 recall and 3× the unfiltered p50 (${r.tenant.unfiltered.p50Ms.toFixed(2)} ms)`,
    },
    width: 520,
    height: 320,
    layer: [
      {
        data: { values },
        mark: { type: 'point', filled: true, size: 60 },
        encoding: {
          x: { field: 'p50', type: 'quantitative', title: 'p50 ms', scale: { type: 'log' } },
          y: { field: 'recall', type: 'quantitative', title: 'recall@10 (tie-aware)', scale: { domain: [low, 1] } },
          color: { field: 'strategy', type: 'nominal' },
          tooltip: [{ field: 'filter' }, { field: 'strategy' }, { field: 'recall' }, { field: 'p50' }],
        },
      },
      {
        data: { values: [{ y: 0.98 }] },
        mark: { type: 'rule', strokeDash: [4, 4] },
        encoding: { y: { field: 'y', type: 'quantitative' } },
      },
      {
        data: { values: [{ x: 3 * r.tenant.unfiltered.p50Ms }] },
        mark: { type: 'rule', strokeDash: [4, 4] },
        encoding: { x: { field: 'x', type: 'quantitative' } },
      },
    ],
  }
}

/** One tenant's part of the report: its unfiltered search and exact scan, what tuning chose, each rung per strategy, the targets. */
function tenantLines(t: TenantSection, filters: readonly FilterResult[], targets: FilterBenchReport['targets']): string[] {
  const u = t.unfiltered
  const tuning = t.tuning
  const lines = [
    `unfiltered search of the ${t.chunks.toLocaleString('en-US')}-chunk tenant ${t.id} (ef_search ${t.efSearch ?? 'default'}${tuning?.indexM ? `, index rebuilt m ${tuning.indexM} / ef_construction ${tuning.indexEfConstruction}` : ''}): ` +
      `recall@10 ${u.recallAt10.toFixed(3)}, p50 ${u.p50Ms.toFixed(2)} ms, p95 ${u.p95Ms.toFixed(2)} ms; exact scan p50 ${t.exact.p50Ms.toFixed(2)} ms (×${(u.p50Ms / t.exact.p50Ms).toFixed(2)})`,
  ]
  if (tuning?.filter) lines.push(`  filtered path tuned: ${JSON.stringify(tuning.filter)}`)
  for (const a of tuning?.alternatives ?? []) lines.push(`  tried: ${JSON.stringify(a)}`)
  lines.push('', 'filter                      rows  strategy                   recall@10  p50 ms  p95 ms  ×unfiltered  short  first ms')
  for (const f of filters) {
    for (const [i, [name, s]] of Object.entries(f.strategies).entries()) {
      const head = i === 0 ? `${f.label.padEnd(26)}${f.matching.toString().padStart(6)}` : ' '.repeat(32)
      lines.push(
        `${head}  ${name.padEnd(25)} ${s.recallAt10.toFixed(3).padStart(9)} ${s.p50Ms.toFixed(2).padStart(7)} ${s.p95Ms.toFixed(2).padStart(7)} ${(s.p50Ms / u.p50Ms).toFixed(2).padStart(12)} ${s.short.toString().padStart(6)} ${s.firstMs.toFixed(2).padStart(9)}`,
      )
    }
  }
  lines.push('', `targets on ${t.id} (recall@10 ≥ 0.98, p50 ≤ 3× unfiltered):`)
  for (const [name, m] of Object.entries(targets)) {
    const misses = [...m.recallMisses.map((x) => `recall ${x}`), ...m.latencyMisses.map((x) => `latency ${x}`)]
    lines.push(`  ${name.padEnd(25)} ${misses.length ? `missed: ${misses.join('; ')}` : 'met on every filter'}`)
  }
  return lines
}
