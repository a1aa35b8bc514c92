import type {
  CreateIndexParams,
  DeleteVectorsParams,
  QueryResult,
  QueryVectorParams,
  UpdateVectorParams,
  UpsertVectorParams,
} from '@mastra/core/vector'
import { validateTopK, validateUpsertInput, validateVectorValues } from '@mastra/core/vector'
import { randomUUID } from 'node:crypto'
import type { MetadataFilter } from '../../filter/filter-tree.js'
import type { SearchResult, StoredChunk, UpdateTarget, UpsertChunkInput } from '../../store/index.js'
import type { IndexCatalog, IndexRecord, MastraMetric } from './index-catalog.js'
import { STORE_NAME, userError, type VectorOperation } from './mastra-errors.js'
import { matchesAll, type PgScaleFilterTranslator, type PgScaleVectorFilter } from './mastra-filter.js'

/**
 * `query`'s parameters: Mastra's, and @mastra/pg's `minScore` (only results with `score >
 * minScore`) and `ef` (`hnsw.ef_search` of this query, 1..1000).
 */
export interface PgScaleQueryVectorParams extends QueryVectorParams<PgScaleVectorFilter> {
  /** Only results scoring above this (strictly, as @mastra/pg). Default: none. */
  minScore?: number
  /** `hnsw.ef_search` for this query (1..1000). Default: the tenant's tuned value, else the store's. */
  ef?: number
}

/** A checked query. */
export interface QueryRequest {
  indexName: string
  queryVector?: number[]
  topK: number
  filter?: MetadataFilter
  includeVector: boolean
  minScore?: number
  ef?: number
}

/** Most results a vector query returns (pgscale's `k`); a metadata-only query pages up to 10,000. */
export const MAX_TOP_K = 1000
const MAX_METADATA_TOP_K = 10_000
const METRICS: readonly MastraMetric[] = ['cosine', 'euclidean', 'dotproduct']

/**
 * `createIndex`'s parameters checked before anything is sent: the name (folded to lower case),
 * a dimension of 1..16,000 and a metric (default `cosine`).
 *
 * ### Examples
 * ```ts
 * checkCreateIndex({ indexName: 'Docs', dimension: 384 }, catalog) // { name: 'docs', dimension: 384, metric: 'cosine' }
 * ```
 */
export function checkCreateIndex(params: CreateIndexParams, catalog: IndexCatalog): IndexRecord {
  const { key } = catalog.name(params?.indexName)
  const { dimension, metric = 'cosine' } = params
  const details = { indexName: key }
  if (!Number.isInteger(dimension) || dimension <= 0 || dimension > 16_000) {
    throw userError('CREATE_INDEX', 'INVALID_INPUT', `Dimension must be a positive integer up to 16000, got ${String(dimension)}`, details)
  }
  if (!METRICS.includes(metric)) {
    throw userError(
      'CREATE_INDEX',
      'INVALID_INPUT',
      `metric must be cosine, euclidean or dotproduct, got ${JSON.stringify(metric)}`,
      details,
    )
  }
  return { name: key, dimension, metric }
}

/**
 * `query`'s parameters checked and the filter translated, before anything is sent; Mastra's
 * `validateTopK` decides what a bad `topK` is.
 *
 * ### Examples
 * ```ts
 * checkQuery({ indexName: 'docs', queryVector, topK: 5, filter: { kind: 'faq' } }, translator)
 * ```
 */
export function checkQuery(params: PgScaleQueryVectorParams, filters: PgScaleFilterTranslator): QueryRequest {
  const { indexName, queryVector, topK = 10, includeVector = false, minScore, ef, sparseVector } = params
  const details = { indexName }
  validateTopK(STORE_NAME, topK)
  if (sparseVector !== undefined) throw unsupported('QUERY', 'sparseVector', details)
  if (typeof includeVector !== 'boolean') throw invalid('QUERY', `includeVector must be true or false`, details)
  if (minScore !== undefined && (typeof minScore !== 'number' || Number.isNaN(minScore))) {
    throw invalid('QUERY', `minScore must be a number, got ${String(minScore)}`, details)
  }
  const filter = filters.translate(params.filter)
  if (queryVector === undefined) {
    if (filter === undefined) throw invalid('QUERY', 'Either queryVector or filter must be provided', details)
    if (topK > MAX_METADATA_TOP_K) throw invalid('QUERY', `topK of a metadata-only query is at most ${MAX_METADATA_TOP_K}`, details)
  } else {
    if (!Array.isArray(queryVector) || !queryVector.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw invalid('QUERY', 'queryVector must be an array of finite numbers', details)
    }
    if (topK > MAX_TOP_K) throw invalid('QUERY', `topK is at most ${MAX_TOP_K} (pgscale's k), got ${topK}`, details)
  }
  return { indexName, queryVector, topK, filter, includeVector, minScore, ef }
}

/**
 * `upsert`'s rows and the filter of the rows it replaces, checked with Mastra's validation
 * helpers (empty vectors, lengths of metadata and ids, non-finite values) before anything is sent.
 * Rows without an id get a random UUID; a row without metadata gets `{}`.
 *
 * ### Examples
 * ```ts
 * const { rows, deleteWhere } = checkUpsert({ indexName: 'docs', vectors, metadata, deleteFilter: { source: 'a.pdf' } }, translator)
 * ```
 */
export function checkUpsert(
  params: UpsertVectorParams<PgScaleVectorFilter>,
  filters: PgScaleFilterTranslator,
): { rows: UpsertChunkInput[]; deleteWhere?: MetadataFilter } {
  const { indexName, vectors, metadata, ids, sparseVectors } = params
  validateUpsertInput(STORE_NAME, vectors, metadata, ids)
  validateVectorValues(STORE_NAME, vectors)
  if (sparseVectors !== undefined) throw unsupported('UPSERT', 'sparseVectors', { indexName })
  const rows = vectors.map((embedding, i) => ({
    id: ids?.[i] ?? randomUUID(),
    content: '',
    embedding,
    metadata: (metadata?.[i] ?? {}) as Record<string, unknown>,
  }))
  const deleteWhere = filters.translate(params.deleteFilter)
  if (deleteWhere !== undefined && matchesAll(deleteWhere)) {
    throw userError('UPSERT', 'EMPTY_FILTER', 'deleteFilter matches every vector; use deleteIndex to delete all vectors', { indexName })
  }
  return { rows, deleteWhere }
}

/**
 * `updateVector`'s target and update, with @mastra/pg's rules and messages: exactly one of `id`
 * and `filter`, something to update, and never the empty filter.
 *
 * ### Examples
 * ```ts
 * checkUpdate({ indexName: 'docs', filter: { userId: 'u1' }, update: { metadata: { status: 'archived' } } }, translator)
 * ```
 */
export function checkUpdate(
  params: UpdateVectorParams<PgScaleVectorFilter>,
  filters: PgScaleFilterTranslator,
): { target: UpdateTarget; update: { metadata?: Record<string, unknown>; embedding?: number[] } } {
  const { indexName, id, filter, update } = params as { indexName: string; id?: string; filter?: PgScaleVectorFilter; update?: any }
  const details = { indexName }
  if (id != null && filter != null) {
    throw userError('UPDATE_VECTOR', 'MUTUALLY_EXCLUSIVE', 'Cannot provide both id and filter - they are mutually exclusive', details)
  }
  if (id == null && filter == null) throw userError('UPDATE_VECTOR', 'NO_TARGET', 'Either id or filter must be provided', details)
  if (update == null || (update.vector === undefined && update.metadata === undefined)) {
    throw userError('UPDATE_VECTOR', 'NO_UPDATES', 'No updates provided', details)
  }
  const change = { metadata: update.metadata, embedding: update.vector }
  if (id != null) return { target: { ids: [id] }, update: change }
  const translated = filters.translate(filter)
  if (matchesAll(translated)) throw userError('UPDATE_VECTOR', 'EMPTY_FILTER', 'Cannot update with empty filter', details)
  return { target: { filter: translated! }, update: change }
}

/**
 * `deleteVectors`' target, with @mastra/pg's rules and messages: exactly one of `ids` (not empty)
 * and `filter` (not empty; `deleteIndex` deletes everything).
 *
 * ### Examples
 * ```ts
 * checkDeleteVectors({ indexName: 'docs', filter: { source_id: 'a.pdf' } }, translator) // { filter: { source_id: 'a.pdf' } }
 * ```
 */
export function checkDeleteVectors(
  params: DeleteVectorsParams<PgScaleVectorFilter>,
  filters: PgScaleFilterTranslator,
): { ids: string[] } | { filter: MetadataFilter } {
  const { indexName, ids, filter } = params
  const details = { indexName }
  if (ids == null && filter == null) {
    throw userError('DELETE_VECTORS', 'NO_TARGET', 'Either filter or ids must be provided', details)
  }
  if (ids != null && filter != null) {
    throw userError('DELETE_VECTORS', 'MUTUALLY_EXCLUSIVE', 'Cannot provide both filter and ids - they are mutually exclusive', details)
  }
  if (ids != null) {
    if (!Array.isArray(ids)) throw invalid('DELETE_VECTORS', 'ids must be an array of vector ids', details)
    if (ids.length === 0) throw userError('DELETE_VECTORS', 'EMPTY_IDS', 'Cannot delete with empty ids array', details)
    return { ids: [...new Set(ids)] }
  }
  const translated = filters.translate(filter)
  if (matchesAll(translated)) {
    throw userError('DELETE_VECTORS', 'EMPTY_FILTER', 'Cannot delete with empty filter. Use deleteIndex to delete all vectors.', details)
  }
  return { filter: translated! }
}

/**
 * A score where higher is more similar, from pgscale's distance, as @mastra/pg computes it:
 * cosine `1 − distance` (cosine similarity), euclidean `1 / (1 + distance)`, dotproduct the inner
 * product (pgscale's distance is `<#>`, its negation).
 *
 * ### Examples
 * ```ts
 * similarity('cosine', 0.25) // 0.75
 * ```
 */
export function similarity(metric: MastraMetric, distance: number): number {
  if (metric === 'cosine') return 1 - distance
  if (metric === 'euclidean') return 1 / (1 + distance)
  return -distance
}

/**
 * A search hit or a stored chunk as Mastra's `QueryResult`: the document id as `id`, metadata, the
 * score (0 for a metadata-only query, as @mastra/pg), the vector when asked for.
 *
 * ### Examples
 * ```ts
 * const results = hits.map((hit) => toQueryResult(hit, similarity('cosine', hit.distance), false))
 * ```
 */
export function toQueryResult(row: SearchResult | StoredChunk, score: number, includeVector: boolean): QueryResult {
  const result: QueryResult = { id: row.documentId, score, metadata: row.metadata }
  if (includeVector && row.embedding) result.vector = row.embedding
  return result
}

/** A query's results as Mastra returns them: scored by the index's metric, above `minScore` if given. */
export function scoredResults(record: IndexRecord, hits: readonly SearchResult[], request: QueryRequest): QueryResult[] {
  const results = hits.map((hit) => toQueryResult(hit, similarity(record.metric, hit.distance), request.includeVector))
  return request.minScore === undefined ? results : results.filter((r) => r.score > request.minScore!)
}

function invalid(operation: VectorOperation, text: string, details: Record<string, string>) {
  return userError(operation, 'INVALID_INPUT', text, details)
}

function unsupported(operation: VectorOperation, what: string, details: Record<string, string>) {
  return userError(operation, 'UNSUPPORTED', `pgscale does not store sparse vectors: ${what} is not supported`, details)
}
