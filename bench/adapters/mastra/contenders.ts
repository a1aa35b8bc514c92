import { connect, PgVectorStore, type Database } from '../../../src/index.js'
import { BENCH_TENANT, type BenchRow } from './bench-corpus.js'
import type { MastraPeers } from './peers.js'

/** The index both stores build: HNSW with these parameters (pgscale's defaults, given to PgVector too). */
export const HNSW = { m: 16, efConstruction: 64 } as const

/** The Mastra index name both use (PgVector's table `bench_docs`; pgscale's `mastra_bench_docs`). */
export const INDEX = 'bench_docs'

/** A MastraVector under test, and how it gets ready to be queried. */
export interface Contender {
  name: string
  /** What it is, for the report. */
  setup: string
  /** Creates the index, empty (dropping what an earlier run left). */
  create(dim: number): Promise<void>
  /** Upserts one batch, as a Mastra app does. */
  upsert(rows: readonly BenchRow[]): Promise<void>
  /** What follows the load before queries (pgscale: optimize(); PgVector: ANALYZE, its index was maintained); what it chose. */
  finish(): Promise<string>
  /** The ids of the top 10, through Mastra's `query` (`ef`: `hnsw.ef_search` of the query, where the store takes one). */
  query(vector: number[], filter?: object, ef?: number): Promise<string[]>
  close(): Promise<void>
}

/**
 * Mastra's own `PgVector` (@mastra/pg) as its docs set it up: `createIndex` with an HNSW index
 * (`indexConfig: { type: 'hnsw', hnsw: HNSW }`) before the upserts, which maintain it; queries at
 * its default `ef_search` (max(topK, m · topK)).
 *
 * ### Examples
 * ```ts
 * const pg = mastraPgVector(peers, url)
 * ```
 */
export function mastraPgVector(peers: MastraPeers, url: string): Contender {
  const store = new peers.PgVector({ id: 'mastra-pg-bench', connectionString: url })
  return {
    name: `@mastra/pg ${peers.pgVersion} PgVector`,
    setup: `HNSW (m ${HNSW.m}, ef_construction ${HNSW.efConstruction}) created with the index, maintained by the upserts; ef_search = max(topK, m·topK) = ${HNSW.m * 10}`,
    async create(dim) {
      await store.deleteIndex({ indexName: INDEX })
      await store.createIndex({ indexName: INDEX, dimension: dim, metric: 'cosine', indexConfig: { type: 'hnsw', hnsw: HNSW } })
    },
    async upsert(rows) {
      await store.upsert({
        indexName: INDEX,
        ids: rows.map((r) => r.id),
        vectors: rows.map((r) => r.vector),
        metadata: rows.map((r) => r.metadata),
      })
    },
    async finish() {
      await store.pool.query(`analyze ${INDEX}`)
      return 'ANALYZE'
    },
    async query(vector, filter, ef) {
      return (await store.query({ indexName: INDEX, queryVector: vector, topK: 10, filter, ef })).map((r: { id: string }) => r.id)
    },
    close: () => store.disconnect(),
  }
}

/**
 * pgscale through pgscale/mastra, one tenant: upserts into the table, then `optimize()` with its
 * defaults, as an operator runs it after a load: the tenant (above 5,000 rows) gets its own HNSW
 * index (HNSW's parameters), ANALYZE, and its `ef_search` tuned to recall 0.98 on a sample of its
 * chunks. Queries at that tuned setting unless `ef` is given; filters by `auto` (an exact scan
 * under 1,000 matching rows, else the index walked with iterative scan).
 *
 * ### Examples
 * ```ts
 * const ours = await pgscaleAdapter(peers, url)
 * ```
 */
export async function pgscaleAdapter(peers: MastraPeers, url: string): Promise<Contender> {
  const db: Database = await connect(url)
  const vectors = new peers.adapter.PgScaleVectors({ id: 'pgscale-bench', db })
  const vector = vectors.forTenant(BENCH_TENANT)
  return {
    name: 'pgscale/mastra',
    setup: `upserts, then optimize() (defaults): the tenant's own HNSW (m ${HNSW.m}, ef_construction ${HNSW.efConstruction}), ef_search tuned to recall 0.98; filters: auto`,
    async create(dim) {
      await PgVectorStore.migration({ table: `mastra_${INDEX}`, dimensions: dim }).down!(db)
      await vector.deleteIndex({ indexName: INDEX })
      await vector.createIndex({ indexName: INDEX, dimension: dim, metric: 'cosine' })
    },
    async upsert(rows) {
      await vector.upsert({
        indexName: INDEX,
        ids: rows.map((r) => r.id),
        vectors: rows.map((r) => r.vector),
        metadata: rows.map((r) => r.metadata),
      })
    },
    async finish() {
      const store = await vectors.store(INDEX, { tenantId: BENCH_TENANT })
      await store.optimize({ indexBuild: { ...HNSW } })
      const tuned = (await store.tenantTuning()).find((t) => t.tenantId === BENCH_TENANT)
      if (!tuned) return 'optimize(): not tuned'
      const graph =
        tuned.indexM === null
          ? `m ${HNSW.m}, ef_construction ${HNSW.efConstruction}`
          : `rebuilt: m ${tuned.indexM}, ef_construction ${tuned.indexEfConstruction}`
      const setting = tuned.exact ? 'the exact path' : `ef_search ${tuned.efSearch}`
      return `optimize(): ${setting} (graph ${graph}; tuning recall ${tuned.recall.toFixed(3)} on ${tuned.tuningQueries} ${tuned.querySource} queries)`
    },
    async query(queryVector, filter, ef) {
      const results = await vector.query({
        indexName: INDEX,
        queryVector,
        topK: 10,
        filter: filter as never,
        ...(ef === undefined ? {} : { ef }),
      })
      return results.map((r) => r.id)
    },
    async close() {
      await vectors.close()
      await db.close()
    },
  }
}
