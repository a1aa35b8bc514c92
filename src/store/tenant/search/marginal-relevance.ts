import { DimensionMismatchError, InvalidArgumentError } from '../../../errors.js'
import { assertIntegerIn } from '../../../util/assert-integer.js'
import { assertK, type Embedding } from '../../ingest/index.js'

/** Candidates `maxMarginalRelevanceSearch` fetches by default (at least k). */
export const DEFAULT_MMR_FETCH_K = 20

/** The default trade-off of `maxMarginalRelevanceSearch`: relevance and diversity weighed equally. */
export const DEFAULT_MMR_LAMBDA = 0.5

/** What MMR selection takes, beside the search's own options. */
export interface MarginalRelevanceOptions {
  /** How many results, 1..1000. */
  k: number
  /** Candidates fetched by the search, k..1000. Default max(20, k). */
  fetchK?: number
  /** 1 = pure relevance, 0 = most diverse. Default 0.5. */
  lambda?: number
}

/**
 * Maximal marginal relevance (Carbonell & Goldstein, 1998): picks `k` of `candidates`, one at a
 * time, each maximising `lambda · sim(query, c) − (1 − lambda) · max sim(c, picked)` under cosine
 * similarity (a zero vector has similarity 0). The max is over the picks as they are, negative when
 * a candidate points away from all of them (no floor at 0): the same picks as LangChain core's
 * `maximalMarginalRelevance`, ties aside. The first pick is the most relevant candidate; ties go to
 * the more relevant, then the earlier. Returns the picked indexes, in pick order. Pure:
 * O(k · candidates · dimensions).
 *
 * ### Examples
 * ```ts
 * const candidates = [[0.985, 0.174], [0.978, 0.208], [0.766, -0.643]] // 10°, 12° and -40° from the query
 * maximalMarginalRelevance([1, 0], candidates, 2, 0.5) // [0, 2]: the near-duplicate at 12° is passed over
 * maximalMarginalRelevance([1, 0], candidates, 2, 1) // [0, 1]: pure relevance
 * ```
 */
export function maximalMarginalRelevance(
  query: Embedding,
  candidates: readonly Embedding[],
  k: number,
  lambda = DEFAULT_MMR_LAMBDA,
): number[] {
  if (!Array.isArray(query) && !(query instanceof Float32Array) && !(query instanceof Float64Array)) {
    throw new InvalidArgumentError('maximalMarginalRelevance: the query must be an array of numbers')
  }
  assertIntegerIn(k, 0, Number.MAX_SAFE_INTEGER, 'maximalMarginalRelevance: k')
  assertLambda(lambda, 'maximalMarginalRelevance')
  if (!Array.isArray(candidates)) throw new InvalidArgumentError('maximalMarginalRelevance: candidates must be an array of embeddings')
  for (const c of candidates) {
    if (c?.length !== query.length) throw new DimensionMismatchError(query.length, c?.length ?? 0, 'maximalMarginalRelevance candidate')
  }
  const relevance = candidates.map((c) => cosine(query, c))
  /** Each candidate's largest similarity to a picked one: -1..1, negative when it points away from every pick. */
  const redundancy = new Array<number>(candidates.length).fill(Number.NEGATIVE_INFINITY)
  const picked: number[] = []
  const free = new Set(candidates.keys())
  while (picked.length < k && free.size > 0) {
    // The first pick has no picks to differ from: the most relevant (and no 0 · −∞ = NaN at lambda 1).
    const score = picked.length === 0 ? (i: number) => relevance[i]! : (i: number) => lambda * relevance[i]! - (1 - lambda) * redundancy[i]!
    const best = nextPick(free, score, relevance)
    picked.push(best)
    free.delete(best)
    for (const i of free) redundancy[i] = Math.max(redundancy[i]!, cosine(candidates[i]!, candidates[best]!))
  }
  return picked
}

/**
 * A search diversified by MMR: `search` (the store's, so tenant scope, filters and tuning apply)
 * fetches `fetchK` candidates with their embeddings, {@link maximalMarginalRelevance} picks `k`;
 * the hits come back in pick order, without embeddings unless `keepEmbeddings`.
 *
 * ### Examples
 * ```ts
 * const hits = await marginalRelevanceSearch((k) => acme.search(query, { k, includeEmbedding: true }), query, { k: 5 }, false)
 * ```
 */
export async function marginalRelevanceSearch<H extends { embedding?: number[] }>(
  search: (fetchK: number) => Promise<H[]>,
  query: Embedding,
  options: MarginalRelevanceOptions,
  keepEmbeddings: boolean,
): Promise<H[]> {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('maxMarginalRelevanceSearch takes { k, fetchK?, lambda? }')
  const k = assertK(options.k)
  const fetchK = assertIntegerIn(options.fetchK ?? Math.max(DEFAULT_MMR_FETCH_K, k), k, 1000, 'maxMarginalRelevanceSearch: fetchK')
  const lambda = assertLambda(options.lambda ?? DEFAULT_MMR_LAMBDA, 'maxMarginalRelevanceSearch')
  const hits = await search(fetchK)
  const picked = maximalMarginalRelevance(
    query,
    hits.map((h) => h.embedding ?? []),
    k,
    lambda,
  ).map((i) => hits[i]!)
  return keepEmbeddings ? picked : picked.map(({ embedding: _embedding, ...hit }) => hit as H)
}

/** The free candidate of the highest score; a tie goes to the more relevant, then the earlier. */
function nextPick(free: ReadonlySet<number>, score: (i: number) => number, relevance: readonly number[]): number {
  let best = -1
  let bestScore = 0
  for (const i of free) {
    const s = score(i)
    if (best === -1 || s > bestScore || (s === bestScore && relevance[i]! > relevance[best]!)) {
      best = i
      bestScore = s
    }
  }
  return best
}

function assertLambda(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new InvalidArgumentError(`${where}: lambda must be a number from 0 to 1, got ${String(value)}`)
  }
  return value
}

function cosine(a: Embedding, b: Embedding): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    dot += x * y
    na += x * x
    nb += y * y
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb)
}
