import { valueRange } from '../report/value-range.js'
import type { RagBenchReport, SearchRow, TenantClass } from './rag-report.js'

const pct = (x: number) => `${(x * 100).toFixed(1)}%`
/** Decisions use the precision the report prints (3 decimals), so a printed 0.980 counts as 0.98. */
const meets = (recall: number) => Math.round(recall * 1000) >= 980
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`
const ms = (x: number) => `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms`
const chunkRange = (r: { min: number; max: number }) => valueRange(r.min, r.max, (n) => n.toLocaleString('en-US'))

/**
 * Plain sentences derived from a report's numbers, like the seed's "what it means for a
 * deployment". Each sentence appears only when the phases it needs ran.
 *
 * ### Examples
 * ```ts
 * ragFindings(report) // ['Tenants up to 300 chunks never used the shared HNSW index ...', ...]
 * ```
 */
export function ragFindings(r: FindingInput): string[] {
  const rows = r.search?.rows ?? []
  const shared = rows.filter((x) => x.strategy === 'shared')
  const tiered = rows.filter((x) => x.strategy === 'tiered')
  return [
    ...exactOnlyTenants(r, shared),
    ...sharedIndexRecall(shared, tiered),
    ...shortResults(shared),
    ...recommendationByClass(rows),
    ...droppedSharedIndex(r),
    ...ingestWithIndex(r),
    ...hybridCost(r),
    ...writeCost(r),
  ]
}

type FindingInput = Pick<RagBenchReport, 'search' | 'index' | 'ingest' | 'ingestIndexed' | 'hybrid' | 'writes' | 'tenants'>
const CLASSES: TenantClass[] = ['small', 'medium', 'large']

/** 1. Which tenants the shared index served at all. */
function exactOnlyTenants(r: FindingInput, shared: SearchRow[]): string[] {
  const exactOnly = CLASSES.filter((cls) => {
    const of = shared.filter((x) => x.tenantClass === cls)
    return of.length > 0 && of.every((x) => x.plans.every((p) => p === 'btree + exact sort'))
  })
  if (!exactOnly.length) return []
  const upTo = Math.max(...shared.filter((x) => exactOnly.includes(x.tenantClass)).map((x) => x.tenantChunks.max))
  const cost = r.index?.shared?.bytes
  const allExact = exactOnly.length === new Set(shared.map((x) => x.tenantClass)).size
  return [
    `Tenants up to ${upTo.toLocaleString('en-US')} chunks never used the shared HNSW index: the planner read the primary key and sorted exactly (recall 1.0)` +
      (cost ? `; the index costs ${mb(cost)}${allExact ? ' and served no tenant measured here' : ''}.` : '.'),
  ]
}

/** 2. Recall of the shared index for the tenants it does serve, and what restores it. */
function sharedIndexRecall(shared: SearchRow[], tiered: SearchRow[]): string[] {
  return (['large', 'medium'] as const).flatMap((cls) => {
    const served = shared.filter((x) => x.tenantClass === cls && x.plans.includes('shared HNSW index'))
    if (!served.length) return []
    const lowestEf = Math.min(...served.map((x) => x.efSearch))
    const base = served.find((x) => x.efSearch === lowestEf && x.iterativeScan === 'off') ?? served.find((x) => x.efSearch === lowestEf)!
    const fixes: string[] = []
    const goodShared = served.filter((x) => meets(x.recallAt10)).sort((a, b) => a.efSearch - b.efSearch)[0]
    if (goodShared)
      fixes.push(
        `ef_search ${goodShared.efSearch}${goodShared.iterativeScan === 'relaxed' ? ' with relaxed iterative scan' : ''} reaches ${goodShared.recallAt10.toFixed(3)} at ${ms(goodShared.latencyMs.p50)} p50`,
      )
    else {
      const best = [...served].sort((a, b) => b.recallAt10 - a.recallAt10)[0]!
      fixes.push(
        `no ef_search measured on the shared index reaches 0.98 (best ${best.recallAt10.toFixed(3)} at ef_search ${best.efSearch})`,
      )
    }
    const own = tiered.filter((x) => x.tenantClass === cls).sort((a, b) => a.efSearch - b.efSearch)[0]
    if (own)
      fixes.push(`their own index (tiered) gives ${own.recallAt10.toFixed(3)} at ef_search ${own.efSearch}, ${ms(own.latencyMs.p50)} p50`)
    return [
      `On the shared HNSW index at ef_search ${lowestEf}, ${cls} tenants (${chunkRange(base.tenantChunks)} chunks) lost ` +
        `${pct(1 - base.recallAt10)} of the true top 10 (recall ${base.recallAt10.toFixed(3)}); ${fixes.join('; ')}.`,
    ]
  })
}

/** 3. Filtered scans that returned fewer than k rows. */
function shortResults(shared: SearchRow[]): string[] {
  const short = shared.filter((x) => x.shortResults > 0)
  if (!short.length) return []
  const worst = [...short].sort((a, b) => b.shortResults / b.queries - a.shortResults / a.queries)[0]!
  return [
    `A filtered walk of the shared graph returned fewer than k rows for ${worst.shortResults} of ${worst.queries} ${worst.tenantClass}-tenant queries ` +
      `(ef_search ${worst.efSearch}, iterative scan ${worst.iterativeScan}); store.search falls back to an exact scan so it never returns silently fewer.`,
  ]
}

/** 4. Recommendation by class from the best measured configuration. */
function recommendationByClass(rows: SearchRow[]): string[] {
  const recommend = CLASSES.flatMap((cls) => {
    const candidates = rows.filter((x) => x.tenantClass === cls && meets(x.recallAt10))
    if (!candidates.length) return []
    const best = [...candidates].sort((a, b) => a.latencyMs.p50 - b.latencyMs.p50)[0]!
    const how = best.plans.includes('tenant HNSW index')
      ? `its own HNSW index (ef_search ${best.efSearch})`
      : best.plans.every((p) => p === 'btree + exact sort')
        ? 'the primary key and an exact sort (no ANN index needed)'
        : `the shared index at ef_search ${best.efSearch}${best.iterativeScan === 'relaxed' ? ', relaxed iterative scan' : ''}`
    return [`${cls} (${chunkRange(best.tenantChunks)} chunks): ${how}, recall ${best.recallAt10.toFixed(3)}, ${ms(best.latencyMs.p50)} p50`]
  })
  return recommend.length
    ? [`What to set, by tenant size (fastest configuration measured with recall@10 ≥ 0.98): ${recommend.join('; ')}.`]
    : []
}

/** 4b. The shared index that tiering made unnecessary. */
function droppedSharedIndex(r: FindingInput): string[] {
  if (!r.index?.tiered?.droppedSharedIndex || !r.index.shared) return []
  return [
    `After tiering, the shared HNSW index served no tenant and was dropped: ${mb(r.index.shared.bytes)} and its ingest cost saved (every chunk written through it is an HNSW insert).`,
  ]
}

/** 5. Ingest with and without the index. */
function ingestWithIndex(r: FindingInput): string[] {
  if (!r.ingest || !r.ingestIndexed || r.ingestIndexed.ratioToUnindexed === null || !r.ingestIndexed.indexes.length) return []
  return [
    `Ingest ran ${r.ingestIndexed.ratioToUnindexed.toFixed(1)}× faster without the HNSW index (${Math.round(r.ingest.chunksPerSecond).toLocaleString('en-US')} vs ` +
      `${Math.round(r.ingestIndexed.chunksPerSecond).toLocaleString('en-US')} chunks/s): build the index after a bulk load, or pass bulkIngest({ indexStrategy: 'rebuild' }).`,
  ]
}

/** 6. Hybrid search cost. */
function hybridCost(r: FindingInput): string[] {
  if (!r.hybrid) return []
  return [
    `Hybrid search (vector ⊕ full text, RRF) cost ${ms(r.hybrid.hybridMs.p50)} p50 beside ${ms(r.hybrid.vectorMs.p50)} for vector-only ` +
      `(+${ms(Math.max(0, r.hybrid.hybridMs.p50 - r.hybrid.vectorMs.p50))}).`,
  ]
}

/** 7. Writes. */
function writeCost(r: FindingInput): string[] {
  if (!r.writes) return []
  return [
    `With ${r.writes.writers} writers, replaceDocument (each chunk an insert into the HNSW index that covers it) took ${ms(r.writes.replaceDocumentMs.p50)} p50 ` +
      `(p95 ${ms(r.writes.replaceDocumentMs.p95)}, ${Math.round(r.writes.replacesPerSecond ?? 0)}/s) and deleteDocument ${ms(r.writes.deleteDocumentMs.p50)} p50 ` +
      `(${Math.round(r.writes.deletesPerSecond ?? 0)}/s), served by ${r.writes.deletePlan.join(', ') || 'no index (check the plan!)'}; ` +
      `HNSW indexes present: ${r.writes.hnswIndexes?.length ?? 0}.`,
  ]
}

/** The rows of one strategy and class, by ef_search then iterative scan. */
export function rowsOf(rows: readonly SearchRow[], strategy: string, cls: TenantClass): SearchRow[] {
  return rows
    .filter((x) => x.strategy === strategy && x.tenantClass === cls)
    .sort((a, b) => a.efSearch - b.efSearch || a.iterativeScan.localeCompare(b.iterativeScan))
}
