import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type pg from 'pg'
import type { IngestRow, MetadataFilter, ProvisionedDatabase } from '../../../src/index.js'

/** A peer's hit, mapped back to the chunk it stands for. */
export interface PeerHit {
  documentId: string
  chunkIndex: number
  distance: number
}

/** A peer store measured beside pgscale on the same rows, queries and filters. */
export interface FilterPeer {
  name: string
  version: string
  /** Loads the rows (all tenants) into the peer's own table and builds its HNSW index. */
  load(rows: Iterable<IngestRow>): Promise<void>
  /**
   * The peer's top 10 for the query within the tenant, under the filter written in the peer's own
   * syntax; `undefined` when the peer's language cannot say it (the report says n/a).
   */
  search(tenant: string, query: Float32Array, filter: MetadataFilter): Promise<PeerHit[]> | undefined
  close(): Promise<void>
}

/** The peers found installed, and those that were not (with why). */
export interface FilterPeers {
  peers: FilterPeer[]
  skipped: Array<{ name: string; skipped: string }>
}

/** Where `npm run bench:peers:install` puts the peers: apart from pgscale's dependencies (their peer ranges conflict). */
export const PEERS_DIR = join('bench', '.peers')
const MASTRA = 'Mastra @mastra/pg PgVector'
const LANGCHAIN = 'LangChain PGVectorStore'
const BATCH = 1000

/**
 * The peers installed as bench-only dependencies in bench/.peers (none is a dependency of
 * pgscale), each on its own table in the same database, loaded with the same rows.
 *
 * ### Examples
 * ```ts
 * const { peers, skipped } = await loadFilterPeers(provisioned, { dim: 128 }, console.error)
 * ```
 */
export async function loadFilterPeers(
  provisioned: ProvisionedDatabase,
  config: { dim: number },
  log: (line: string) => void,
): Promise<FilterPeers> {
  const dir = join(process.cwd(), PEERS_DIR)
  const require = createRequire(join(dir, 'package.json'))
  const installed = (pkg: string) => existsSync(join(dir, 'node_modules', pkg, 'package.json'))
  const version = (pkg: string) =>
    (JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version
  const out: FilterPeers = { peers: [], skipped: [] }
  const hint = 'not installed (npm run bench:peers:install)'
  if (!provisioned.url) {
    for (const name of [MASTRA, LANGCHAIN]) out.skipped.push({ name, skipped: 'needs a server URL (--db local or --pg)' })
  } else {
    if (installed('@mastra/pg')) out.peers.push(mastraPeer(require, provisioned.url, config.dim, version('@mastra/pg')))
    else out.skipped.push({ name: MASTRA, skipped: hint })
    if (installed('@langchain/community'))
      out.peers.push(langchainPeer(require, provisioned.url, config.dim, version('@langchain/community')))
    else out.skipped.push({ name: LANGCHAIN, skipped: hint })
  }
  for (const s of out.skipped) log(`peer ${s.name}: ${s.skipped}`)
  return out
}

function* batches(rows: Iterable<IngestRow>): Generator<IngestRow[]> {
  let batch: IngestRow[] = []
  for (const row of rows) {
    batch.push(row)
    if (batch.length === BATCH) {
      yield batch
      batch = []
    }
  }
  if (batch.length) yield batch
}

/** Mastra's PgVector: its MongoDB-style filters as they are, the tenant as one more condition. */
function mastraPeer(require: NodeRequire, url: string, dim: number, version: string): FilterPeer {
  const { PgVector } = require('@mastra/pg') as { PgVector: new (o: { connectionString: string; id: string }) => any }
  const store = new PgVector({ connectionString: url, id: 'pgscale-bench' })
  const indexName = 'mastra_filter_bench'
  return {
    name: MASTRA,
    version,
    async load(rows) {
      await store.deleteIndex({ indexName }).catch(() => {})
      await store.createIndex({
        indexName,
        dimension: dim,
        metric: 'cosine',
        indexConfig: { type: 'hnsw', hnsw: { m: 16, efConstruction: 64 } },
      })
      for (const batch of batches(rows)) {
        await store.upsert({
          indexName,
          vectors: batch.map((r) => Array.from(r.embedding)),
          metadata: batch.map((r) => ({ ...r.metadata, tenantId: r.tenantId, documentId: r.documentId, chunkIndex: r.chunkIndex })),
          ids: batch.map((r) => `${r.documentId}#${r.chunkIndex}`),
        })
      }
    },
    async search(tenant, query, filter) {
      const hits = (await store.query({
        indexName,
        queryVector: Array.from(query),
        topK: 10,
        filter: { $and: [{ tenantId: tenant }, filter] },
      })) as Array<{
        score: number
        metadata: { documentId: string; chunkIndex: number }
      }>
      // Cosine: Mastra's score is 1 − distance.
      return hits.map((h) => ({ documentId: h.metadata.documentId, chunkIndex: h.metadata.chunkIndex, distance: 1 - h.score }))
    },
    async close() {
      await store.deleteIndex({ indexName }).catch(() => {})
      await store.disconnect()
    },
  }
}

/**
 * LangChain's PGVectorStore with its own HNSW index: equality, `in` and numeric ranges translate
 * (`{ c: { in: [...] } }`, `{ r: { lt: 10 } }`); `$or` has no counterpart.
 */
function langchainPeer(require: NodeRequire, url: string, dim: number, version: string): FilterPeer {
  const { PGVectorStore } = require('@langchain/community/vectorstores/pgvector') as any
  const { Embeddings } = require('@langchain/core/embeddings') as any
  const { Document } = require('@langchain/core/documents') as any
  const lcPg = require('pg') as typeof pg
  class Precomputed extends Embeddings {
    vectors: number[][] = []
    async embedDocuments() {
      return this.vectors
    }
    async embedQuery() {
      return this.vectors[0]!
    }
  }
  const pool = new lcPg.Pool({ connectionString: url, max: 2 })
  const embeddings = new (Precomputed as any)({})
  let lc: any
  return {
    name: LANGCHAIN,
    version,
    async load(rows) {
      await pool.query('drop table if exists langchain_filter_bench')
      lc = await PGVectorStore.initialize(embeddings, {
        pool,
        tableName: 'langchain_filter_bench',
        dimensions: dim,
        distanceStrategy: 'cosine',
      })
      for (const batch of batches(rows)) {
        embeddings.vectors = batch.map((r: IngestRow) => Array.from(r.embedding))
        await lc.addDocuments(
          batch.map(
            (r: IngestRow) =>
              new Document({
                pageContent: r.content,
                metadata: { ...r.metadata, tenantId: r.tenantId, documentId: r.documentId, chunkIndex: r.chunkIndex },
              }),
          ),
        )
      }
      await lc.createHnswIndex({ dimensions: dim, m: 16, efConstruction: 64, distanceFunction: 'vector_cosine_ops' })
      await pool.query('analyze langchain_filter_bench')
    },
    search(tenant, query, filter) {
      const translated = toLangChain(filter)
      if (!translated) return undefined
      return (async () => {
        const hits = (await lc.similaritySearchVectorWithScore(Array.from(query), 10, { ...translated, tenantId: tenant })) as Array<
          [{ metadata: { documentId: string; chunkIndex: number } }, number]
        >
        return hits.map(([doc, distance]) => ({ documentId: doc.metadata.documentId, chunkIndex: doc.metadata.chunkIndex, distance }))
      })()
    },
    async close() {
      await pool.query('drop table if exists langchain_filter_bench').catch(() => {})
      // The store holds a client of the pool: end() releases it and ends the pool (pool.end() alone waits for it).
      if (lc) await lc.end()
      else await pool.end()
    },
  }
}

/** The ladder's filters in LangChain's syntax, or undefined where it has none ($or, non-numeric ranges). */
export function toLangChain(filter: MetadataFilter): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(filter)) {
    if (key.startsWith('$')) return undefined
    if (value === null || typeof value !== 'object') {
      out[key] = value
      continue
    }
    const ops = value as Record<string, unknown>
    const mapped: Record<string, unknown> = {}
    for (const [op, operand] of Object.entries(ops)) {
      const name = { $in: 'in', $nin: 'notIn', $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte', $ne: 'neq' }[op]
      if (!name || (['gt', 'gte', 'lt', 'lte'].includes(name) && typeof operand !== 'number')) return undefined
      mapped[name] = operand
    }
    out[key] = mapped
  }
  return out
}
