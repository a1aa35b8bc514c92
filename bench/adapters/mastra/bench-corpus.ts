import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { seededRandom } from '../../synthetic/random.js'

/** One vector as a Mastra app upserts it: an id, the embedding and metadata (the chunk's text in it, as Mastra apps keep it). */
export interface BenchRow {
  id: string
  vector: number[]
  metadata: { text: string; category: string; topic: number; kind: string }
}

/** A query: its vector, a `$in` filter of about 10% of the rows, and the exact top 10 with and without it. */
export interface BenchQuery {
  vector: number[]
  filter: { category: { $in: string[] } }
  truth: string[]
  filteredTruth: string[]
}

/** Categories the rows are spread over, uniformly and independently of their vectors; a filter takes two: ~10%. */
export const CATEGORIES = 20

/** The bench's tenant (pgscale) — Mastra's PgVector has none. */
export const BENCH_TENANT = 'bench'

/**
 * The clustered synthetic corpus (bench/synthetic/corpus.ts: topics in low-rank subspaces, documents
 * near their topic, chunks near their document) as one tenant's Mastra rows, each with a category
 * drawn from a seeded uniform — so a category filter cuts across the clusters, the hard case for an
 * index walked after the filter.
 *
 * ### Examples
 * ```ts
 * const rows = benchRows({ seed: 7, dim: 384, tenants: [{ id: 'bench', chunks: 20_000 }] })
 * ```
 */
export function benchRows(spec: CorpusSpec): BenchRow[] {
  const random = seededRandom(`${spec.seed}:categories`)
  return Array.from(generateCorpus(spec), (row, i) => ({
    id: `r${i}`,
    vector: Array.from(row.embedding as Float32Array),
    metadata: {
      text: row.content,
      category: `c${random.int(CATEGORIES)}`,
      topic: Number(row.metadata?.topic ?? 0),
      kind: String(row.metadata?.kind ?? ''),
    },
  }))
}

/**
 * Seeded queries near the tenant's topics, each with its filter (two categories, rotating) and
 * the exact top 10 by cosine distance over the rows as the server stores them (4-byte floats),
 * computed here, apart from both stores.
 *
 * ### Examples
 * ```ts
 * const queries = benchQueries(spec, rows, 200)
 * ```
 */
export function benchQueries(spec: CorpusSpec, rows: readonly BenchRow[], count: number): BenchQuery[] {
  const stored = rows.map((r) => unit(Float32Array.from(r.vector)))
  return queryVectors(spec, BENCH_TENANT, count).map((q, i) => {
    const query = unit(q)
    const categories = [`c${(2 * i) % CATEGORIES}`, `c${(2 * i + 1) % CATEGORIES}`]
    const similarity = stored.map((v) => dot(query, v))
    const top = (keep: (row: BenchRow) => boolean) =>
      rows
        .map((row, j) => ({ id: row.id, s: similarity[j]! }))
        .filter((_, j) => keep(rows[j]!))
        .sort((a, b) => b.s - a.s)
        .slice(0, 10)
        .map((h) => h.id)
    return {
      vector: Array.from(q),
      filter: { category: { $in: categories } },
      truth: top(() => true),
      filteredTruth: top((row) => categories.includes(row.metadata.category)),
    }
  })
}

/** Share of `truth` in `found` (recall@k with k = truth's length). */
export function recall(found: readonly string[], truth: readonly string[]): number {
  const set = new Set(found)
  return truth.filter((id) => set.has(id)).length / truth.length
}

function unit(v: Float32Array): Float64Array {
  const out = Float64Array.from(v)
  const norm = Math.sqrt(dot(out, out)) || 1
  for (let i = 0; i < out.length; i++) out[i]! /= norm
  return out
}

function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!
  return s
}
