import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import pgvector from 'pgvector'
import { InvalidArgumentError, PgVectorStore, type ProvisionedDatabase, type ServerInfo, type StoreStats } from '../../src/index.js'
import { renderStatements } from '../../src/bench-kit.js'
import { dropBenchSchema } from '../report/bench-cleanup.js'
import { machineInfo, type MachineInfo } from '../report/machine.js'
import { median, summarize, type Percentiles } from '../report/stats.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../synthetic/corpus.js'
import { ingestMethods, loadCeilingSource, writeCopyText } from './ingest-methods.js'
import { loadLangChain } from './langchain.js'
import { readRowFile, writeRowFile } from './row-file.js'

/** Parameters of a store-bench run. */
export interface StoreBenchOptions {
  chunks: number
  tenants: number
  dim: number
  rounds: number
  queries: number
  seed: string
  skipLangchain: boolean
  /** Keep the bench's schema (its tables and their records) after the run. Default: dropped. */
  keep?: boolean
}

/** What `store-bench --json` writes. */
export interface StoreBenchReport {
  machine: MachineInfo
  server: ServerInfo
  method: {
    chunks: number
    tenants: number
    dim: number
    topics: string
    seed: string
    rounds: number
    queries: number
    blocks: number
    note: string
  }
  ingest: Record<string, { rowsPerSecond: number; vsStore: number }>
  tenantIndexes: { built: number; seconds: number }
  search: {
    recallAt10: number
    pgscaleMs: Percentiles
    rawPgMs: Percentiles
    overhead: number
    /** The same comparison (its own interleaved blocks, same run) through a handle opened with `querySample: false`. */
    sampleOff: { pgscaleMs: Percentiles; rawPgMs: Percentiles; overhead: number }
    /**
     * The three in the same blocks (the sampled handle, the unsampled one, raw; order rotating per
     * block): each handle's median block ratio to raw, and the unsampled one's to the sampled one.
     */
    sameBlocks: { sampleOn: number; sampleOff: number; offVsOn: number }
  }
  exactScanMs: {
    dim: number
    rows: number
    plain: Percentiles
    extended: Percentiles
    bytes: { plain: StoreStats['bytes']; extended: StoreStats['bytes'] }
  }
  sizes: StoreStats['bytes']
  process: { peakRssMB: number }
}

/** The schema store-bench works in: its tables, and their records in its own bookkeeping, go with it. */
export const STORE_BENCH_SCHEMA = 'pgscale_store_bench'
const TABLE = `${STORE_BENCH_SCHEMA}.bench_chunks`
const VECTOR_ONLY_TABLE = `${STORE_BENCH_SCHEMA}.bench_chunks_vector_only`
const SOURCE_TABLE = `${STORE_BENCH_SCHEMA}.bench_ceiling_source`

/**
 * Removes everything store-bench creates: its schema (the tables, and the records of its stores
 * in that schema's bookkeeping) and LangChain.js's table (`public.langchain_chunks`). What the CLI
 * runs after a run without `--keep`, and on SIGINT/SIGTERM.
 *
 * ### Examples
 * ```ts
 * await dropStoreBenchData(provisioned.db)
 * ```
 */
export async function dropStoreBenchData(db: ProvisionedDatabase['db']): Promise<void> {
  await dropBenchSchema(db, STORE_BENCH_SCHEMA)
  await sql`drop table if exists public.langchain_chunks`.execute(db)
}

/**
 * Runs the store's performance bench: ingest paths side by side, search after optimize() beside the
 * same SQL raw, and exact scans with PLAIN vs EXTENDED storage. The corpus is generated once into a
 * temporary file every method replays, so memory stays flat whatever `chunks` is.
 *
 * ### Examples
 * ```ts
 * const report = await runStoreBench(provisioned, { chunks: 100_000, tenants: 4, dim: 384, rounds: 3, queries: 200, seed: '42', skipLangchain: true }, console.error)
 * ```
 */
export async function runStoreBench(
  provisioned: ProvisionedDatabase,
  o: StoreBenchOptions,
  log: (line: string) => void,
): Promise<StoreBenchReport> {
  const { db, url, info } = provisioned
  if (!url)
    throw new InvalidArgumentError(
      'store-bench compares with psql and raw pg: it needs a server (--db local, --db container or --pg URL), not the embedded PGlite',
    )
  const spec: CorpusSpec = {
    seed: o.seed,
    dim: o.dim,
    topics: 'shared',
    tenants: Array.from({ length: o.tenants }, (_, i) => ({ id: `tenant-${i}`, chunks: Math.floor(o.chunks / o.tenants) })),
  }
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-store-bench-'))
  // A SIGINT/SIGTERM ends the process from the CLI's handler, past the finally below.
  const removeDir = () => rmSync(dir, { recursive: true, force: true })
  process.once('exit', removeDir)
  const raw = new pg.Client({ connectionString: url })
  await raw.connect()
  await dropStoreBenchData(db)
  await sql.raw(`create schema ${STORE_BENCH_SCHEMA}`).execute(db)
  try {
    log(`generating ${o.chunks} chunks (${o.tenants} tenants, dim ${o.dim}, shared topics, seed ${o.seed}) into ${dir}`)
    const rowFile = join(dir, 'rows.bin')
    const tsvFile = join(dir, 'rows.tsv')
    const chunks = writeRowFile(rowFile, generateCorpus(spec))
    writeCopyText(tsvFile, readRowFile(rowFile))
    const store = await PgVectorStore.open(db, { table: TABLE, dimensions: o.dim })
    const vectorOnly = await PgVectorStore.open(db, { table: VECTOR_ONLY_TABLE, dimensions: o.dim, fullText: false })
    await loadCeilingSource(raw, SOURCE_TABLE, rowFile)
    const langchain = o.skipLangchain ? undefined : await loadLangChain(o.dim)
    if (!langchain) log('LangChain.js not measured: run `npm run bench:langchain:install` to include it')
    const ingest = await compareIngest(
      db,
      o,
      chunks,
      ingestMethods({ store, vectorOnly, sourceTable: SOURCE_TABLE, raw, url, table: TABLE, rowFile, tsvFile, langchain }),
      log,
    )
    if (langchain) await langchain.drop(url)
    await raw.query(`drop table ${SOURCE_TABLE}; drop table ${VECTOR_ONLY_TABLE}`)
    log('loading once more, building the tenant indexes (optimize)')
    await store.bulkIngest(readRowFile(rowFile))
    const search = await compareSearch(db, store, raw, spec, o)
    const exactScanMs = await compareStorage(db, o.seed)
    return {
      machine: machineInfo(),
      server: info,
      method: {
        chunks,
        tenants: o.tenants,
        dim: o.dim,
        topics: 'shared',
        seed: o.seed,
        rounds: o.rounds,
        queries: search.queries,
        blocks: search.blocks,
        note: 'ingest: median rows/s over rounds, methods interleaved in a rotating order, each into an identical empty table (fullText: false: the same table without the tsvector column and GIN index), all reading the same pre-generated rows from a file; the server-bound ceiling inserts the same rows from an unlogged table in the server (INSERT … SELECT); search: pgscale (ef_search 100, relaxed) and the same SQL raw through pg (BEGIN + SET LOCAL, the query with the vector formatted by pgvector.toSql per call, COMMIT) interleaved in blocks of 20 queries, overhead = median of per-block time ratios - 1; then the same against a second handle on the same table opened with querySample: false (sampleOff), its own interleaved blocks; then the three (sampled, unsampled, raw) in the same blocks of 20, the first rotating per block (sameBlocks: median block ratios)',
      },
      ingest,
      tenantIndexes: search.tenantIndexes,
      search: search.result,
      exactScanMs,
      sizes: (await store.stats()).bytes,
      process: { peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024) },
    }
  } finally {
    await raw.end()
    process.off('exit', removeDir)
    removeDir()
    if (!o.keep) await dropStoreBenchData(db)
  }
}

/** Every method loads the same rows into the empty table, `rounds` times in a rotating order; medians. */
async function compareIngest(
  db: ProvisionedDatabase['db'],
  o: StoreBenchOptions,
  chunks: number,
  methods: Record<string, () => Promise<void>>,
  log: (line: string) => void,
): Promise<StoreBenchReport['ingest']> {
  const rates: Record<string, number[]> = Object.fromEntries(Object.keys(methods).map((m) => [m, []]))
  for (let round = 1; round <= o.rounds; round++) {
    // Rotate the order every round, so no method always runs first (or right after LangChain).
    const entries = Object.entries(methods)
    const shift = (round - 1) % entries.length
    for (const [name, load] of [...entries.slice(shift), ...entries.slice(0, shift)]) {
      await sql`truncate ${sql.raw(TABLE)}, ${sql.raw(VECTOR_ONLY_TABLE)}`.execute(db)
      await sql`checkpoint`.execute(db).catch(() => {})
      const started = performance.now()
      await load()
      const rate = chunks / ((performance.now() - started) / 1000)
      rates[name]!.push(rate)
      log(`round ${round}/${o.rounds} ${name}: ${Math.round(rate)} rows/s`)
    }
  }
  await sql`truncate ${sql.raw(TABLE)}`.execute(db)
  const medians = Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, median(v)]))
  const storeRate = medians['store.bulkIngest (binary COPY)']!
  return Object.fromEntries(Object.entries(medians).map(([k, v]) => [k, { rowsPerSecond: v, vsStore: storeRate / v }]))
}

/** After optimize(): recall against exactSearch, then pgscale's search and the same SQL raw, interleaved in blocks. */
async function compareSearch(db: ProvisionedDatabase['db'], store: PgVectorStore, raw: pg.Client, spec: CorpusSpec, o: StoreBenchOptions) {
  const optimized = await store.optimize({ ownIndexAbove: Math.min(5000, Math.floor(o.chunks / o.tenants) - 1) })
  const statements = renderStatements(store.config)
  const queries = spec.tenants.flatMap((t) =>
    queryVectors(spec, t.id, o.queries).map((q) => ({ tenant: t.id, q, literal: `[${Array.from(q).join(',')}]` })),
  )
  let found = 0
  let possible = 0
  for (const { tenant, q } of queries) {
    const truth = new Set((await store.forTenant(tenant).exactSearch(q, { k: 10 })).map((r) => `${r.documentId}#${r.chunkIndex}`))
    const got = await store.forTenant(tenant).search(q, { k: 10 })
    found += got.filter((r) => truth.has(`${r.documentId}#${r.chunkIndex}`)).length
    possible += truth.size
  }
  const begin = `BEGIN; SET LOCAL hnsw.ef_search = '100'; SET LOCAL hnsw.iterative_scan = 'relaxed_order'`
  // The same settings on both sides (not the tenant's tuned ef_search), so the SQL the server runs is the same.
  const runStore = async ({ tenant, q }: (typeof queries)[number]) =>
    void (await store.forTenant(tenant).search(q, { k: 10, efSearch: 100, iterativeScan: 'relaxed' }))
  // What an app writing the SQL by hand does per call: format the vector (pgvector's toSql), then
  // BEGIN + SET LOCAL, the query, COMMIT.
  const runRaw = async ({ tenant, q }: (typeof queries)[number]) => {
    await raw.query(begin)
    await raw.query(statements.search, [tenant, pgvector.toSql(Array.from(q)), 10])
    await raw.query('COMMIT')
  }
  const timed = await interleave(queries, runStore, runRaw)
  const unsampled = await PgVectorStore.open(db, { table: TABLE, dimensions: o.dim, querySample: false })
  const runUnsampled = async ({ tenant, q }: (typeof queries)[number]) =>
    void (await unsampled.forTenant(tenant).search(q, { k: 10, efSearch: 100, iterativeScan: 'relaxed' }))
  const off = await interleave(queries, runUnsampled, runRaw)
  const three = await interleaveArms(queries, [runStore, runUnsampled, runRaw])
  await unsampled.close()
  return {
    queries: queries.length,
    blocks: timed.ratios.length,
    tenantIndexes: { built: optimized.built.length, seconds: optimized.built.reduce((s, b) => s + b.seconds, 0) },
    result: {
      recallAt10: found / possible,
      pgscaleMs: summarize(timed.a),
      rawPgMs: summarize(timed.b),
      overhead: median(timed.ratios) - 1,
      sampleOff: { pgscaleMs: summarize(off.a), rawPgMs: summarize(off.b), overhead: median(off.ratios) - 1 },
      sameBlocks: {
        sampleOn: median(three.map(([on, , raw]) => on! / raw!)),
        sampleOff: median(three.map(([, off, raw]) => off! / raw!)),
        offVsOn: median(three.map(([on, off]) => off! / on!)),
      },
    },
  }
}

/**
 * Times two ways of running the same items side by side: both warmed on the first 100, then blocks
 * of 20, alternating which goes first so neither always meets the colder cache.
 */
async function interleave<T>(
  items: readonly T[],
  a: (item: T) => Promise<void>,
  b: (item: T) => Promise<void>,
): Promise<{ a: number[]; b: number[]; ratios: number[] }> {
  for (const item of items.slice(0, 100)) {
    await a(item)
    await b(item)
  }
  const out = { a: [] as number[], b: [] as number[], ratios: [] as number[] }
  const timeBlock = async (slice: readonly T[], run: (item: T) => Promise<void>, into: number[]) => {
    let total = 0
    for (const item of slice) {
      const t0 = performance.now()
      await run(item)
      const ms = performance.now() - t0
      into.push(ms)
      total += ms
    }
    return total
  }
  for (let i = 0, block = 0; i < items.length; i += 20, block++) {
    const slice = items.slice(i, i + 20)
    const aFirst = block % 2 === 0
    const first = await timeBlock(slice, aFirst ? a : b, aFirst ? out.a : out.b)
    const second = await timeBlock(slice, aFirst ? b : a, aFirst ? out.b : out.a)
    out.ratios.push(aFirst ? first / second : second / first)
  }
  return out
}

/**
 * Times several ways of running the same items in the same blocks: each warmed on the first 100,
 * then blocks of 20, every way in turn on the block's items, the first way rotating per block.
 * Resolves to each block's total per way (in the ways' order).
 */
async function interleaveArms<T>(items: readonly T[], ways: ReadonlyArray<(item: T) => Promise<void>>): Promise<number[][]> {
  for (const item of items.slice(0, 100)) for (const way of ways) await way(item)
  const blocks: number[][] = []
  for (let i = 0, block = 0; i < items.length; i += 20, block++) {
    const slice = items.slice(i, i + 20)
    const totals = ways.map(() => 0)
    for (let j = 0; j < ways.length; j++) {
      const w = (block + j) % ways.length
      const t0 = performance.now()
      for (const item of slice) await ways[w]!(item)
      totals[w] = performance.now() - t0
    }
    blocks.push(totals)
  }
  return blocks
}

/**
 * Exact scan of one tenant: PLAIN vs EXTENDED vector storage. At 384 dimensions a row stays under
 * PostgreSQL's 2 kB TOAST threshold either way; at 1536 (a common embedding size) EXTENDED moves the
 * vector out of line. Same 5,000 rows in two tables, queries interleaved.
 */
async function compareStorage(db: ProvisionedDatabase['db'], seed: string): Promise<StoreBenchReport['exactScanMs']> {
  const dim = 1536
  const spec: CorpusSpec = { seed, dim, topics: 'shared', tenants: [{ id: 'storage', chunks: 5000 }] }
  const plain = await PgVectorStore.open(db, {
    table: `${STORE_BENCH_SCHEMA}.bench_storage_plain`,
    dimensions: dim,
    embeddingStorage: 'plain',
  })
  const extended = await PgVectorStore.open(db, {
    table: `${STORE_BENCH_SCHEMA}.bench_storage_extended`,
    dimensions: dim,
    embeddingStorage: 'extended',
  })
  for (const s of [plain, extended]) {
    await s.bulkIngest(generateCorpus(spec))
    await sql`analyze ${sql.raw(s.config.qualified)}`.execute(db)
  }
  const plainMs: number[] = []
  const extendedMs: number[] = []
  for (const q of queryVectors(spec, 'storage', 40)) {
    let t0 = performance.now()
    await plain.forTenant('storage').exactSearch(q, { k: 10 })
    plainMs.push(performance.now() - t0)
    t0 = performance.now()
    await extended.forTenant('storage').exactSearch(q, { k: 10 })
    extendedMs.push(performance.now() - t0)
  }
  return {
    dim,
    rows: 5000,
    plain: summarize(plainMs),
    extended: summarize(extendedMs),
    bytes: { plain: (await plain.stats()).bytes, extended: (await extended.stats()).bytes },
  }
}
