import { seededRandom } from '../../../src/bench-kit.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'

/** Buckets of the `bucket` metadata field: an `$in` of two is ~10% of the rows. */
export const BUCKETS = 20

/** One row as both stores get it: its id (a UUID: LangChain's id column is `uuid`), text, metadata, vector. */
export interface BenchRow {
  id: string
  content: string
  metadata: { topic: number; kind: string; bucket: string }
  vector: Float32Array
}

/** A query: its vector and its `$in` filter (two buckets). */
export interface BenchQuery {
  vector: Float32Array
  buckets: [string, string]
}

/** The exact top 10 of a query (ids and distances), unfiltered and under its filter. */
export interface Truth {
  ids: string[]
  distances: number[]
}

const bucketName = (b: number) => `b${String(b).padStart(2, '0')}`

/** The row ids: UUID-shaped, from the row's index. */
export const rowId = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`

/**
 * The corpus: one tenant's `rows` chunks of the shared-topic synthetic corpus (bench/synthetic), each
 * with a `bucket` drawn from its own seed (independent of the vectors), and `queries` query vectors
 * near the tenant's topics, each with two buckets to filter on.
 *
 * ### Examples
 * ```ts
 * const { rows, queries } = benchCorpus({ rows: 20_000, dim: 384, queries: 30 })
 * ```
 */
export function benchCorpus(options: { rows: number; dim: number; queries: number }): { rows: BenchRow[]; queries: BenchQuery[] } {
  const spec: CorpusSpec = { seed: 'langchain-bench', dim: options.dim, tenants: [{ id: 't1', chunks: options.rows }] }
  const random = seededRandom('langchain-bench:buckets')
  const rows: BenchRow[] = []
  for (const row of generateCorpus(spec)) {
    const { topic, kind } = row.metadata as { topic: number; kind: string }
    rows.push({
      id: rowId(rows.length),
      content: row.content,
      metadata: { topic, kind, bucket: bucketName(random.int(BUCKETS)) },
      vector: row.embedding as Float32Array,
    })
  }
  const queries = queryVectors(spec, 't1', options.queries).map((vector, q) => {
    const first = (2 * q) % BUCKETS
    return { vector, buckets: [bucketName(first), bucketName(first + 1)] as [string, string] }
  })
  return { rows, queries }
}

/** Cosine distance of two vectors (the stores' `<=>`). */
export function cosineDistance(a: Float32Array, b: Float32Array): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    na += a[i]! * a[i]!
    nb += b[i]! * b[i]!
  }
  return 1 - dot / Math.sqrt(na * nb)
}

/**
 * The exact top `k` of `query` among the rows `keep` accepts, by a full scan in JavaScript:
 * ground truth that neither store computed.
 *
 * ### Examples
 * ```ts
 * const truth = exactTopK(rows, query.vector, 10, (row) => query.buckets.includes(row.metadata.bucket))
 * ```
 */
export function exactTopK(rows: readonly BenchRow[], query: Float32Array, k: number, keep: (row: BenchRow) => boolean = () => true): Truth {
  const scored: Array<[string, number]> = []
  for (const row of rows) if (keep(row)) scored.push([row.id, cosineDistance(query, row.vector)])
  scored.sort((x, y) => x[1] - y[1])
  const top = scored.slice(0, k)
  return { ids: top.map(([id]) => id), distances: top.map(([, d]) => d) }
}
