import { InvalidArgumentError } from '../../errors.js'
import type { Distance } from '../../store/index.js'

/**
 * What `similaritySearchWithScore` returns beside each document: `similarity` (default, higher is
 * nearer: what `ScoreThresholdRetriever({ minSimilarityScore })` keeps with `score >=`), or the
 * store's raw `distance` (lower is nearer: the default of LangChain's community `PGVectorStore`).
 */
export type ScoreNormalization = 'similarity' | 'distance'

const NORMALIZATIONS: readonly ScoreNormalization[] = ['similarity', 'distance']

/**
 * Checks the `scoreNormalization` option (absent: `similarity`).
 *
 * ### Examples
 * ```ts
 * assertScoreNormalization(undefined) // 'similarity'
 * assertScoreNormalization('cosine') // throws InvalidArgumentError
 * ```
 */
export function assertScoreNormalization(value: unknown): ScoreNormalization {
  if (value === undefined) return 'similarity'
  if (!NORMALIZATIONS.includes(value as ScoreNormalization)) {
    throw new InvalidArgumentError(`scoreNormalization must be 'similarity' or 'distance', got ${JSON.stringify(value)}`)
  }
  return value as ScoreNormalization
}

/**
 * A hit's score from its exact distance under the store's distance function. `similarity`:
 * cosine `1 − d` (the cosine similarity, 1 for the same direction, −1 for the opposite); inner
 * product `−d` (pgvector's `<#>` is the negative inner product, so this is the inner product itself:
 * the cosine similarity on unit vectors); l2 `1 / (1 + d)` (1 at the same point, towards 0 far away).
 * Each is monotone: the nearer hit always has the higher similarity. `distance`: `d` as it is.
 *
 * ### Examples
 * ```ts
 * scoreOf(0.25, 'cosine', 'similarity') // 0.75
 * scoreOf(-0.9, 'inner_product', 'similarity') // 0.9
 * scoreOf(1, 'l2', 'similarity') // 0.5
 * scoreOf(0.25, 'cosine', 'distance') // 0.25
 * ```
 */
export function scoreOf(distance: number, metric: Distance, normalization: ScoreNormalization): number {
  if (normalization === 'distance') return distance
  switch (metric) {
    case 'cosine':
      return 1 - distance
    case 'inner_product':
      return -distance
    case 'l2':
      return 1 / (1 + distance)
  }
}
