import type { VectorStoreQuery } from '@llamaindex/core/vector-store'
import { InvalidArgumentError } from '../../errors.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'
import { GET_CHUNKS_MAX_IDS } from '../../store/index.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { toPgScaleFilter } from './filters.js'

/**
 * pgscale's own settings of a query, as LlamaIndex's `customParams` (`asRetriever({ customParams })`,
 * `asQueryEngine({ customParams })`).
 *
 * ### Examples
 * ```ts
 * index.asRetriever({ mode: VectorStoreQueryMode.MMR, customParams: { mmrFetchK: 50, efSearch: 200 } })
 * ```
 */
export interface PgScaleQueryParams {
  /** `hnsw.ef_search` of this query (default: the tenant's tuned value, else the store's). */
  efSearch?: number
  /** MMR mode: candidates fetched before the diverse pick, k..1000 (default max(20, k)). */
  mmrFetchK?: number
}

/** The query modes the adapter serves; LlamaIndex's others (sparse, svm, …) are refused. */
export type PgScaleQueryMode = 'default' | 'hybrid' | 'mmr'

/** A checked query: what to search for and how, before any embedding is computed or statement sent. */
export interface QueryPlan {
  mode: PgScaleQueryMode
  /** `similarityTopK`; 0 answers with nothing, like SimpleVectorStore. */
  k: number
  filter?: MetadataFilter
  /** `filter` without its array checks, where it has any (see `TranslatedFilters`). */
  relaxed?: MetadataFilter
  /** The node-id allow-list (`docIds`), at most {@link GET_CHUNKS_MAX_IDS}. */
  docIds?: string[]
  /** No row can match (k 0, an empty `or`, an empty `docIds`): nothing is sent. */
  empty: boolean
  /** MMR's lambda: `mmrThreshold`, default 0.5. */
  lambda: number
  /** The query text, for hybrid mode (and to embed when `queryEmbedding` is absent). */
  text?: string
  params: PgScaleQueryParams
}

const MODES: readonly string[] = ['default', 'hybrid', 'mmr']
const PARAM_KEYS: readonly string[] = ['efSearch', 'mmrFetchK']

/**
 * Checks a LlamaIndex `VectorStoreQuery` and plans it: the mode (`default`, `hybrid`, `mmr`; any
 * other is an {@link InvalidArgumentError}), `similarityTopK` (0..1000), the filters in pgscale's
 * language, `docIds`, `mmrThreshold` (0..1), `alpha` (refused: pgscale fuses the hybrid lists by
 * reciprocal rank, unweighted) and `customParams` ({@link PgScaleQueryParams}).
 *
 * ### Examples
 * ```ts
 * planQuery({ mode: VectorStoreQueryMode.DEFAULT, similarityTopK: 5, queryEmbedding }) // { mode: 'default', k: 5, empty: false, ... }
 * ```
 */
export function planQuery(query: VectorStoreQuery): QueryPlan {
  if (query === null || typeof query !== 'object') throw new InvalidArgumentError('query: expected a VectorStoreQuery')
  const mode: string = query.mode ?? 'default'
  if (!MODES.includes(mode)) {
    throw new InvalidArgumentError(`query: mode ${JSON.stringify(mode)} is not served by pgscale; use "default", "hybrid" or "mmr"`)
  }
  const k = assertIntegerIn(query.similarityTopK, 0, 1000, 'query: similarityTopK')
  const { filter, relaxed, matchesNothing } = toPgScaleFilter(query.filters)
  const docIds = checkDocIds(query.docIds)
  const text = checkText(query.queryStr)
  const lambda = query.mmrThreshold ?? 0.5
  if (typeof lambda !== 'number' || !(lambda >= 0 && lambda <= 1)) {
    throw new InvalidArgumentError(
      `query: mmrThreshold (MMR's lambda: 1 relevance, 0 diversity) must be from 0 to 1, got ${String(lambda)}`,
    )
  }
  if (mode === 'hybrid') checkHybrid(query, text, docIds)
  const params = checkParams(query.customParams, k)
  const empty = k === 0 || matchesNothing || docIds?.length === 0
  return { mode: mode as PgScaleQueryMode, k, filter, relaxed, docIds, empty, lambda, text, params }
}

function checkHybrid(query: VectorStoreQuery, text: string | undefined, docIds: string[] | undefined): void {
  if (text === undefined || text.trim() === '') throw new InvalidArgumentError('query: hybrid mode needs queryStr, the words to match')
  if (query.alpha !== undefined) {
    throw new InvalidArgumentError(
      'query: alpha is not supported: pgscale fuses the vector and full-text lists by reciprocal rank, unweighted; leave it undefined',
    )
  }
  if (docIds !== undefined) throw new InvalidArgumentError('query: docIds cannot be combined with hybrid mode; use default or mmr')
}

function checkDocIds(docIds: unknown): string[] | undefined {
  if (docIds === undefined || docIds === null) return undefined
  if (!Array.isArray(docIds) || docIds.some((id) => typeof id !== 'string')) {
    throw new InvalidArgumentError('query: docIds must be an array of node ids (strings)')
  }
  if (docIds.length > GET_CHUNKS_MAX_IDS) {
    throw new InvalidArgumentError(`query: docIds takes at most ${GET_CHUNKS_MAX_IDS} node ids, got ${docIds.length}`)
  }
  return docIds as string[]
}

function checkText(text: unknown): string | undefined {
  if (text === undefined || text === null) return undefined
  if (typeof text !== 'string') throw new InvalidArgumentError('query: queryStr must be a string')
  return text
}

function checkParams(params: unknown, k: number): PgScaleQueryParams {
  if (params === undefined || params === null) return {}
  if (typeof params !== 'object' || Array.isArray(params)) {
    throw new InvalidArgumentError('query: customParams must be { efSearch?, mmrFetchK? } (PgScaleQueryParams)')
  }
  for (const key of Object.keys(params)) {
    if (!PARAM_KEYS.includes(key)) {
      throw new InvalidArgumentError(`query: unknown customParams key ${JSON.stringify(key)}; pgscale takes efSearch and mmrFetchK`)
    }
  }
  // Checked here, not only by the store's search: the docIds path ranks in the adapter.
  const { efSearch, mmrFetchK } = params as PgScaleQueryParams
  if (efSearch !== undefined) assertIntegerIn(efSearch, 1, 1000, 'query: customParams.efSearch')
  if (mmrFetchK !== undefined) assertIntegerIn(mmrFetchK, Math.max(k, 1), 1000, 'query: customParams.mmrFetchK (similarityTopK..1000)')
  return { efSearch, mmrFetchK }
}
