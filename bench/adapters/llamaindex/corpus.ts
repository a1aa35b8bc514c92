import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { seededRandom } from '../../synthetic/random.js'

/** One row of the bench corpus: a node's id, tenant, text, metadata and vector. */
export interface BenchRow {
  id: string
  tenant: string
  /** The document the chunk was split from: the node's ref doc (SOURCE). */
  refDoc: string
  text: string
  metadata: { category: string; topic: number; kind: string }
  vector: Float32Array
}

/** A query of one tenant, and its exact top 10 unfiltered and under the category filter. */
export interface BenchQuery {
  tenant: string
  vector: Float32Array
  exact: string[]
  exactFiltered: string[]
}

/** What the bench loads and asks, made before any clock starts. */
export interface BenchCorpus {
  spec: CorpusSpec
  rows: BenchRow[]
  queries: BenchQuery[]
  /** The `in` filter's values: 2 of 20 categories, ~10% of each tenant's rows. */
  filterValues: string[]
  /** The share of rows the filter passes, measured. */
  selectivity: number
}

const CATEGORIES = 20
const FILTER_VALUES = ['c3', 'c11']

/**
 * The clustered synthetic corpus (bench/synthetic/corpus.ts: topics with a low intrinsic dimension,
 * documents around them, chunks around documents), `rows` split over `tenants`, each row with a
 * `category` of 20 drawn at random (seeded), node ids as UUIDs (@llamaindex/postgres's id column is
 * a uuid); and `queriesPerTenant` queries near each tenant's topics with their exact top 10 (cosine,
 * computed here over the same float4 values the servers store), unfiltered and filtered.
 *
 * ### Examples
 * ```ts
 * const corpus = benchCorpus({ rows: 20_000, dim: 384, tenants: 2, queriesPerTenant: 50 })
 * ```
 */
export function benchCorpus(options: { rows: number; dim: number; tenants: number; queriesPerTenant: number }): BenchCorpus {
  const tenants = Array.from({ length: options.tenants }, (_, i) => ({ id: `t${i}`, chunks: Math.floor(options.rows / options.tenants) }))
  const spec: CorpusSpec = { seed: 'llamaindex-bench', dim: options.dim, tenants }
  const random = seededRandom('llamaindex-bench:categories')
  const rows: BenchRow[] = []
  for (const row of generateCorpus(spec)) {
    const i = rows.length
    rows.push({
      id: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
      tenant: row.tenantId,
      refDoc: row.documentId,
      text: row.content,
      metadata: { category: `c${random.int(CATEGORIES)}`, topic: row.metadata?.topic as number, kind: row.metadata?.kind as string },
      vector: Float32Array.from(row.embedding),
    })
  }
  const queries = tenants.flatMap((t) => {
    const own = rows.filter((r) => r.tenant === t.id)
    const filtered = own.filter((r) => FILTER_VALUES.includes(r.metadata.category))
    return queryVectors(spec, t.id, options.queriesPerTenant).map((vector) => ({
      tenant: t.id,
      vector,
      exact: topK(vector, own, 10),
      exactFiltered: topK(vector, filtered, 10),
    }))
  })
  const selectivity = rows.filter((r) => FILTER_VALUES.includes(r.metadata.category)).length / rows.length
  return { spec, rows, queries, filterValues: FILTER_VALUES, selectivity }
}

/** The ids of the `k` rows nearest `query` by cosine similarity. */
function topK(query: Float32Array, rows: readonly BenchRow[], k: number): string[] {
  const scored = rows.map((r) => ({ id: r.id, s: cosine(query, r.vector) }))
  scored.sort((a, b) => b.s - a.s)
  return scored.slice(0, k).map((r) => r.id)
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    na += a[i]! * a[i]!
    nb += b[i]! * b[i]!
  }
  return dot / Math.sqrt(na * nb)
}

/**
 * Recall@k of `returned` against `exact`: the share of the exact top k that came back.
 *
 * ### Examples
 * ```ts
 * recallAt(['a', 'b', 'x'], ['a', 'b', 'c']) // 2/3
 * ```
 */
export function recallAt(returned: readonly string[], exact: readonly string[]): number {
  if (exact.length === 0) return 1
  const got = new Set(returned)
  return exact.filter((id) => got.has(id)).length / exact.length
}
