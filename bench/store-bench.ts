/**
 * The store's performance bench (issue: PgVectorStore). Side by side, in one run, on the same
 * seeded shared-topic chunks: bulkIngest vs a bare Node binary COPY, psql \copy (text), multi-row
 * INSERT, and LangChain.js addDocuments (when installed with `npm run bench:langchain:install`);
 * then tenant search latency and recall after optimize(), and pgscale's overhead over the same
 * SQL sent raw through `pg`; and exact-scan time with PLAIN vs EXTENDED vector storage.
 *
 *   npm run bench:store -- --chunks 100000 --tenants 4 --rounds 3 [--pg URL] [--json FILE]
 */
import { spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Command } from 'commander'
import { sql } from 'kysely'
import pg from 'pg'
import { PgVectorStore, provision, type IngestRow, type ProviderName } from '../src/index.js'
import { renderStatements } from '../src/bench-kit.js'
import { bareBinaryCopy } from './baselines/raw-copy.js'
import { machineInfo } from './report/machine.js'
import { fmt, median, summarize } from './report/stats.js'
import { renderTable } from './report/table.js'
import { generateCorpus, queryVectors, type CorpusSpec } from './synthetic/corpus.js'

const program = new Command('store-bench')
  .option('--chunks <n>', 'chunks in all', '100000')
  .option('--tenants <n>', 'tenants of equal size', '4')
  .option('--dim <n>', 'dimensions', '384')
  .option('--rounds <n>', 'ingest rounds per method (median reported)', '3')
  .option('--queries <n>', 'search queries per tenant', '200')
  .option('--seed <s>', 'data seed', '42')
  .option('--pg <url>', 'PostgreSQL URL (default: a throwaway local cluster)')
  .option('--json <file>', 'write the results as JSON')
  .option('--skip-langchain', 'do not measure LangChain.js even if installed')
  .parse()
const opts = program.opts<{ chunks: string; tenants: string; dim: string; rounds: string; queries: string; seed: string; pg?: string; json?: string; skipLangchain?: boolean }>()
const chunks = Number(opts.chunks)
const tenantCount = Number(opts.tenants)
const dim = Number(opts.dim)
const rounds = Number(opts.rounds)
const spec: CorpusSpec = {
  seed: opts.seed,
  dim,
  topics: 'shared',
  tenants: Array.from({ length: tenantCount }, (_, i) => ({ id: `tenant-${i}`, chunks: Math.floor(chunks / tenantCount) })),
}
const log = (msg: string) => process.stderr.write(`[store-bench] ${msg}\n`)

const provider: ProviderName = opts.pg ? 'url' : 'local'
const { db, url, info, stop } = await provision({ provider, url: opts.pg })
if (!url) throw new Error('store-bench needs a server (psql and raw pg baselines)')
process.on('SIGINT', () => void stop().finally(() => process.exit(130)))
log(`${info.provider}: PostgreSQL ${info.serverVersion}, pgvector ${info.pgvectorVersion}, ${JSON.stringify(info.settings)}`)

log(`generating ${chunks} chunks (${tenantCount} tenants, dim ${dim}, shared topics, seed ${opts.seed}) into memory`)
const rows: IngestRow[] = [...generateCorpus(spec)]
const tsvDir = mkdtempSync(join(tmpdir(), 'pgscale-store-bench-'))
const tsv = join(tsvDir, 'rows.tsv')
{
  // Written in slices: the whole file is larger than a JavaScript string may be.
  const fd = openSync(tsv, 'w')
  for (let i = 0; i < rows.length; i += 1000) {
    const lines = rows.slice(i, i + 1000).map((r) => [r.tenantId, r.documentId, r.chunkIndex, escapeCopyText(r.content), escapeCopyText(JSON.stringify(r.metadata)), `[${Array.from(r.embedding).join(',')}]`].join('\t'))
    writeSync(fd, lines.join('\n') + '\n')
  }
  closeSync(fd)
}

const raw = new pg.Client({ connectionString: url })
await raw.connect()

// ---------------------------------------------------------------------------------------------
// 1. Ingest, side by side. Every method loads the same rows into an identical empty table.
const store = await PgVectorStore.open(db, { table: 'bench_chunks', dimensions: dim })
const columns = 'tenant_id, document_id, chunk_index, content, metadata, embedding'
const truncate = () => sql`truncate bench_chunks`.execute(db)
const methods: Record<string, () => Promise<void>> = {
  'store.bulkIngest (binary COPY)': async () => void (await store.bulkIngest(rows)),
  'bare Node binary COPY (pg-copy-streams)': () => bareBinaryCopy(raw, 'bench_chunks', rows),
  'psql \\copy (text)': async () => {
    const r = spawnSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-c', `\\copy bench_chunks (${columns}) from '${tsv}'`], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`psql failed: ${r.stderr}`)
  },
  'Node pg multi-row INSERT ×500': () => multiRowInsert(raw, rows),
}
const langchain = opts.skipLangchain ? undefined : await loadLangChain()
if (langchain) methods['LangChain.js PGVectorStore.addDocuments'] = () => langchain.add(url, rows)
else log('LangChain.js not measured: run `npm run bench:langchain:install` to include it')

const ingest: Record<string, number[]> = Object.fromEntries(Object.keys(methods).map((m) => [m, []]))
for (let round = 1; round <= rounds; round++) {
  // Rotate the order every round, so no method always runs first (or right after LangChain).
  const entries = Object.entries(methods)
  const order = [...entries.slice((round - 1) % entries.length), ...entries.slice(0, (round - 1) % entries.length)]
  for (const [name, run] of order) {
    await truncate()
    await sql`checkpoint`.execute(db).catch(() => {})
    const started = performance.now()
    await run()
    const seconds = (performance.now() - started) / 1000
    ingest[name]!.push(chunks / seconds)
    log(`round ${round}/${rounds} ${name}: ${fmt(chunks / seconds)} rows/s`)
  }
}
await truncate()
if (langchain) await langchain.drop(url)

// ---------------------------------------------------------------------------------------------
// 2. Search after optimize(): each tenant has its own partial HNSW index.
log('loading once more, building the tenant indexes (optimize)')
await store.bulkIngest(rows)
const optimized = await store.optimize({ ownIndexAbove: Math.min(5000, Math.floor(chunks / tenantCount) - 1) })
const buildSeconds = optimized.built.reduce((s, b) => s + b.seconds, 0)
const statements = renderStatements(store.config)
const queriesPerTenant = Number(opts.queries)
const queries = spec.tenants.flatMap((t) => queryVectors(spec, t.id, queriesPerTenant).map((q) => ({ tenant: t.id, q, literal: `[${Array.from(q).join(',')}]` })))
let found = 0
let possible = 0
for (const { tenant, q } of queries) {
  const truth = new Set((await store.forTenant(tenant).exactSearch(q, { k: 10 })).map((r) => `${r.documentId}#${r.chunkIndex}`))
  const got = await store.forTenant(tenant).search(q, { k: 10 })
  found += got.filter((r) => truth.has(`${r.documentId}#${r.chunkIndex}`)).length
  possible += truth.size
}
const recall = found / possible

// Overhead: the same statements raw through pg, interleaved with pgscale in blocks of 20.
const storeMs: number[] = []
const rawMs: number[] = []
const blockRatios: number[] = []
const begin = `BEGIN; SET LOCAL hnsw.ef_search = '100'; SET LOCAL hnsw.iterative_scan = 'relaxed_order'`
const runStore = async ({ tenant, q }: (typeof queries)[number]): Promise<void> => {
  await store.forTenant(tenant).search(q, { k: 10 })
}
const runRaw = async ({ tenant, literal }: (typeof queries)[number]) => {
  await raw.query(begin)
  await raw.query(statements.search, [tenant, literal, 10])
  await raw.query('COMMIT')
}
// Warm both paths (caches, JIT, pools) before timing anything.
for (const query of queries.slice(0, 100)) {
  await runStore(query)
  await runRaw(query)
}
for (let i = 0, block = 0; i < queries.length; i += 20, block++) {
  const slice = queries.slice(i, i + 20)
  const timeBlock = async (run: typeof runStore, into: number[]) => {
    let total = 0
    for (const query of slice) {
      const t0 = performance.now()
      await run(query)
      const ms = performance.now() - t0
      into.push(ms)
      total += ms
    }
    return total
  }
  // Alternate which path goes first, so neither always meets the colder cache.
  let storeTotal: number
  let rawTotal: number
  if (block % 2 === 0) {
    storeTotal = await timeBlock(runStore, storeMs)
    rawTotal = await timeBlock(runRaw, rawMs)
  } else {
    rawTotal = await timeBlock(runRaw, rawMs)
    storeTotal = await timeBlock(runStore, storeMs)
  }
  blockRatios.push(storeTotal / rawTotal)
}

// ---------------------------------------------------------------------------------------------
// 3. Exact scan of one tenant: PLAIN vs EXTENDED vector storage. At 384 dimensions a row stays
// under PostgreSQL's 2 kB TOAST threshold either way; at 1536 (a common embedding size) EXTENDED
// moves the vector out of line. Same 5,000 rows in two tables, queries interleaved.
const storageDim = 1536
const storageSpec: CorpusSpec = { seed: opts.seed, dim: storageDim, topics: 'shared', tenants: [{ id: 'storage', chunks: 5000 }] }
const storageStores = {
  plain: await PgVectorStore.open(db, { table: 'bench_storage_plain', dimensions: storageDim, embeddingStorage: 'plain' }),
  extended: await PgVectorStore.open(db, { table: 'bench_storage_extended', dimensions: storageDim, embeddingStorage: 'extended' }),
}
for (const s of Object.values(storageStores)) {
  await s.bulkIngest(generateCorpus(storageSpec))
  await sql`analyze ${sql.raw(s.config.qualified)}`.execute(db)
}
const plainMs: number[] = []
const extendedMs: number[] = []
for (const q of queryVectors(storageSpec, 'storage', 40)) {
  let t0 = performance.now()
  await storageStores.plain.forTenant('storage').exactSearch(q, { k: 10 })
  plainMs.push(performance.now() - t0)
  t0 = performance.now()
  await storageStores.extended.forTenant('storage').exactSearch(q, { k: 10 })
  extendedMs.push(performance.now() - t0)
}
const storageStats = { plain: await storageStores.plain.stats(), extended: await storageStores.extended.stats() }
const stats = await store.stats()

await raw.end()
await stop()
rmSync(tsvDir, { recursive: true, force: true })

// ---------------------------------------------------------------------------------------------
const m = machineInfo()
const ingestMedian = Object.fromEntries(Object.entries(ingest).map(([k, v]) => [k, median(v)]))
const storeRate = ingestMedian['store.bulkIngest (binary COPY)']!
const search = summarize(storeMs)
const rawSearch = summarize(rawMs)
const overhead = median(blockRatios) - 1
const result = {
  machine: m,
  server: info,
  method: { chunks, tenants: tenantCount, dim, topics: 'shared', seed: opts.seed, rounds, queries: queries.length, blocks: blockRatios.length, note: 'ingest: median rows/s over rounds, methods interleaved in a rotating order, each into an identical empty table; search: pgscale and raw pg interleaved in blocks of 20 queries, overhead = median of per-block time ratios - 1' },
  ingest: Object.fromEntries(Object.entries(ingestMedian).map(([k, v]) => [k, { rowsPerSecond: v, vsStore: storeRate / v }])),
  tenantIndexes: { built: optimized.built.length, seconds: buildSeconds },
  search: { recallAt10: recall, pgscaleMs: search, rawPgMs: rawSearch, overhead },
  exactScanMs: { dim: storageDim, rows: 5000, plain: summarize(plainMs), extended: summarize(extendedMs), bytes: { plain: storageStats.plain.bytes, extended: storageStats.extended.bytes } },
  sizes: stats.bytes,
}
if (opts.json) writeFileSync(opts.json, JSON.stringify(result, null, 2))

console.log(`store-bench — ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}`)
console.log(`${info.provider}: PostgreSQL ${info.serverVersion}, pgvector ${info.pgvectorVersion}; ${Object.entries(info.settings).map(([k, v]) => `${k}=${v}`).join(', ')}`)
console.log(`${chunks} chunks × ${dim} dims, ${tenantCount} tenants, shared topics, seed ${opts.seed}; ${rounds} rounds, medians\n`)
console.log(renderTable(['ingest path', 'rows/s', 'store ÷ this'], Object.entries(ingestMedian).map(([k, v]) => [k, fmt(v), `${fmt(storeRate / v)}×`])))
console.log(`\ntenant indexes: ${optimized.built.length} built in ${fmt(buildSeconds)} s`)
console.log(renderTable(['search (k=10, ef_search 100)', 'p50 ms', 'p95 ms', 'p99 ms'], [
  ['pgscale store.search', fmt(search.p50), fmt(search.p95), fmt(search.p99)],
  ['same SQL raw through pg', fmt(rawSearch.p50), fmt(rawSearch.p95), fmt(rawSearch.p99)],
]))
console.log(`recall@10 vs exactSearch: ${fmt(recall, 4)} over ${queries.length} queries; pgscale overhead: ${fmt(overhead * 100, 2)}% (median of ${blockRatios.length} block ratios)`)
console.log(renderTable([`exact scan, 5,000 chunks × ${storageDim} dims`, 'p50 ms', 'p95 ms', 'heap MB', 'TOAST MB'], [
  ['embedding STORAGE PLAIN', fmt(median(plainMs)), fmt(summarize(plainMs).p95), fmt(storageStats.plain.bytes.heap / 2 ** 20), fmt(storageStats.plain.bytes.toast / 2 ** 20)],
  ['embedding STORAGE EXTENDED (TOAST)', fmt(median(extendedMs)), fmt(summarize(extendedMs).p95), fmt(storageStats.extended.bytes.heap / 2 ** 20), fmt(storageStats.extended.bytes.toast / 2 ** 20)],
]))
console.log(`PLAIN is ${fmt(median(extendedMs) / median(plainMs))}× faster for exact scans`)

// ---------------------------------------------------------------------------------------------
function escapeCopyText(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r')
}

async function multiRowInsert(client: pg.Client, input: IngestRow[]): Promise<void> {
  for (let i = 0; i < input.length; i += 500) {
    const batch = input.slice(i, i + 500)
    const params: unknown[] = []
    const values = batch.map((r, j) => {
      params.push(r.tenantId, r.documentId, r.chunkIndex, r.content, JSON.stringify(r.metadata ?? {}), `[${Array.from(r.embedding).join(',')}]`)
      const b = j * 6
      return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6})`
    })
    await client.query(`insert into bench_chunks (${columns}) values ${values.join(', ')}`, params)
  }
}

/** LangChain.js from bench/.langchain (installed apart: its peer dependencies conflict with ours). */
async function loadLangChain() {
  const dir = join(process.cwd(), 'bench', '.langchain')
  if (!existsSync(join(dir, 'node_modules', '@langchain', 'community'))) return undefined
  const require = createRequire(join(dir, 'package.json'))
  const { PGVectorStore } = require('@langchain/community/vectorstores/pgvector') as any
  const { Embeddings } = require('@langchain/core/embeddings') as any
  const { Document } = require('@langchain/core/documents') as any
  const lcPg = require('pg') as typeof pg
  return {
    async add(connectionString: string, input: IngestRow[]) {
      const vectors = input.map((r) => Array.from(r.embedding))
      let next = 0
      // Precomputed vectors: what is measured is LangChain's write path, not an embedding model.
      class Precomputed extends Embeddings {
        async embedDocuments(texts: string[]) { const out = vectors.slice(next, next + texts.length); next += texts.length; return out }
        async embedQuery() { return vectors[0]! }
      }
      const pool = new lcPg.Pool({ connectionString })
      const lc = await PGVectorStore.initialize(new (Precomputed as any)({}), { pool, tableName: 'langchain_chunks', dimensions: dim })
      await pool.query('truncate langchain_chunks')
      await lc.addDocuments(input.map((r) => new Document({ pageContent: r.content, metadata: { tenantId: r.tenantId, documentId: r.documentId, chunkIndex: r.chunkIndex, ...r.metadata } })))
      await lc.end()
    },
    async drop(connectionString: string) {
      const c = new lcPg.Client({ connectionString })
      await c.connect()
      await c.query('drop table if exists langchain_chunks')
      await c.end()
    },
  }
}
