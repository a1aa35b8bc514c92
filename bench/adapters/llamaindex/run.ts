import { cpus, loadavg, totalmem } from 'node:os'
import { performance } from 'node:perf_hooks'
import pg from 'pg'
import type { BaseNode, NodeRelationship } from '@llamaindex/core/schema'
import type { MetadataFilters, VectorStoreQuery, VectorStoreQueryMode, VectorStoreQueryResult } from '@llamaindex/core/vector-store'
import type { PgVectorStore, TenantTuningReport } from '../../../src/index.js'
import type { PgScaleVectorStore } from 'pgscale/llamaindex'
import { benchCorpus, recallAt, type BenchCorpus, type BenchQuery, type BenchRow } from './corpus.js'
import { loadLlamaIndexPeers, type LlamaIndexPeers, type LlamaPgVectorStore } from './peers.js'

/** What one run measures on: the server, the corpus, how nodes go in. */
export interface LlamaIndexBenchOptions {
  url: string
  rows: number
  dim: number
  tenants: number
  queriesPerTenant: number
  /** Nodes per `add` call, for both stores. */
  batch: number
}

/** Recall and latency of one store's queries. */
export interface QueryMeasure {
  /** Mean recall@10 against the exact top 10 (cosine) of the query's tenant (and filter). */
  recallAt10: number
  p50Ms: number
  p95Ms: number
  /** Mean results returned (10 unless the store came back short). */
  meanResults: number
  /** Queries answered with fewer than 10 results, and the fewest. */
  short: number
  fewest: number
}

/** One store's figures. */
export interface StoreMeasure {
  store: string
  setup: string
  ingestSeconds?: number
  ingestRowsPerSecond?: number
  /** The index build after the load (pgscale: optimize(); @llamaindex/postgres: CREATE INDEX … USING hnsw by hand). */
  indexSeconds?: number
  /** pgscale: what optimize() chose per tenant (path, ef_search, recall on its sample, the settings it tried). */
  tuning?: Array<{ tenantId: string; path: string; efSearch: number | null; recall: number; tried: string[] }>
  unfiltered: QueryMeasure
  filtered: QueryMeasure
}

/** The report: where, on what, how, and the figures. */
export interface LlamaIndexBenchReport {
  /** `loadAverage`: the 1-minute load average when the run started and when it ended (other work on the machine skews latencies). */
  machine: { cpu: string; cores: number; memoryGiB: number; node: string; loadAverage: [number, number] }
  server: { version: string; pgvector: string }
  sizes: {
    rows: number
    dimensions: number
    tenants: number
    queries: number
    batch: number
    filterValues: string[]
    filterSelectivity: number
  }
  method: string[]
  results: StoreMeasure[]
}

const PGSCALE_TABLE = 'li_bench_pgscale'
const LLAMA_TABLE = 'li_bench_llamaindex'

/**
 * LlamaIndex.TS's own `PGVectorStore` (@llamaindex/postgres) and pgscale through the adapter, on
 * the same nodes in the same run and server, side by side: the two loads alternate batch by batch,
 * and every query is asked of both stores in turn (alternating which goes first), so load from
 * other work on the machine falls on both alike. Measured: load rate through `add`, then recall@10
 * against the exact answer and p50 latency of `query` (`similarityTopK` 10), unfiltered and with an
 * `in` filter of ~10% selectivity, each query scoped to one tenant (pgscale: the adapter's tenant;
 * @llamaindex/postgres: its collection) — first @llamaindex/postgres as shipped (no vector index)
 * beside pgscale after `optimize()`, then with an HNSW index added to its table, beside pgscale again.
 *
 * ### Examples
 * ```ts
 * const report = await runLlamaIndexBench({ url, rows: 20_000, dim: 384, tenants: 2, queriesPerTenant: 50, batch: 1000 }, console.error)
 * ```
 */
export async function runLlamaIndexBench(options: LlamaIndexBenchOptions, log: (line: string) => void): Promise<LlamaIndexBenchReport> {
  const peers = await loadLlamaIndexPeers()
  const loadAtStart = loadavg()[0]!
  log(`corpus: ${options.rows} rows × ${options.dim}, ${options.tenants} tenants, ${options.queriesPerTenant} queries each, exact answers`)
  const corpus = benchCorpus(options)
  await dropTables(options.url)
  const stores = await openStores(peers, corpus, options)
  try {
    const results = await measureStores(peers, corpus, stores, options, log)
    return {
      machine: {
        cpu: cpus()[0]?.model ?? '?',
        cores: cpus().length,
        memoryGiB: Math.round(totalmem() / 2 ** 30),
        node: process.version,
        loadAverage: [loadAtStart, loadavg()[0]!],
      },
      server: await serverInfo(options.url),
      sizes: {
        rows: corpus.rows.length,
        dimensions: options.dim,
        tenants: options.tenants,
        queries: corpus.queries.length,
        batch: options.batch,
        filterValues: corpus.filterValues,
        filterSelectivity: corpus.selectivity,
      },
      method: METHOD,
      results,
    }
  } finally {
    await stores.close()
  }
}

const METHOD = [
  'Clustered synthetic corpus (bench/synthetic/corpus.ts), unit vectors; each node a TextNode with its vector, its metadata ({ category, topic, kind }) and its document as SOURCE; node ids are UUIDs (@llamaindex/postgres requires them).',
  'Side by side, so load from other work on the machine falls on both alike: the stores load the same nodes (fresh TextNodes for each) through their add(), `batch` nodes a call, tenant by tenant, taking turns batch by batch (@llamaindex/postgres: setCollection(tenant)); ingest rate = rows / time in add(). Every query is asked of both stores in turn, the first alternating.',
  'pgscale: PgVectorStore.open + store.optimize() (per-tenant HNSW indexes above 5,000 rows, m 16, ef_construction 64, ef_search tuned to recall 0.98) and metadata indexes on category and ref_doc_id; queries through PgScaleVectorStore.query.',
  '@llamaindex/postgres 0.0.66 PGVectorStore: as shipped (it creates no vector index: every query is an exact scan of the table), then with an HNSW index added by hand (m 16, ef_construction 64, the server default ef_search 40), which is the usual next step.',
  'Queries: similarityTopK 10, mode default, queryEmbedding given; the filter is { key: category, operator: in, value: [2 of 20 categories] }; recall@10 against the exact top 10 by cosine of the tenant (under the filter), computed in JavaScript on the same float4 values; latency = wall time of query() in this process, after 10 warm-up queries per store; one query at a time. pgscale is measured twice: beside @llamaindex/postgres as shipped, then beside it with its HNSW index.',
]

async function dropTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`drop table if exists ${PGSCALE_TABLE}, ${LLAMA_TABLE}`)
  } finally {
    await client.end()
  }
}

async function serverInfo(url: string): Promise<LlamaIndexBenchReport['server']> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ version: string; pgvector: string }>(
      `select current_setting('server_version') as version, (select extversion from pg_extension where extname = 'vector') as pgvector`,
    )
    return rows[0]!
  } finally {
    await client.end()
  }
}

/** A node of the corpus, built fresh for each store (@llamaindex/postgres writes `create_date` into a node's metadata). */
function toNode(peers: LlamaIndexPeers, row: BenchRow): BaseNode {
  return new peers.TextNode({
    id_: row.id,
    text: row.text,
    metadata: { ...row.metadata },
    embedding: Array.from(row.vector),
    relationships: { ['SOURCE' as NodeRelationship]: { nodeId: row.refDoc, metadata: {} } },
  })
}

type Ask = (q: BenchQuery, filters: MetadataFilters | undefined) => Promise<VectorStoreQueryResult>

/** Both stores, open and empty: pgscale's adapters by tenant, and @llamaindex/postgres's store. */
interface Stores {
  llama: LlamaPgVectorStore
  pgscale: PgVectorStore
  tenants: Map<string, PgScaleVectorStore>
  close(): Promise<void>
}

async function openStores(peers: LlamaIndexPeers, corpus: BenchCorpus, options: LlamaIndexBenchOptions): Promise<Stores> {
  const db = await peers.pgscale.connect(options.url)
  const store = await peers.pgscale.PgVectorStore.open(db, { table: PGSCALE_TABLE, dimensions: options.dim })
  // The owner's setup the adapter's docs recommend: the ref doc id and the filtered key declared.
  await store.createMetadataIndex('category', 'string')
  await store.createMetadataIndex('ref_doc_id', 'string')
  const tenantIds = [...new Set(corpus.rows.map((r) => r.tenant))]
  const tenants = new Map(tenantIds.map((t) => [t, peers.adapter.PgScaleVectorStore.forTenant(store, t, { embedModel: peers.embedModel })]))
  const llama = new peers.PGVectorStore({
    clientConfig: { connectionString: options.url },
    tableName: LLAMA_TABLE,
    dimensions: options.dim,
    embedModel: peers.embedModel,
  })
  return {
    llama,
    pgscale: store,
    tenants,
    close: async () => {
      await (await llama.client()).close()
      await store.close()
      await db.close()
    },
  }
}

/** Loads, indexes and queries both stores side by side; the four rows of the report. */
async function measureStores(
  peers: LlamaIndexPeers,
  corpus: BenchCorpus,
  stores: Stores,
  options: LlamaIndexBenchOptions,
  log: (line: string) => void,
): Promise<StoreMeasure[]> {
  const seconds = await loadSideBySide(peers, corpus, options.batch, {
    llama: (tenant, nodes) => {
      stores.llama.setCollection(tenant)
      return stores.llama.add(nodes)
    },
    pgscale: (tenant, nodes) => stores.tenants.get(tenant)!.add(nodes),
  })
  log(`loaded: @llamaindex/postgres ${seconds.llama!.toFixed(1)} s, pgscale ${seconds.pgscale!.toFixed(1)} s`)
  const t0 = performance.now()
  const optimized = await stores.pgscale.optimize()
  const optimizeSeconds = (performance.now() - t0) / 1000
  log(`pgscale: optimize() in ${optimizeSeconds.toFixed(1)} s — ${optimized.notes.join(' ')}`)
  const filters = peers.filters('category', corpus.filterValues)
  const asks: Record<'llama' | 'pgscale', Ask> = {
    llama: (q, f) => {
      stores.llama.setCollection(q.tenant)
      return stores.llama.query(query(q.vector, f))
    },
    pgscale: (q, f) => stores.tenants.get(q.tenant)!.query(query(q.vector, f)),
  }
  const shipped = await measureSideBySide(corpus, filters, asks)
  log(`beside @llamaindex/postgres as shipped: ${JSON.stringify(shipped)}`)
  const hnswSeconds = await buildHnsw(options.url)
  log(`@llamaindex/postgres: HNSW index built by hand in ${hnswSeconds.toFixed(1)} s`)
  const indexed = await measureSideBySide(corpus, filters, asks)
  log(`beside @llamaindex/postgres + HNSW: ${JSON.stringify(indexed)}`)
  const pgscaleRow = { store: 'pgscale PgScaleVectorStore', tuning: tuningOf(optimized) }
  return [
    { store: LLAMA, setup: 'as shipped: no vector index', ...rate(corpus, seconds.llama!), ...shipped.llama },
    {
      ...pgscaleRow,
      setup: 'optimize(); measured beside the row above',
      ...rate(corpus, seconds.pgscale!),
      indexSeconds: optimizeSeconds,
      ...shipped.pgscale,
    },
    { store: LLAMA, setup: '+ HNSW index by hand (ef_search 40)', indexSeconds: hnswSeconds, ...indexed.llama },
    { ...pgscaleRow, setup: 'optimize(); measured beside the row above', ...indexed.pgscale },
  ]
}

const LLAMA = '@llamaindex/postgres PGVectorStore'

function rate(corpus: BenchCorpus, seconds: number): Pick<StoreMeasure, 'ingestSeconds' | 'ingestRowsPerSecond'> {
  return { ingestSeconds: seconds, ingestRowsPerSecond: corpus.rows.length / seconds }
}

function tuningOf(optimized: { tuning: { tenants: TenantTuningReport[] } }): StoreMeasure['tuning'] {
  return optimized.tuning.tenants.map((t) => ({
    tenantId: t.tenantId,
    path: t.path,
    efSearch: t.efSearch,
    recall: t.recall,
    tried: t.tried.map(
      (x) => `ef_search ${x.efSearch}${x.m === null ? '' : ` m ${x.m}`}: recall ${x.recall.toFixed(3)}, p50 ${x.p50Ms.toFixed(2)} ms`,
    ),
  }))
}

/** Loads every tenant's nodes into each store through `add`, `batch` at a time, the stores taking turns batch by batch; seconds in add, per store. */
async function loadSideBySide(
  peers: LlamaIndexPeers,
  corpus: BenchCorpus,
  batch: number,
  adds: Record<string, (tenant: string, nodes: BaseNode[]) => Promise<unknown>>,
): Promise<Record<string, number>> {
  const seconds: Record<string, number> = Object.fromEntries(Object.keys(adds).map((name) => [name, 0]))
  let turn = 0
  for (let start = 0; start < corpus.rows.length; start += batch) {
    const slice = corpus.rows.slice(start, start + batch)
    for (const tenant of new Set(slice.map((r) => r.tenant))) {
      const rows = slice.filter((r) => r.tenant === tenant)
      for (const name of rotate(Object.keys(adds), turn++)) {
        const nodes = rows.map((r) => toNode(peers, r)) // fresh nodes for each store
        const t0 = performance.now()
        await adds[name]!(tenant, nodes)
        seconds[name]! += (performance.now() - t0) / 1000
      }
    }
  }
  return seconds
}

/** Recall@10 and latency of each ask over every query, unfiltered and filtered, the asks taking turns per query, after a warm-up. */
async function measureSideBySide<K extends string>(
  corpus: BenchCorpus,
  filters: MetadataFilters,
  asks: Record<K, Ask>,
): Promise<Record<K, Pick<StoreMeasure, 'unfiltered' | 'filtered'>>> {
  const names = Object.keys(asks) as K[]
  for (const q of corpus.queries.slice(0, 10)) for (const name of names) await asks[name](q, filters)
  const run = async (filtered: boolean): Promise<Record<K, QueryMeasure>> => {
    const samples = Object.fromEntries(names.map((n) => [n, { times: [] as number[], recall: 0, counts: [] as number[] }])) as Record<
      K,
      Sample
    >
    for (const [i, q] of corpus.queries.entries()) {
      for (const name of rotate(names, i)) {
        const t0 = performance.now()
        const result = await asks[name](q, filtered ? filters : undefined)
        const sample = samples[name]
        sample.times.push(performance.now() - t0)
        sample.recall += recallAt(result.ids, filtered ? q.exactFiltered : q.exact)
        sample.counts.push(result.ids.length)
      }
    }
    return Object.fromEntries(names.map((n) => [n, summary(samples[n], corpus.queries.length)])) as Record<K, QueryMeasure>
  }
  const unfiltered = await run(false)
  const filteredRun = await run(true)
  return Object.fromEntries(names.map((n) => [n, { unfiltered: unfiltered[n], filtered: filteredRun[n] }])) as Record<
    K,
    Pick<StoreMeasure, 'unfiltered' | 'filtered'>
  >
}

interface Sample {
  times: number[]
  recall: number
  counts: number[]
}

function summary(sample: Sample, n: number): QueryMeasure {
  const times = [...sample.times].sort((a, b) => a - b)
  return {
    recallAt10: sample.recall / n,
    p50Ms: times[Math.floor(n / 2)]!,
    p95Ms: times[Math.floor(n * 0.95)]!,
    meanResults: sample.counts.reduce((a, b) => a + b, 0) / n,
    short: sample.counts.filter((c) => c < 10).length,
    fewest: Math.min(...sample.counts),
  }
}

/** `names` starting at `turn` (mod length): who goes first takes turns. */
function rotate<T>(names: readonly T[], turn: number): T[] {
  const k = turn % names.length
  return [...names.slice(k), ...names.slice(0, k)]
}

function query(vector: Float32Array, filters: MetadataFilters | undefined): VectorStoreQuery {
  return { queryEmbedding: Array.from(vector), similarityTopK: 10, mode: 'default' as VectorStoreQueryMode, filters }
}

async function buildHnsw(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const t0 = performance.now()
    await client.query(
      `create index ${LLAMA_TABLE}_hnsw on ${LLAMA_TABLE} using hnsw (embeddings vector_cosine_ops) with (m = 16, ef_construction = 64)`,
    )
    await client.query(`analyze ${LLAMA_TABLE}`)
    return (performance.now() - t0) / 1000
  } finally {
    await client.end()
  }
}
