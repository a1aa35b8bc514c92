import { renderRealQueries } from './render-real-queries.js'
import { renderCitusPlacement } from '../report/citus-placement.js'
import { renderHeader } from '../report/header.js'
import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import { valueRange } from '../report/value-range.js'
import type { RagBenchReport } from './rag-report.js'

const mb = (b: number) => fmt(b / 2 ** 20)

/**
 * The human report of rag-bench: header, one table per phase, findings.
 *
 * ### Examples
 * ```ts
 * console.log(renderRagReport(await runRagBench(provisioned, config, log)))
 * ```
 */
export function renderRagReport(r: RagBenchReport): string {
  const c = r.tenants.classes
  const out: string[] = [
    renderHeader(r),
    '',
    `tenants: ${r.tenants.count.toLocaleString('en-US')} (${r.tenants.largest.toLocaleString('en-US')} … ${r.tenants.smallest.toLocaleString('en-US')} chunks; small ${c.small}, medium ${c.medium}, large ${c.large}), ${r.tenants.chunks.toLocaleString('en-US')} chunks`,
    '',
    ...phaseTable(r),
    ...sizeTable(r),
    ...searchTable(r),
    ...tunedTable(r),
    ...(r.realQueries ? renderRealQueries(r.realQueries) : []),
    ...hybridTable(r),
    ...writesTable(r),
  ]
  if (r.findings?.length) out.push('7. findings', ...r.findings.map((f) => `  - ${f}`), '')
  if (r.citus) out.push(...renderCitusPlacement(r.citus), '')
  out.push(`process: peak RSS ${r.process.peakRssMB} MB, ${fmt(r.process.seconds)} s in all`)
  return out.join('\n')
}

/** Ingest rates and index builds. */
function phaseTable(r: RagBenchReport): string[] {
  if (!(r.ingest || r.index || r.ingestIndexed)) return []
  const out: string[] = []
  const rows: string[][] = []
  if (r.ingest)
    rows.push([
      '1. ingest, no ANN index (bulkIngest, binary COPY)',
      `${fmt(r.ingest.chunksPerSecond)} chunks/s`,
      `${fmt(r.ingest.seconds)} s`,
    ])
  if (r.index?.shared) rows.push(['2. shared HNSW build', `${mb(r.index.shared.bytes)} MB`, `${fmt(r.index.shared.seconds)} s`])
  if (r.index?.tiered)
    rows.push([
      `2. tenant HNSW indexes (optimize: ${r.index.tiered.tenantIndexes}${r.index.tiered.droppedSharedIndex ? ', unused shared index dropped' : ''})`,
      `${mb(r.index.tiered.bytes)} MB`,
      `${fmt(r.index.tiered.seconds)} s`,
    ])
  if (r.ingestIndexed) {
    rows.push([
      `3. ingest through ${r.ingestIndexed.indexes.length} HNSW index(es)`,
      `${fmt(r.ingestIndexed.chunksPerSecond)} chunks/s`,
      r.ingestIndexed.ratioToUnindexed === null ? '' : `${fmt(r.ingestIndexed.ratioToUnindexed)}× slower`,
    ])
  }
  out.push(renderTable(['phase', 'rate / size', 'time'], rows), '')
  return out
}

/** Heap, TOAST and index sizes. */
function sizeTable(r: RagBenchReport): string[] {
  if (!r.index) return []
  const out: string[] = []
  const s = r.index.sizes
  out.push(
    renderTable(
      ['size (MB)', 'heap', 'TOAST', 'shared HNSW', 'tenant HNSW', 'btree (pk)', 'GIN', 'total'],
      [['', mb(s.heap), mb(s.toast), mb(s.sharedHnsw), mb(s.tenantHnsw), mb(s.btree), mb(s.gin), mb(s.total)]],
    ),
    '',
  )
  return out
}

/** Recall and latency per strategy, class and setting. */
function searchTable(r: RagBenchReport): string[] {
  if (!r.search) return []
  const out: string[] = []
  out.push(
    renderTable(
      ['4. search k=10', 'class', 'chunks', 'ef', 'iterative', 'recall@10', 'by id', 'p50 ms', 'p95 ms', 'p99 ms', '< k', 'plan'],
      r.search.rows.map((x) => [
        x.strategy,
        x.tenantClass,
        valueRange(x.tenantChunks.min, x.tenantChunks.max, String),
        String(x.efSearch),
        x.iterativeScan,
        x.recallAt10.toFixed(3),
        x.recallAt10ById.toFixed(3),
        fmt(x.latencyMs.p50),
        fmt(x.latencyMs.p95),
        fmt(x.latencyMs.p99),
        `${x.shortResults}/${x.queries}`,
        x.plans.join(' / '),
      ]),
    ),
    '',
  )
  return out
}

/** Recall at each tenant's tuned setting after optimize(). */
function tunedTable(r: RagBenchReport): string[] {
  if (!r.tunedRecall?.tenants.length) return []
  const out: string[] = []
  const tuning = new Map((r.index?.tiered?.tuning.tenants ?? []).map((t) => [t.tenantId, t]))
  out.push(
    renderTable(
      ['4b. after optimize() (tuned)', 'chunks', 'path', 'ef_search', 'recall@10', 'by id', 'p50 ms', 'p95 ms', 'exact p50 ms'],
      r.tunedRecall.tenants.map((x) => {
        const t = tuning.get(x.tenantId)
        return [
          x.tenantId,
          String(x.rows),
          t?.path ?? '',
          t?.efSearch === null || t === undefined
            ? ''
            : String(t.efSearch) + (t.rebuiltWith ? ` (m ${t.rebuiltWith.m}, efc ${t.rebuiltWith.efConstruction})` : ''),
          x.recall.toFixed(3),
          x.recallById.toFixed(3),
          fmt(x.searchP50Ms),
          fmt(x.searchP95Ms),
          fmt(x.exactP50Ms),
        ]
      }),
    ),
    '',
  )
  return out
}

/** Hybrid beside vector-only search. */
function hybridTable(r: RagBenchReport): string[] {
  if (!r.hybrid) return []
  const out: string[] = []
  out.push(
    renderTable(
      ['5. hybrid', 'p50 ms', 'p95 ms'],
      [
        ['vector only (search)', fmt(r.hybrid.vectorMs.p50), fmt(r.hybrid.vectorMs.p95)],
        ['hybrid (vector ⊕ full text, RRF)', fmt(r.hybrid.hybridMs.p50), fmt(r.hybrid.hybridMs.p95)],
      ],
    ),
    '',
  )
  return out
}

/** replaceDocument and deleteDocument from concurrent writers. */
function writesTable(r: RagBenchReport): string[] {
  if (!r.writes) return []
  const out: string[] = []
  out.push(
    renderTable(
      [`6. writes (${r.writes.writers} writers, ${r.writes.hnswIndexes.length} HNSW indexes)`, 'p50 ms', 'p95 ms', 'per second', 'index'],
      [
        [
          'replaceDocument (20 chunks)',
          fmt(r.writes.replaceDocumentMs.p50),
          fmt(r.writes.replaceDocumentMs.p95),
          fmt(r.writes.replacesPerSecond),
          'primary key',
        ],
        [
          'deleteDocument',
          fmt(r.writes.deleteDocumentMs.p50),
          fmt(r.writes.deleteDocumentMs.p95),
          fmt(r.writes.deletesPerSecond),
          r.writes.deletePlan.join(', '),
        ],
      ],
    ),
    `waits seen during the writes (${r.writes.waits.samples} samples of pg_stat_activity): ` +
      (Object.entries(r.writes.waits.events)
        .map(([event, n]) => `${event} ${n}`)
        .join(', ') || 'none'),
    '',
  )
  return out
}
