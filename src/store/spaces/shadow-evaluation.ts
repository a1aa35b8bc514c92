import { InvalidArgumentError } from '../../errors.js'
import type { SearchResult, TenantStore } from '../tenant/index.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import type { EmbedTexts } from './backfill.js'

/** Options of {@link PgVectorStore.compareSpaces}. */
export interface CompareSpacesOptions {
  /** The space to compare with the tenant's active one (filled by `migrateTenant`). */
  to: string
  /**
   * Query texts, as users ask them (from the app's logs: pgscale keeps no query text — its query
   * sample holds embeddings of the active space only, so the app supplies the texts and both models).
   */
  queries: readonly string[]
  /** The active space's model and the new one's. */
  embed: { from: EmbedTexts; to: EmbedTexts }
  /** Results per query, 1..100. Default 10. */
  k?: number
  /** Relevant chunks per query (`documentId#chunkIndex`), in the order of `queries`: recall@k and nDCG@k per space. */
  judgments?: ReadonlyArray<readonly string[]>
}

/** One space's figures over the queries that have judgments. */
export interface SpaceQuality {
  /** Mean share of a query's relevant chunks in its top k. */
  recall: number
  /** Mean nDCG@k (binary relevance). */
  ndcg: number
}

/** What {@link PgVectorStore.compareSpaces} measured. */
export interface SpaceComparison {
  from: string
  to: string
  queries: number
  k: number
  /** Mean share of the active space's top k that the new space's top k also holds. */
  overlap: number
  /** Mean Spearman correlation of the ranks of the chunks both top k hold (queries with at least 2 in common). */
  rankCorrelation: number | null
  /** Per query: the overlap and the common chunks' rank correlation. */
  perQuery: Array<{ query: string; overlap: number; rankCorrelation: number | null }>
  /** With `judgments`: recall@k and nDCG@k of each space. */
  quality?: { from: SpaceQuality; to: SpaceQuality }
}

/**
 * Both spaces' answers to the same questions, side by side: each query embedded by each space's
 * model and searched in that space (the tenant's tuning and indexes apply), then the overlap of
 * the two top k, the rank correlation of what they share, and — with judgments — recall@k and
 * nDCG@k of each. Reads only.
 *
 * ### Examples
 * ```ts
 * const report = await compareTenantSpaces(current, next, 'default', 'v2', { to: 'v2', queries, embed: { from: oldModel, to: newModel } })
 * ```
 */
export async function compareTenantSpaces(
  from: TenantStore,
  to: TenantStore,
  fromName: string,
  toName: string,
  options: CompareSpacesOptions,
): Promise<SpaceComparison> {
  const k = assertIntegerIn(options.k ?? 10, 1, 100, 'compareSpaces: k')
  if (!Array.isArray(options.queries) || options.queries.length === 0 || options.queries.some((q) => typeof q !== 'string' || q === '')) {
    throw new InvalidArgumentError('compareSpaces: queries must be a non-empty array of non-empty strings')
  }
  if (typeof options.embed?.from !== 'function' || typeof options.embed?.to !== 'function') {
    throw new InvalidArgumentError("compareSpaces: embed must be { from, to }, the two spaces' embedding functions")
  }
  const judged = options.judgments
  if (judged !== undefined && (!Array.isArray(judged) || judged.length !== options.queries.length)) {
    throw new InvalidArgumentError('compareSpaces: judgments must hold one list of relevant chunk keys per query')
  }
  const queries = [...options.queries]
  const [fromVectors, toVectors] = await Promise.all([options.embed.from(queries), options.embed.to(queries)])
  const perQuery: SpaceComparison['perQuery'] = []
  const quality = { from: { recall: 0, ndcg: 0 }, to: { recall: 0, ndcg: 0 } }
  let judgedCount = 0
  for (const [i, query] of queries.entries()) {
    const a = keysOf(await from.search(Array.from(fromVectors[i]!), { k }))
    const b = keysOf(await to.search(Array.from(toVectors[i]!), { k }))
    perQuery.push({ query, overlap: overlapAt(a, b, k), rankCorrelation: rankCorrelation(a, b) })
    const relevant = judged?.[i]
    if (relevant && relevant.length > 0) {
      judgedCount++
      quality.from.recall += recallAt(a, relevant)
      quality.to.recall += recallAt(b, relevant)
      quality.from.ndcg += ndcgAt(a, relevant, k)
      quality.to.ndcg += ndcgAt(b, relevant, k)
    }
  }
  const correlations = perQuery.map((q) => q.rankCorrelation).filter((c): c is number => c !== null)
  return {
    from: fromName,
    to: toName,
    queries: queries.length,
    k,
    overlap: mean(perQuery.map((q) => q.overlap)),
    rankCorrelation: correlations.length ? mean(correlations) : null,
    perQuery,
    ...(judgedCount > 0
      ? {
          quality: {
            from: { recall: quality.from.recall / judgedCount, ndcg: quality.from.ndcg / judgedCount },
            to: { recall: quality.to.recall / judgedCount, ndcg: quality.to.ndcg / judgedCount },
          },
        }
      : {}),
  }
}

const keysOf = (hits: readonly SearchResult[]) => hits.map((h) => `${h.documentId}#${h.chunkIndex}`)
const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length

/**
 * The share of `k` that two rankings have in common.
 *
 * ### Examples
 * ```ts
 * overlapAt(['a', 'b', 'c'], ['c', 'd', 'a'], 3) // 2/3
 * ```
 */
export function overlapAt(a: readonly string[], b: readonly string[], k: number): number {
  const inB = new Set(b.slice(0, k))
  return a.slice(0, k).filter((x) => inB.has(x)).length / k
}

/**
 * Spearman's correlation of the ranks two rankings give the items they share (null under 2).
 *
 * ### Examples
 * ```ts
 * rankCorrelation(['a', 'b', 'c'], ['a', 'b', 'c']) // 1
 * rankCorrelation(['a', 'b', 'c'], ['c', 'b', 'a']) // -1
 * ```
 */
export function rankCorrelation(a: readonly string[], b: readonly string[]): number | null {
  const inB = new Map(b.map((x, i) => [x, i]))
  const shared = a.filter((x) => inB.has(x))
  const n = shared.length
  if (n < 2) return null
  const rankB = [...shared].sort((x, y) => inB.get(x)! - inB.get(y)!)
  const posB = new Map(rankB.map((x, i) => [x, i]))
  const d2 = shared.reduce((s, x, i) => s + (i - posB.get(x)!) ** 2, 0)
  return 1 - (6 * d2) / (n * (n * n - 1))
}

/**
 * The share of the relevant items found in a ranking.
 *
 * ### Examples
 * ```ts
 * recallAt(['a', 'x', 'b'], ['a', 'b', 'c', 'd']) // 0.5
 * ```
 */
export function recallAt(ranking: readonly string[], relevant: readonly string[]): number {
  const hits = new Set(ranking)
  return relevant.filter((r) => hits.has(r)).length / relevant.length
}

/**
 * nDCG@k with binary relevance: DCG of the ranking over the DCG of an ideal one.
 *
 * ### Examples
 * ```ts
 * ndcgAt(['x', 'a'], ['a'], 2) // 1 / log2(3) ≈ 0.631
 * ```
 */
export function ndcgAt(ranking: readonly string[], relevant: readonly string[], k: number): number {
  const wanted = new Set(relevant)
  const dcg = ranking.slice(0, k).reduce((s, x, i) => s + (wanted.has(x) ? 1 / Math.log2(i + 2) : 0), 0)
  let ideal = 0
  for (let i = 0; i < Math.min(k, wanted.size); i++) ideal += 1 / Math.log2(i + 2)
  return ideal === 0 ? 0 : dcg / ideal
}
