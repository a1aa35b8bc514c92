import type { SearchResult } from '../tenant/index.js'

/**
 * How far past the exact k-th distance a returned row still counts as a hit: ann-benchmarks'
 * k-NN recall uses 1e-3. Real text has near-duplicate chunks (boilerplate) whose distances tie or
 * nearly tie; which of them the exact sort lists is arbitrary, so an index that returns the other
 * is not wrong.
 */
export const DEFAULT_RECALL_EPSILON = 1e-3

/** Recall of one result list against the exact one: tie-aware and by id. */
export interface RecallCount {
  /** Returned rows within the exact k-th distance + ε (capped at the expected count). */
  hits: number
  /** Returned rows whose id is in the exact top k. */
  idHits: number
  /** min(k, rows the exact search returned). */
  expected: number
}

/**
 * Counts one query's hits. A hit (tie-aware, as ann-benchmarks counts) is a returned row whose
 * distance is at most the exact k-th distance + `epsilon`; `idHits` counts only the exact ids.
 *
 * ### Examples
 * ```ts
 * const c = countRecall(await acme.exactSearch(q, { k: 10 }), await acme.search(q, { k: 10 }))
 * const recall = c.hits / c.expected
 * ```
 */
export function countRecall(
  exact: readonly Pick<SearchResult, 'documentId' | 'chunkIndex' | 'distance'>[],
  got: readonly Pick<SearchResult, 'documentId' | 'chunkIndex' | 'distance'>[],
  epsilon = DEFAULT_RECALL_EPSILON,
): RecallCount {
  const expected = exact.length
  if (expected === 0) return { hits: 0, idHits: 0, expected: 0 }
  const threshold = exact[expected - 1]!.distance + epsilon
  const ids = new Set(exact.map((r) => `${r.documentId}\u0000${r.chunkIndex}`))
  let hits = 0
  let idHits = 0
  for (const row of got.slice(0, expected)) {
    if (row.distance <= threshold) hits++
    if (ids.has(`${row.documentId}\u0000${row.chunkIndex}`)) idHits++
  }
  return { hits: Math.min(hits, expected), idHits, expected }
}

/** Sums counts; recall is `hits / expected` (1 when nothing was expected). */
export function recallOf(counts: readonly RecallCount[]): { recall: number; recallById: number } {
  const expected = counts.reduce((s, c) => s + c.expected, 0)
  if (expected === 0) return { recall: 1, recallById: 1 }
  return {
    recall: counts.reduce((s, c) => s + c.hits, 0) / expected,
    recallById: counts.reduce((s, c) => s + c.idHits, 0) / expected,
  }
}
