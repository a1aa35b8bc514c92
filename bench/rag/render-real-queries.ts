import type { FilterTuning } from '../../src/index.js'
import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import type { CorpusFiltersReport } from './phases/corpus-filters.js'
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

/**
 * The filtered phase (`--corpus DIR --filtered`) as text: per tenant, the unfiltered short queries
 * against the exact scan, then every rung — field, whether it follows the content, selectivity,
 * auto's recall and p50/p95 beside the exact filtered scan, and the targets each met or missed.
 *
 * ### Examples
 * ```ts
 * if (report.corpusFilters) console.log(renderCorpusFilters(report.corpusFilters).join('\n'))
 * ```
 */
export function renderCorpusFilters(r: CorpusFiltersReport): string[] {
  const pct = (x: number) => `${(x * 100).toFixed(x < 0.01 ? 2 : 1)}%`
  const t = r.targets
  return [
    `4d. filtered queries on real text (${r.queries}); ${r.traffic.searches} traffic searches (${r.traffic.filtered} filtered) before optimize(), re-tune ${fmt(r.retune.seconds)} s`,
    renderTable(
      [
        'tenant',
        'chunks',
        'held-out',
        'ef_search',
        'filtered budget',
        `recall (≥ ${t.unfilteredRecall})`,
        'p50 ms',
        'exact p50 ms',
        `p50 ÷ exact (≤ ${t.unfilteredRatioToExact})`,
        'met',
      ],
      r.tenants.map((x) => [
        x.tenantId,
        String(x.chunks),
        String(x.evalQueries),
        x.tuning.exact ? 'exact' : String(x.tuning.efSearch ?? 'default'),
        budget(x.tuning.filter),
        x.unfiltered.recall.toFixed(3),
        fmt(x.unfiltered.p50Ms),
        fmt(x.unfiltered.exactP50Ms),
        `${fmt(x.unfiltered.ratioToExact)}×`,
        x.unfiltered.meetsTarget ? 'yes' : 'no',
      ]),
    ),
    '',
    renderTable(
      [
        'tenant',
        'rung',
        'field',
        'follows text',
        'selectivity median (min-max)',
        `recall auto (≥ ${t.filteredRecall})`,
        'p50 ms',
        'p95 ms',
        'exact p50 ms',
        `÷ unfiltered p50 (≤ ${t.filteredLatencyFactor})`,
        'above exact threshold',
        '< k',
        'missed',
      ],
      r.tenants.flatMap((x) =>
        x.rungs.map((g) => [
          x.tenantId,
          g.key,
          g.field,
          g.follows ? 'yes' : 'no',
          `${pct(g.selectivity.median)} (${pct(g.selectivity.min)}-${pct(g.selectivity.max)})`,
          g.recall.toFixed(3),
          fmt(g.p50Ms),
          fmt(g.p95Ms),
          fmt(g.exactP50Ms),
          `${fmt(g.ratioToUnfiltered)}×`,
          `${g.aboveExactBelow}/${g.queries}`,
          `${g.short}/${g.queries}`,
          [g.meetsRecall ? '' : 'recall', g.meetsLatency ? '' : 'latency'].filter(Boolean).join(', ') || '-',
        ]),
      ),
    ),
    `load average ${r.load.start.map((x) => x.toFixed(2)).join(' ')} at the start, ${r.load.end.map((x) => x.toFixed(2)).join(' ')} at the end`,
    '',
  ]
}

/** A tenant's filtered tuning in a few characters: candidates, exact threshold, named filters. */
function budget(f: FilterTuning | null): string {
  if (!f) return '-'
  return `${f.candidates} cand., exact ≤ ${f.exactBelow}${f.exactFilters?.length ? `, ${f.exactFilters.length} named` : ''} (${f.source})`
}
