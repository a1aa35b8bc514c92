import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import type { RealQueriesReport } from './rag-report.js'

/**
 * The `queries` phase as text: per tenant, recall on chunk samples and on held-out queries unlike
 * the chunks, before and after tuning on traffic, the setting chosen and p50 against the exact scan.
 *
 * ### Examples
 * ```ts
 * if (report.realQueries) console.log(renderRealQueries(report.realQueries).join('\n'))
 * ```
 */
export function renderRealQueries(r: RealQueriesReport): string[] {
  const ef = (e: number | null) => (e === null ? 'exact' : String(e))
  return [
    `4c. recall on queries unlike the chunks (${r.queries}), before and after tuning on traffic; re-tune ${fmt(r.retune.seconds)} s`,
    renderTable(
      [
        'tenant',
        'chunks',
        'traffic/held-out',
        'nearest chunk: sample / held-out',
        'before: ef (source)',
        'chunk recall',
        'held-out recall',
        'after: ef (source)',
        'chunk recall',
        'held-out recall',
        'p50 ms',
        'exact p50 ms',
        'p50 ÷ exact',
      ],
      r.tenants.map((t) => [
        t.tenantId,
        String(t.chunks),
        `${t.trafficQueries}/${t.evalQueries}`,
        `${fmt(t.nearestChunkDistance.chunkSample)} / ${fmt(t.nearestChunkDistance.evaluation)}`,
        `${ef(t.before.efSearch)} (${t.before.querySource ?? '-'})`,
        t.before.chunkRecall.toFixed(3),
        t.before.evalRecall.toFixed(3),
        `${ef(t.after.efSearch)} (${t.after.querySource ?? '-'})`,
        t.after.chunkRecall.toFixed(3),
        t.after.evalRecall.toFixed(3),
        fmt(t.after.evalP50Ms),
        fmt(t.after.exactP50Ms),
        `${fmt(t.after.p50ToExact)}×`,
      ]),
    ),
    `query sample on vs off, the same ${r.sampling.searches} traffic searches alternating: p50 ${fmt(r.sampling.onP50Ms)} vs ${fmt(r.sampling.offP50Ms)} ms (${fmt(r.sampling.ratio)}×)`,
    '',
    'recall monitor (store.recallReport()):',
    renderTable(
      ['tenant', 'path', 'ef_search', 'tuned on', 'recent recall', 'chunk recall', 'gap'],
      r.monitor.map((m) => [
        m.tenantId,
        m.path,
        ef(m.efSearch),
        m.querySource ?? '-',
        m.recent ? `${m.recent.recall.toFixed(3)} (${m.recent.queries} q)` : '-',
        m.chunks ? `${m.chunks.recall.toFixed(3)} (${m.chunks.queries} q)` : '-',
        m.gap === null ? '-' : m.gap.toFixed(3),
      ]),
    ),
    '',
  ]
}
