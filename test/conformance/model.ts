import { expect } from 'vitest'
import { matchesFilter, type MetadataFilter } from '../../src/index.js'
import { cosineSimilarity } from '../support/vectors.js'

/**
 * The conformance harness's model: what the database should hold after the commands completed so
 * far — every tenant's chunks by document, the rollup's source rows and what each bucket of the
 * rollup table holds (its truth when it was last refreshed) — and the answers a read must give,
 * computed from it with the project's reference filter evaluator (`matchesFilter`).
 */

/** Dimensions of every vector in the harness: small, so the model's exact answer is cheap. */
export const DIM = 4
/** Tenants, two of them differing only in case. */
export const TENANTS = ['acme', 'ACME', 'globex'] as const
/** Document ids every write command draws from (shared, so writes of different kinds meet). */
export const DOCS = ['d0', 'd1', 'd2', 'd3'] as const
/** The rollup's zone: a fixed offset (+05:30, no DST) so month boundaries are easy to model and easy to get wrong. */
export const ZONE = 'Asia/Kolkata'
const ZONE_OFFSET_MS = 5.5 * 3600_000

export interface Chunk {
  content: string
  metadata: Record<string, unknown>
  embedding: number[]
}

/** One source row of the rollup (`conf_events`). */
export interface SourceRow {
  id: number
  tenant: string
  at: string
  category: string
  amount: number
}

/** A month's groups as the rollup table holds them: category → measures. */
export type Bucket = Map<string, { total: number; count: number }>

export interface Model {
  /** tenant → document → chunk index → chunk (a document with no chunks is absent; bulk loads may leave gaps). */
  chunks: Map<string, Map<string, Map<number, Chunk>>>
  source: SourceRow[]
  nextSourceId: number
  /** `${tenant}|${YYYY-MM}` → the bucket as last refreshed (absent: never refreshed, or refreshed empty). */
  materialized: Map<string, Bucket>
  /** Buckets a source write touched since the last drain (the dirty-key log, as a set). */
  dirty: Set<string>
  /** Commands completed in this run (for failure messages). */
  completed: number
}

export function emptyModel(): Model {
  return { chunks: new Map(), source: [], nextSourceId: 1, materialized: new Map(), dirty: new Set(), completed: 0 }
}

/** A deep copy (for writes that may roll back). */
export function cloneModel(m: Model): Model {
  return {
    chunks: new Map(
      [...m.chunks].map(([t, docs]) => [t, new Map([...docs].map(([d, cs]) => [d, new Map([...cs].map(([i, c]) => [i, copyChunk(c)]))]))]),
    ),
    source: m.source.map((r) => ({ ...r })),
    nextSourceId: m.nextSourceId,
    materialized: new Map([...m.materialized].map(([k, b]) => [k, new Map([...b].map(([c, v]) => [c, { ...v }]))])),
    dirty: new Set(m.dirty),
    completed: m.completed,
  }
}

/** Puts `from`'s state into `into` (after a rolled-back write, the copy is dropped instead). */
export function assignModel(into: Model, from: Model): void {
  into.chunks = from.chunks
  into.source = from.source
  into.nextSourceId = from.nextSourceId
  into.materialized = from.materialized
  into.dirty = from.dirty
}

export function copyChunk(c: Chunk): Chunk {
  return { content: c.content, metadata: structuredClone(c.metadata), embedding: [...c.embedding] }
}

export function docsOf(m: Model, tenant: string): Map<string, Map<number, Chunk>> {
  let docs = m.chunks.get(tenant)
  if (!docs) m.chunks.set(tenant, (docs = new Map()))
  return docs
}

/** A row of a tenant as reads return it (without distance). */
export interface ModelRow extends Chunk {
  documentId: string
  chunkIndex: number
}

/** The tenant's rows in document id and chunk order (ids are ASCII: the server's collation orders them the same). */
export function rowsOf(m: Model, tenant: string, filter?: MetadataFilter): ModelRow[] {
  const docs = m.chunks.get(tenant)
  if (!docs) return []
  const out: ModelRow[] = []
  for (const id of [...docs.keys()].sort()) {
    const doc = docs.get(id)!
    for (const i of [...doc.keys()].sort((a, b) => a - b)) {
      const c = doc.get(i)!
      if (filter === undefined || matchesFilter(c.metadata, filter)) out.push({ documentId: id, chunkIndex: i, ...copyChunk(c) })
    }
  }
  return out
}

/** Cosine distance in doubles (the embeddings are small integers, exact in float4). */
export function cosineDistance(a: readonly number[], b: readonly number[]): number {
  return 1 - cosineSimilarity(a, b)
}

/** Distances this close are one distance (float4 arithmetic on the server, doubles here). */
export const TIE = 1e-5

/** The local month of a moment in the rollup's zone, `YYYY-MM`. */
export function localMonth(at: string): string {
  return new Date(Date.parse(at) + ZONE_OFFSET_MS).toISOString().slice(0, 7)
}

/** The bucket's truth computed from the source rows now. */
export function bucketTruth(m: Model, tenant: string, month: string): Bucket {
  const bucket: Bucket = new Map()
  for (const r of m.source) {
    if (r.tenant !== tenant || localMonth(r.at) !== month) continue
    const g = bucket.get(r.category) ?? { total: 0, count: 0 }
    g.total += r.amount
    g.count += 1
    bucket.set(r.category, g)
  }
  return bucket
}

/** Every month `from`..`to` (`YYYY-MM`, inclusive). */
export function monthsBetween(from: string, to: string): string[] {
  const out: string[] = []
  let [y, mo] = from.split('-').map(Number) as [number, number]
  for (;;) {
    const month = `${y}-${String(mo).padStart(2, '0')}`
    if (month > to) return out
    out.push(month)
    mo++
    if (mo > 12) {
      mo = 1
      y++
    }
  }
}

/** A rollup read's expected rows: per month and category (or per month with `groupBy: []`), ordered. */
export function expectedRollupRows(
  m: Model,
  tenant: string,
  from: string,
  to: string,
  fresh: boolean,
  combine: boolean,
): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = []
  for (const month of monthsBetween(from, to)) {
    // Every source write is tracked (the rollup is tracked before the first), so `fresh` is the truth.
    const bucket = fresh ? bucketTruth(m, tenant, month) : m.materialized.get(`${tenant}|${month}`)
    if (!bucket || bucket.size === 0) continue
    if (combine) {
      let total = 0
      let count = 0
      for (const g of bucket.values()) {
        total += g.total
        count += g.count
      }
      out.push({ month, total, count })
      continue
    }
    for (const category of [...bucket.keys()].sort()) out.push({ month, category, ...bucket.get(category)! })
  }
  return out
}

/**
 * A fleet read's expected rows (`readAcross` through the fleet level: no tenant detail): every
 * tenant's buckets as last refreshed, summed per month and category (`combine`: per month), or over
 * the whole range (`combineMonths`, `month` being `'from..to'`); ordered by month and category.
 */
export function expectedFleetRows(
  m: Model,
  from: string,
  to: string,
  combine: boolean,
  combineMonths: boolean,
): Array<Record<string, unknown>> {
  const months = new Set(monthsBetween(from, to))
  const sums = new Map<string, { month: string; category?: string; total: number; count: number }>()
  for (const [key, bucket] of m.materialized) {
    const month = key.split('|')[1]!
    if (!months.has(month)) continue
    for (const [category, g] of bucket) {
      const row = { month: combineMonths ? `${from}..${to}` : month, ...(combine ? {} : { category }) }
      const id = `${row.month}|${row.category ?? ''}`
      const sum = sums.get(id) ?? { ...row, total: 0, count: 0 }
      sum.total += g.total
      sum.count += g.count
      sums.set(id, sum)
    }
  }
  return [...sums.keys()].sort().map((id) => sums.get(id)!)
}

/**
 * A per-tenant read's expected rows (`readAcross({ perTenant: true, groupBy: [] })` through the
 * per-tenant level): each tenant's buckets as last refreshed, summed over categories per month (or
 * over the range, `combineMonths`), in JavaScript order of month and tenant (the caller sorts the
 * rows it got the same way: the server's collation orders tenant ids its own way).
 */
export function expectedTenantLevelRows(m: Model, from: string, to: string, combineMonths: boolean): Array<Record<string, unknown>> {
  const months = new Set(monthsBetween(from, to))
  const sums = new Map<string, { month: string; tenant_id: string; total: number; count: number }>()
  for (const [key, bucket] of m.materialized) {
    const [tenant, month] = key.split('|') as [string, string]
    if (!months.has(month) || bucket.size === 0) continue
    const row = { month: combineMonths ? `${from}..${to}` : month, tenant_id: tenant }
    const id = JSON.stringify([row.month, tenant])
    const sum = sums.get(id) ?? { ...row, total: 0, count: 0 }
    for (const g of bucket.values()) {
      sum.total += g.total
      sum.count += g.count
    }
    sums.set(id, sum)
  }
  return [...sums.keys()].sort().map((id) => sums.get(id)!)
}

/** The rollup table after a bucket's refresh: its truth now (an empty bucket holds no rows). */
export function materialize(m: Model, key: string): void {
  const [tenant, month] = key.split('|') as [string, string]
  m.materialized.set(key, bucketTruth(m, tenant, month))
}

/**
 * How a read is held to the model: exact reads exactly; searches to the tenant, to
 * `min(k, matching rows)` and, where the exact path runs, to the model's exact answer with ties.
 */

export interface Hit {
  documentId: string
  chunkIndex: number
  content: string
  metadata: Record<string, unknown>
  distance: number
}

const key = (r: { documentId: string; chunkIndex: number }) => `${r.documentId}#${r.chunkIndex}`

/** Each hit is a row of the model's candidates (the tenant's, matching the filter) with its content, metadata and distance; nearest first. */
export function expectHitsFrom(what: string, hits: readonly Hit[], candidates: readonly ModelRow[], query: readonly number[]): void {
  const byKey = new Map(candidates.map((r) => [key(r), r]))
  const seen = new Set<string>()
  for (const h of hits) {
    const row = byKey.get(key(h))
    expect(row, `${what}: hit ${key(h)} is not one of the tenant's matching rows ${[...byKey.keys()].join(',')}`).toBeDefined()
    expect(seen.has(key(h)), `${what}: hit ${key(h)} twice`).toBe(false)
    seen.add(key(h))
    expect({ content: h.content, metadata: h.metadata }, `${what}: hit ${key(h)}`).toEqual({
      content: row!.content,
      metadata: row!.metadata,
    })
    expect(Math.abs(h.distance - cosineDistance(row!.embedding, query)), `${what}: distance of ${key(h)}`).toBeLessThan(TIE)
  }
  for (let i = 1; i < hits.length; i++)
    expect(hits[i]!.distance, `${what}: nearest first`).toBeGreaterThanOrEqual(hits[i - 1]!.distance - TIE)
}

/** The exact k nearest: every row nearer than the k-th is in, the others tie with it. */
export function expectExactNearest(
  what: string,
  hits: readonly Hit[],
  candidates: readonly ModelRow[],
  query: readonly number[],
  k: number,
): void {
  expectHitsFrom(what, hits, candidates, query)
  const want = Math.min(k, candidates.length)
  expect(hits.length, `${what}: min(k=${k}, ${candidates.length} matching rows)`).toBe(want)
  if (want === 0) return
  const sorted = candidates.map((r) => ({ key: key(r), d: cosineDistance(r.embedding, query) })).sort((a, b) => a.d - b.d)
  const kth = sorted[want - 1]!.d
  const got = new Set(hits.map(key))
  for (const r of sorted) {
    if (r.d < kth - TIE)
      expect(got.has(r.key), `${what}: ${r.key} (distance ${r.d}) is nearer than the k-th (${kth}) and missing`).toBe(true)
  }
  for (const h of hits) expect(h.distance, `${what}: ${key(h)} is farther than the k-th nearest`).toBeLessThanOrEqual(kth + TIE)
}

/** Rows as find/getChunks return them, compared with the model's. */
export function plainRows(
  rows: ReadonlyArray<{ documentId: string; chunkIndex: number; content: string; metadata: Record<string, unknown> }>,
) {
  return rows.map((r) => ({ documentId: r.documentId, chunkIndex: r.chunkIndex, content: r.content, metadata: r.metadata }))
}
