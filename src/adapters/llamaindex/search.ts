import { matchesFilter } from '../../filter/filter-reference.js'
import { maximalMarginalRelevance, type FoundChunk, type SearchResult, type StoredChunk, type TenantStore } from '../../store/index.js'
import type { QueryPlan } from './query-plan.js'

/** A chunk found by a query and its similarity to the query: 1 − cosine distance. */
export interface ScoredChunk {
  chunk: FoundChunk
  similarity: number
}

/**
 * Runs a planned query on the tenant's rows: `default` through `search` (the tenant's HNSW index
 * or exact scan, filters kept exact), `mmr` through `maxMarginalRelevanceSearch` (`mmrThreshold`
 * as lambda), `hybrid` through `hybridSearch` (vector and full-text lists fused by reciprocal rank;
 * the hits in that order). Every hit scored as 1 − its cosine distance.
 *
 * A `default` query whose filter has array checks searches with the relaxed filter first (pgscale's
 * plain operators, cheaper): when every hit passes the exact filter (pgscale's reference evaluator
 * on the hit's metadata), they are the exact filter's nearest rows too — the exact filter's rows
 * are among the relaxed filter's — and that is the answer; otherwise (a hit whose value is an array
 * holding the value) the search runs again with the exact filter.
 *
 * ### Examples
 * ```ts
 * const hits = await searchTenant(acme, planQuery(query), embedding) // nearest first
 * ```
 */
export async function searchTenant(tenant: TenantStore, plan: QueryPlan, embedding: number[]): Promise<ScoredChunk[]> {
  const { k, filter } = plan
  const efSearch = plan.params.efSearch
  let hits: SearchResult[]
  if (plan.mode === 'mmr') {
    hits = await tenant.maxMarginalRelevanceSearch(embedding, { k, filter, efSearch, lambda: plan.lambda, fetchK: plan.params.mmrFetchK })
  } else if (plan.mode === 'hybrid') {
    hits = await tenant.hybridSearch({ embedding, text: plan.text ?? '', k, filter, efSearch })
  } else {
    hits = await nearest(tenant, plan, embedding)
  }
  return hits.map((h) => ({
    chunk: { documentId: h.documentId, chunkIndex: h.chunkIndex, content: h.content, metadata: h.metadata },
    similarity: 1 - h.distance,
  }))
}

/** The default mode's search: on the relaxed filter where it has one and its hits all pass, else on the exact one. */
async function nearest(tenant: TenantStore, plan: QueryPlan, embedding: number[]): Promise<SearchResult[]> {
  const { k, filter, relaxed } = plan
  const efSearch = plan.params.efSearch
  if (filter !== undefined && relaxed !== undefined) {
    const hits = await tenant.search(embedding, { k, filter: relaxed, efSearch })
    if (hits.every((hit) => matchesFilter(hit.metadata, filter))) return hits
  }
  return tenant.search(embedding, { k, filter, efSearch })
}

/**
 * Runs a planned query restricted to `docIds` (node ids, which are the tenant's document ids):
 * those rows are read by id (`getChunks`, tenant-scoped: another tenant's ids are simply absent),
 * kept where the filter matches them (pgscale's reference evaluator, the same rules as its SQL), and
 * ranked exactly by cosine similarity (`default`) or picked by MMR (`mmr`).
 *
 * ### Examples
 * ```ts
 * const hits = await searchDocIds(acme, { ...plan, docIds: ['n-1', 'n-7'] }, embedding)
 * ```
 */
export async function searchDocIds(tenant: TenantStore, plan: QueryPlan, embedding: number[]): Promise<ScoredChunk[]> {
  const found = await tenant.getChunks(plan.docIds ?? [], { includeEmbedding: true })
  const filter = plan.filter
  const rows = filter === undefined ? found : found.filter((c) => matchesFilter(c.metadata, filter))
  const scored = rows.map((row) => ({ row, similarity: cosineSimilarity(embedding, row.embedding ?? []) }))
  if (plan.mode === 'mmr') {
    const fetchK = Math.min(scored.length, plan.params.mmrFetchK ?? scored.length)
    const candidates = [...scored].sort((a, b) => b.similarity - a.similarity).slice(0, fetchK)
    const picked = maximalMarginalRelevance(
      embedding,
      candidates.map((s) => s.row.embedding ?? []),
      plan.k,
      plan.lambda,
    )
    return picked.map((i) => withoutEmbedding(candidates[i]!))
  }
  return scored
    .sort((a, b) => b.similarity - a.similarity)
    .slice(0, plan.k)
    .map(withoutEmbedding)
}

function withoutEmbedding({ row, similarity }: { row: StoredChunk; similarity: number }): ScoredChunk {
  const { embedding: _embedding, ...chunk } = row
  return { chunk, similarity }
}

/** Cosine similarity (1 − cosine distance), 0 where a vector is zero. */
function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i] ?? 0
    dot += x * y
    na += x * x
    nb += y * y
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb)
}
