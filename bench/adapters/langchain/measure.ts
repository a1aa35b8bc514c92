import { cosineDistance, type BenchQuery, type BenchRow, type Truth } from './bench-corpus.js'
import type { Side } from './sides.js'

/** How a side answered one kind of query (unfiltered, or `$in` at ~10%). */
export interface QueryFigures {
  queries: number
  /** Mean tie-aware recall@10 against the exact top 10 (a returned row within the 10th exact distance + 1e-6 counts). */
  recall: number
  /** Median and 95th-percentile latency of `similaritySearchVectorWithScore`, ms. */
  p50Ms: number
  p95Ms: number
  /** Queries that returned fewer than 10 rows (every filter here matches ~2,000). */
  short: number
  /** Fewest rows one query returned. */
  fewest: number
}

const EPSILON = 1e-6

/**
 * Recall of one answer: the share of the exact top 10 it found, counting as found a returned row
 * (that passes the filter) as near as the 10th exact one — ties are not misses.
 *
 * ### Examples
 * ```ts
 * recallOf(['a', 'b'], truth, byId, () => true) // 0.2 when both are in the exact top 10
 * ```
 */
export function recallOf(
  ids: readonly string[],
  truth: Truth,
  byId: ReadonlyMap<string, BenchRow>,
  query: Float32Array,
  keep: (row: BenchRow) => boolean,
): number {
  if (truth.ids.length === 0) return 1
  const exact = new Set(truth.ids)
  const kth = truth.distances[truth.distances.length - 1]!
  let hits = 0
  for (const id of new Set(ids.slice(0, truth.ids.length))) {
    const row = byId.get(id)
    if (!row || !keep(row)) continue
    if (exact.has(id) || cosineDistance(query, row.vector) <= kth + EPSILON) hits++
  }
  return hits / truth.ids.length
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!
}

/**
 * Runs every query on a side twice — a warm-up pass, then the measured one — and scores the
 * measured answers against the truths.
 *
 * ### Examples
 * ```ts
 * const figures = await measure(side, queries, truths, byId, true)
 * ```
 */
export async function measure(
  side: Side,
  queries: readonly BenchQuery[],
  truths: readonly Truth[],
  byId: ReadonlyMap<string, BenchRow>,
  filtered: boolean,
): Promise<QueryFigures> {
  for (const query of queries) await side.search(query, filtered)
  const latencies: number[] = []
  const recalls: number[] = []
  const counts: number[] = []
  for (const [i, query] of queries.entries()) {
    const started = performance.now()
    const ids = await side.search(query, filtered)
    latencies.push(performance.now() - started)
    counts.push(ids.length)
    const keep = filtered ? (row: BenchRow) => query.buckets.includes(row.metadata.bucket) : () => true
    recalls.push(recallOf(ids, truths[i]!, byId, query.vector, keep))
  }
  latencies.sort((a, b) => a - b)
  return {
    queries: queries.length,
    recall: recalls.reduce((a, b) => a + b, 0) / recalls.length,
    p50Ms: percentile(latencies, 0.5),
    p95Ms: percentile(latencies, 0.95),
    short: counts.filter((n) => n < 10).length,
    fewest: Math.min(...counts),
  }
}
