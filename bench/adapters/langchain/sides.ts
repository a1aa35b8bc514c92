import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type pg from 'pg'
import { importFromApp, LANGCHAIN_APP } from './app-modules.js'
import type { BenchQuery, BenchRow } from './bench-corpus.js'

/** One side of the comparison: a store written and searched through LangChain's `VectorStore` API. */
export interface Side {
  name: string
  /** What it is and how it was set up, for the report. */
  setup: string
  /** One `addVectors` call of these rows (precomputed vectors, ids given). */
  write(slice: readonly BenchRow[]): Promise<unknown>
  /** Builds its ANN index after the load: seconds in all, of them the HNSW build, and what it chose. */
  index(): Promise<{ seconds: number; buildSeconds: number; note: string }>
  /** `similaritySearchVectorWithScore(query, 10, filter?)`: the ids, nearest first. */
  search(query: BenchQuery, filtered: boolean): Promise<string[]>
  close(): Promise<void>
}

/** The members of community's `PGVectorStore` the bench calls (@langchain/community 1.1.29). */
interface CommunityPgVectorStore {
  addVectors(vectors: number[][], documents: BenchDocument[], options?: { ids?: string[] }): Promise<void>
  createHnswIndex(config: { dimensions: number; m?: number; efConstruction?: number }): Promise<void>
  similaritySearchVectorWithScore(query: number[], k: number, filter?: Record<string, unknown>): Promise<Array<[{ id?: string }, number]>>
  end(): Promise<void>
}

interface BenchDocument {
  pageContent: string
  metadata: Record<string, unknown>
}

/** Neither side embeds: vectors are given to `addVectors` and `similaritySearchVectorWithScore`. */
const NO_EMBEDDINGS = {
  embedDocuments: async (): Promise<number[][]> => {
    throw new Error('the bench passes vectors')
  },
  embedQuery: async (): Promise<number[]> => {
    throw new Error('the bench passes vectors')
  },
}

const documentsOf = (rows: readonly BenchRow[]): BenchDocument[] => rows.map((r) => ({ pageContent: r.content, metadata: r.metadata }))
const vectorsOf = (rows: readonly BenchRow[]): number[][] => rows.map((r) => Array.from(r.vector))

/** The version of a package of the example app. */
export function appVersion(pkg: string): string {
  return (JSON.parse(readFileSync(join(LANGCHAIN_APP, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version
}

/**
 * Writes the rows into every side, `batch` per call, the sides taking turns batch by batch (the
 * first side alternating), so load from other work on the machine falls on all alike; each side's
 * seconds in its own calls.
 */
export async function ingestInterleaved(sides: readonly Side[], rows: readonly BenchRow[], batch: number): Promise<number[]> {
  const seconds = sides.map(() => 0)
  for (let start = 0, turn = 0; start < rows.length; start += batch, turn++) {
    const slice = rows.slice(start, start + batch)
    for (let k = 0; k < sides.length; k++) {
      const i = (k + turn) % sides.length
      const started = performance.now()
      await sides[i]!.write(slice)
      seconds[i]! += (performance.now() - started) / 1000
    }
  }
  return seconds
}

/**
 * LangChain's own `PGVectorStore` (community), as its docs set it up: `initialize` with `dimensions`
 * (cosine), rows by `addVectors`, then `createHnswIndex` (m 16, ef_construction 64) and `ANALYZE`.
 * It has no tenants: the whole table is one tenant's. Searches run at pgvector's default
 * `hnsw.ef_search` (40), no iterative scan; its `in` filter is `metadata->>'bucket' IN (…)`.
 */
export async function langchainSide(url: string, dim: number): Promise<Side> {
  const { PGVectorStore } = await importFromApp<{ PGVectorStore: { initialize(e: unknown, c: object): Promise<CommunityPgVectorStore> } }>(
    '@langchain/community/vectorstores/pgvector',
  )
  const { default: pgLib } = await importFromApp<{ default: typeof pg }>('pg')
  const pool = new pgLib.Pool({ connectionString: url, max: 4 })
  const table = 'langchain_bench_community'
  await pool.query(`drop table if exists ${table}`)
  // end() releases the client initialize() holds and ends this pool.
  const store = await PGVectorStore.initialize(NO_EMBEDDINGS, { pool, tableName: table, dimensions: dim, distanceStrategy: 'cosine' })
  return {
    name: `LangChain PGVectorStore (@langchain/community ${appVersion('@langchain/community')})`,
    setup: 'one table, no tenants; HNSW m 16 / ef_construction 64 after the load; ef_search 40 (pgvector default)',
    write: (slice) => store.addVectors(vectorsOf(slice), documentsOf(slice), { ids: slice.map((r) => r.id) }),
    async index() {
      const started = performance.now()
      await store.createHnswIndex({ dimensions: dim, m: 16, efConstruction: 64 })
      const buildSeconds = (performance.now() - started) / 1000
      await pool.query(`analyze ${table}`)
      return {
        seconds: (performance.now() - started) / 1000,
        buildSeconds,
        note: 'createHnswIndex({ m: 16, efConstruction: 64 }) + ANALYZE',
      }
    },
    async search(query, filtered) {
      const filter = filtered ? { bucket: { in: query.buckets } } : undefined
      const hits = await store.similaritySearchVectorWithScore(Array.from(query.vector), 10, filter)
      return hits.map(([doc]) => doc.id ?? '')
    },
    async close() {
      await pool.query(`drop table if exists ${table}`).catch(() => {})
      await store.end()
    },
  }
}

/**
 * pgscale through `pgscale/langchain` (the packed copy, as an app gets it): `PgVectorStore.open`
 * on the app's `pg.Pool` (defaults: cosine, full text), `PgScaleVectorStore.forTenant(store, 't1')`,
 * rows by `addVectors` (upserts), then `optimize()`: the tenant's own HNSW index (m 16 /
 * ef_construction 64) and its `ef_search` tuned to recall 0.98. Filters: `{ bucket: { $in: [...] } }`.
 */
export async function pgscaleSide(url: string, dim: number): Promise<Side> {
  const { PgVectorStore } = await importFromApp<typeof import('../../../src/index.js')>('pgscale')
  const { PgScaleVectorStore } = await importFromApp<typeof import('../../../src/adapters/langchain/index.js')>('pgscale/langchain')
  const { default: pgLib } = await importFromApp<{ default: typeof pg }>('pg')
  const pool = new pgLib.Pool({ connectionString: url, max: 4 })
  const table = 'langchain_bench_pgscale'
  await pool.query(`drop table if exists ${table}`)
  const store = await PgVectorStore.open(pool, { table, dimensions: dim })
  const vectorStore = PgScaleVectorStore.forTenant(store, 't1', NO_EMBEDDINGS)
  return {
    name: `pgscale ${appVersion('pgscale')} through PgScaleVectorStore`,
    setup: "a tenant ('t1') of a PgVectorStore (defaults); optimize() after the load: own HNSW m 16 / ef_construction 64, ef_search tuned",
    write: (slice) => vectorStore.addVectors(vectorsOf(slice), documentsOf(slice), { ids: slice.map((r) => r.id) }),
    async index() {
      const started = performance.now()
      const report = await store.optimize()
      const seconds = (performance.now() - started) / 1000
      const tuned = (await store.tenantTuning()).find((t) => t.tenantId === 't1')
      const built = report.built.map((b) => `${b.index} in ${b.seconds.toFixed(1)} s`).join(', ')
      const note = `optimize(): ${built || 'no index built'}; ef_search ${tuned?.exact ? 'exact path' : (tuned?.efSearch ?? 'default')} (recall ${tuned?.recall?.toFixed(3) ?? '?'} on its sample)`
      return { seconds, buildSeconds: report.built.reduce((sum, b) => sum + b.seconds, 0), note }
    },
    async search(query, filtered) {
      const filter = filtered ? { bucket: { $in: query.buckets } } : undefined
      const hits = await vectorStore.similaritySearchVectorWithScore(Array.from(query.vector), 10, filter)
      return hits.map(([doc]) => doc.id ?? '')
    },
    async close() {
      await store.close()
      await pool.query(`drop table if exists ${table}`).catch(() => {})
      await pool.end()
    },
  }
}
