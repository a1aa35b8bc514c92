import { sql } from 'kysely'
import { adoptDatabase, countRecall, explain, indexesUsed, PgVectorStore, recallOf, type Embedding, type IngestRow, type ProvisionedDatabase, type RecallCount, type SearchResult } from '../../src/index.js'
import { sampleQueries } from '../../src/bench-kit.js'
import type { CorpusDir } from './corpus-dir.js'
import { storeIndexNames } from '../../src/bench-kit.js'
import { renderStatements } from '../../src/bench-kit.js'
import { reportHeader } from '../report/header.js'
import { progress } from '../report/progress.js'
import { summarize } from '../report/stats.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec, type TenantSize } from '../synthetic/corpus.js'
import { ragFindings } from './findings.js'
import { planKind, type PlanKind } from './plan-kind.js'
import type { Phase, RagBenchReport, SearchRow, Strategy, TenantClass } from './rag-report.js'

/** The validated configuration of a run. */
export interface RagBenchConfig {
  chunks: number
  tenants: TenantSize[]
  mix: string
  dim: number
  chunksPerDoc: number
  writers: number
  topics: 'shared' | 'per-tenant'
  index: 'shared' | 'tiered' | 'both'
  m: number
  efConstruction: number
  efSearch: number[]
  queries: number
  /** Share of boilerplate near-duplicate chunks in the synthetic corpus. */
  duplicates: number
  /** Zipf exponent of documents over a tenant's topics in the synthetic corpus. */
  topicSkew: number
  seed: string
  phases: ReadonlySet<Phase>
  keep: boolean
  showProgress: boolean
  /** A corpus of the user's own (`--corpus DIR`) instead of the synthetic one. */
  corpus?: CorpusDir
}

/** Where a run's rows, queries and query texts come from: the synthetic corpus or a directory. */
interface BenchSource {
  rows(): Iterable<IngestRow> | AsyncIterable<IngestRow>
  queryVectors(tenantId: string, n: number): Promise<Embedding[]>
  queryTexts(tenantId: string, n: number): Promise<string[]>
  /** More rows for the ingest-through-the-index phase (synthetic only: a directory has no more). */
  slice?(tenants: TenantSize[]): Iterable<IngestRow>
}

function syntheticSource(spec: CorpusSpec, seed: string): BenchSource {
  return {
    rows: () => generateCorpus(spec),
    queryVectors: async (tenantId, n) => queryVectors(spec, tenantId, n),
    queryTexts: async (tenantId, n) => queryTexts(spec, tenantId, n),
    slice: (tenants) => generateCorpus({ ...spec, seed: `${seed}:slice`, tenants, documentPrefix: 'slice' }),
  }
}

/**
 * A directory corpus: its rows; its queries if it has them, else chunks of the tenant sampled and
 * perturbed (seeded) as `measureRecall` does; query texts from the queries, else four words of
 * sampled chunks.
 */
function directorySource(corpus: CorpusDir, store: PgVectorStore, db: ProvisionedDatabase['db'], seed: string): BenchSource {
  const cache = new Map<string, Embedding[]>()
  return {
    rows: () => corpus.rows(),
    async queryVectors(tenantId, n) {
      const given = corpus.queries?.get(tenantId)
      if (given?.length) return Array.from({ length: n }, (_, i) => given[i % given.length]!.embedding)
      const key = `${tenantId}:${n}`
      if (!cache.has(key)) cache.set(key, await sampleQueries(adoptDatabase(db), store.config, tenantId, n, seed))
      return cache.get(key)!
    },
    async queryTexts(tenantId, n) {
      const given = corpus.queries?.get(tenantId)?.filter((q) => q.text)
      if (given?.length) return Array.from({ length: n }, (_, i) => given[i % given.length]!.text!)
      const { rows } = await sql<{ content: string }>`
        select content from ${sql.raw(store.config.qualified)} where tenant_id = ${tenantId}
        order by md5(document_id || chunk_index::text || ${seed}) limit ${n}`.execute(db)
      const texts = rows.map((r) => r.content.split(/\s+/).filter((w) => /^[A-Za-z]{4,}$/.test(w)).slice(0, 4).join(' ') || r.content.slice(0, 40))
      return Array.from({ length: n }, (_, i) => texts[i % Math.max(1, texts.length)] ?? '')
    },
  }
}

export const BENCH_SCHEMA = 'pgscale_rag_bench'
const TABLE = `${BENCH_SCHEMA}.chunks`
/** Tenants above this many chunks are "large": they get their own index under the tiered strategy. */
export const LARGE_ABOVE = 5000
/** Tenants from this many chunks up are "medium". */
export const MEDIUM_FROM = 1000
const K = 10

/** Which class a tenant of `chunks` chunks belongs to. */
export function tenantClass(chunks: number): TenantClass {
  return chunks > LARGE_ABOVE ? 'large' : chunks >= MEDIUM_FROM ? 'medium' : 'small'
}

/** Up to `n` tenants of a class, spread over its sizes (largest, smallest, and between). */
export function sampleTenants(tenants: readonly TenantSize[], n: number): TenantSize[] {
  if (tenants.length <= n) return [...tenants]
  return Array.from({ length: n }, (_, i) => tenants[Math.round((i * (tenants.length - 1)) / (n - 1 || 1))]!)
}

/** Runs the phases of rag-bench on a provisioned database and returns the report. */
export async function runRagBench(provisioned: ProvisionedDatabase, c: RagBenchConfig, log: (line: string) => void): Promise<RagBenchReport> {
  const started = performance.now()
  const { db, info } = provisioned
  const spec: CorpusSpec = { seed: c.seed, dim: c.dim, chunksPerDoc: c.chunksPerDoc, topics: c.topics, tenants: c.tenants, duplicates: c.duplicates, topicSkew: c.topicSkew }
  const classes: Record<TenantClass, number> = { small: 0, medium: 0, large: 0 }
  for (const t of c.tenants) classes[tenantClass(t.chunks)]++
  const report: RagBenchReport = {
    ...reportHeader('rag-bench', info, {
      chunks: c.chunks, tenantMix: c.mix, dim: c.dim, chunksPerDoc: c.chunksPerDoc, writers: c.writers, topics: c.topics, index: c.index,
      m: c.m, efConstruction: c.efConstruction, efSearch: c.efSearch, queries: c.queries, seed: c.seed, phases: [...c.phases],
      ...(c.corpus ? { corpus: c.corpus.dir } : { duplicates: c.duplicates, topicSkew: c.topicSkew }),
    }, `tie-aware recall@10 against exactSearch (a hit: a returned row within the exact 10th distance + 0.001, as ann-benchmarks counts; recallAt10ById counts exact ids) over ${c.queries} seeded queries per tenant class (spread over up to 4 tenants of the class); latency p50/p95/p99 of sequential calls from one client; ingest rates are whole-phase averages`),
    tenants: { count: c.tenants.length, chunks: c.chunks, largest: c.tenants[0]!.chunks, smallest: c.tenants.at(-1)!.chunks, classes },
    process: { peakRssMB: 0, seconds: 0 },
  }

  // Phase 1: seed + ingest, no ANN index --------------------------------------------------------
  if (c.phases.has('ingest')) {
    await sql.raw(`drop schema if exists ${BENCH_SCHEMA} cascade`).execute(db)
  }
  await sql.raw(`create schema if not exists ${BENCH_SCHEMA}`).execute(db)
  const store = await PgVectorStore.open(db, { table: TABLE, dimensions: c.dim })
  const source = c.corpus ? directorySource(c.corpus, store, db, c.seed) : syntheticSource(spec, c.seed)
  const names = storeIndexNames('chunks')
  if (c.phases.has('ingest')) {
    const bar = progress('ingest (no index)', c.chunks, { enabled: c.showProgress })
    const result = await store.bulkIngest(source.rows(), { onProgress: ({ rows }) => bar.update(rows), progressEvery: 5000, indexStrategy: 'keep' })
    bar.done(`${result.rows.toLocaleString('en-US')} chunks in ${result.seconds.toFixed(1)} s`)
    report.ingest = { chunks: result.rows, seconds: result.seconds, chunksPerSecond: result.rowsPerSecond }
  } else {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.raw(TABLE)}`.execute(db)
    if (rows[0]!.n === 0) throw new Error('no data: include the ingest phase, or keep the data of an earlier run with --keep')
  }
  await sql.raw(`analyze ${TABLE}`).execute(db)

  const strategies: Strategy[] = c.index === 'both' ? ['shared', 'tiered'] : [c.index]
  let tieredDone = false
  const buildTiered = async () => {
    if (tieredDone) return
    tieredDone = true
    const large = c.tenants.filter((t) => t.chunks > LARGE_ABOVE).length
    const bar = progress('tenant indexes', Math.max(1, large), { enabled: c.showProgress })
    let built = 0
    const t0 = performance.now()
    // Tiers as recommended: tenant indexes where needed, and the shared index dropped if no one needs it.
    const result = await store.optimize({
      ownIndexAbove: LARGE_ABOVE,
      dropUnusedSharedIndex: true,
      indexBuild: { m: c.m, efConstruction: c.efConstruction, onProgress: (p) => p.phase === 'done' && bar.update(++built) },
    })
    const seconds = (performance.now() - t0) / 1000
    bar.done(`${result.built.length} tenant indexes in ${seconds.toFixed(1)} s`)
    report.index!.tiered = { seconds, tenantIndexes: result.tenants.withOwnIndex, bytes: result.built.reduce((s, b) => s + b.bytes, 0), droppedSharedIndex: result.sharedIndex?.dropped ?? false, notes: result.notes, tuning: result.tuning }
  }

  // Phase 2: build HNSW ---------------------------------------------------------------------------
  if (c.phases.has('index')) {
    report.index = { sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 } }
    if (strategies[0] === 'shared') {
      const bar = progress('shared HNSW build', c.chunks, { enabled: c.showProgress })
      const result = await store.createIndex({ m: c.m, efConstruction: c.efConstruction, onProgress: (p) => bar.update(p.tuplesDone || 0, p.phase) })
      bar.done(`${(result.bytes / 2 ** 20).toFixed(0)} MB in ${result.seconds.toFixed(1)} s`)
      for (const w of result.warnings) log(w)
      report.index.shared = { seconds: result.seconds, bytes: result.bytes }
      await sql.raw(`analyze ${TABLE}`).execute(db)
    } else {
      await buildTiered()
    }
    await recordSizes()
  }

  // Phase 3: ingest a further slice through the index(es) -----------------------------------------
  if (c.phases.has('ingest-indexed') && !source.slice) log('skipped the ingest-indexed phase: a corpus directory has no further rows to load')
  if (c.phases.has('ingest-indexed') && source.slice) {
    const sliceTotal = Math.min(50_000, Math.max(1000, Math.round(c.chunks * 0.05)))
    const sliceTenants = c.tenants.map((t) => ({ id: t.id, chunks: Math.round((t.chunks / c.chunks) * sliceTotal) })).filter((t) => t.chunks > 0)
    const bar = progress('ingest (with index)', sliceTenants.reduce((s, t) => s + t.chunks, 0), { enabled: c.showProgress })
    const indexes = await hnswIndexNames()
    const result = await store.bulkIngest(source.slice(sliceTenants), {
      indexStrategy: 'keep',
      onProgress: ({ rows }) => bar.update(rows),
      progressEvery: 1000,
    })
    bar.done(`${result.rows.toLocaleString('en-US')} chunks in ${result.seconds.toFixed(1)} s through ${indexes.length} HNSW index(es)`)
    report.ingestIndexed = {
      chunks: result.rows,
      seconds: result.seconds,
      chunksPerSecond: result.rowsPerSecond,
      ratioToUnindexed: report.ingest ? report.ingest.chunksPerSecond / result.rowsPerSecond : null,
      indexes,
    }
    await sql.raw(`analyze ${TABLE}`).execute(db)
  }

  // Phase 4: recall and latency per tenant class, strategy, ef_search, iterative scan -------------
  const byClass = new Map<TenantClass, TenantSize[]>()
  for (const t of c.tenants) byClass.set(tenantClass(t.chunks), [...(byClass.get(tenantClass(t.chunks)) ?? []), t])
  const sampled = [...byClass.entries()].map(([cls, list]) => ({ cls, tenants: sampleTenants(list, 4) }))
  const queriesFor = async (tenants: TenantSize[]) => {
    const per = Math.max(1, Math.ceil(c.queries / tenants.length))
    const all: Array<{ tenant: TenantSize; q: Embedding }> = []
    for (const t of tenants) for (const q of await source.queryVectors(t.id, per)) all.push({ tenant: t, q })
    return all.slice(0, c.queries)
  }
  if (c.phases.has('search')) {
    const rows: SearchRow[] = []
    const truth = new Map<string, SearchResult[][]>()
    const total = sampled.length * strategies.length * c.efSearch.length * 2 * c.queries
    const bar = progress('recall + latency', total, { enabled: c.showProgress })
    let done = 0
    for (const { cls, tenants } of sampled) {
      const queries = await queriesFor(tenants)
      const answers: SearchResult[][] = []
      for (const { tenant, q } of queries) answers.push(await store.forTenant(tenant.id).exactSearch(q, { k: K }))
      truth.set(cls, answers)
    }
    for (const strategy of strategies) {
      if (strategy === 'tiered') {
        if (!report.index) report.index = { sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 } }
        await buildTiered()
        await recordSizes()
      }
      for (const { cls, tenants } of sampled) {
        const queries = await queriesFor(tenants)
        const sets = truth.get(cls)!
        for (const efSearch of c.efSearch) {
          for (const iterativeScan of ['relaxed', 'off'] as const) {
            const plans = new Set<PlanKind>()
            for (const t of tenants) plans.add(await searchPlan(t.id, efSearch, iterativeScan))
            const ms: number[] = []
            const counts: RecallCount[] = []
            let short = 0
            for (let i = 0; i < queries.length; i++) {
              const { tenant, q } = queries[i]!
              const t0 = performance.now()
              const got = await store.forTenant(tenant.id).search(q, { k: K, efSearch, iterativeScan, exactFallback: false })
              ms.push(performance.now() - t0)
              counts.push(countRecall(sets[i]!, got))
              if (got.length < Math.min(K, tenant.chunks)) short++
              bar.update(++done)
            }
            rows.push({
              strategy,
              tenantClass: cls,
              tenantChunks: { min: Math.min(...tenants.map((t) => t.chunks)), max: Math.max(...tenants.map((t) => t.chunks)) },
              efSearch,
              iterativeScan,
              recallAt10: recallOf(counts).recall,
              recallAt10ById: recallOf(counts).recallById,
              latencyMs: summarize(ms),
              plans: [...plans],
              shortResults: short,
              queries: queries.length,
            })
          }
        }
      }
    }
    bar.done(`${rows.length} configurations measured`)
    report.search = { k: K, rows }
    if (strategies.includes('tiered')) {
      // What a deployment gets by default after optimize(): each indexed tenant at its tuned setting.
      // The tenants the search phase sampled (up to 4 per class), each on its own queries.
      const measured = sampled.flatMap((x) => x.tenants.map((t) => t.id))
      report.tunedRecall = await store.measureRecall({ tenantId: measured, sample: Math.min(c.queries, 200), seed: c.seed })
    }
  }

  // Phase 5: hybrid beside vector-only -------------------------------------------------------------
  if (c.phases.has('hybrid')) {
    const vectorMs: number[] = []
    const hybridMs: number[] = []
    let n = 0
    for (const { tenants } of sampled) {
      const texts = new Map<string, string[]>()
      for (const t of tenants) texts.set(t.id, await source.queryTexts(t.id, c.queries))
      for (const [i, { tenant, q }] of (await queriesFor(tenants)).slice(0, Math.max(20, Math.floor(c.queries / 2))).entries()) {
        let t0 = performance.now()
        await store.forTenant(tenant.id).search(q, { k: K })
        vectorMs.push(performance.now() - t0)
        t0 = performance.now()
        await store.forTenant(tenant.id).hybridSearch({ embedding: q, text: texts.get(tenant.id)![i]!, k: K })
        hybridMs.push(performance.now() - t0)
        n++
      }
    }
    report.hybrid = { vectorMs: summarize(vectorMs), hybridMs: summarize(hybridMs), queries: n }
  }

  // Phase 6: writes: replaceDocument / deleteDocument from concurrent writers ----------------------
  if (c.phases.has('writes')) {
    const replaceMs: number[] = []
    const deleteMs: number[] = []
    const operations = Math.min(400, Math.max(40, c.writers * 10))
    const docs = c.tenants.flatMap((t) => Array.from({ length: Math.max(1, Math.floor(t.chunks / c.chunksPerDoc)) }, (_, d) => ({ tenant: t.id, doc: `${t.id}/doc-${d}` })))
    const picks = Array.from({ length: operations }, (_, i) => docs[(i * 7919) % docs.length]!)
    const replacement = async (tenant: string, i: number) =>
      (await source.queryVectors(tenant, c.chunksPerDoc)).map((embedding, j) => ({ content: `rewritten ${i}.${j} invoice`, embedding: Array.from(embedding), metadata: { rewritten: true } }))
    // Replaces first, then deletes, each from `writers` concurrent writers: a delete measured while
    // replaces saturate the server would report their HNSW inserts, not its own cost.
    const runWriters = async (operation: (i: number) => Promise<void>, count: number) => {
      let next = 0
      const started = performance.now()
      await Promise.all(Array.from({ length: c.writers }, async () => {
        while (next < count) await operation(next++)
      }))
      return count / ((performance.now() - started) / 1000)
    }
    const half = Math.floor(operations / 2)
    const replacesPerSecond = await runWriters(async (i) => {
      const { tenant, doc } = picks[i]!
      const chunks = await replacement(tenant, i)
      const t0 = performance.now()
      await store.forTenant(tenant).replaceDocument(doc, chunks)
      replaceMs.push(performance.now() - t0)
    }, half)
    const deletesPerSecond = await runWriters(async (i) => {
      const { tenant, doc } = picks[half + i]!
      const t0 = performance.now()
      await store.forTenant(tenant).deleteDocument(doc)
      deleteMs.push(performance.now() - t0)
    }, operations - half)
    const statements = renderStatements(store.config)
    const plan = await explain(db, statements.deleteDocument, [c.tenants[0]!.id, `${c.tenants[0]!.id}/doc-0`])
    report.writes = { writers: c.writers, replaceDocumentMs: summarize(replaceMs), deleteDocumentMs: summarize(deleteMs), replacesPerSecond, deletesPerSecond, deletePlan: indexesUsed(plan), hnswIndexes: await hnswIndexNames(), operations }
  }

  if (c.phases.has('findings')) report.findings = ragFindings(report)
  if (!c.keep) await sql.raw(`drop schema if exists ${BENCH_SCHEMA} cascade`).execute(db)
  report.process = { peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024), seconds: (performance.now() - started) / 1000 }
  return report

  async function hnswIndexNames(): Promise<string[]> {
    const { rows } = await sql<{ name: string }>`
      select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
      where x.indrelid = to_regclass(${TABLE}) and am.amname = 'hnsw' order by 1`.execute(db)
    return rows.map((r) => r.name)
  }

  async function recordSizes(): Promise<void> {
    const stats = await store.stats()
    const sizes = report.index!.sizes
    sizes.heap = stats.bytes.heap
    sizes.toast = stats.bytes.toast
    sizes.sharedHnsw = stats.bytes.indexes[names.sharedHnsw] ?? 0
    sizes.tenantHnsw = Object.entries(stats.bytes.indexes).filter(([n]) => n.startsWith(names.tenantPrefix)).reduce((s, [, b]) => s + b, 0)
    sizes.btree = stats.bytes.indexes[names.primaryKey] ?? 0
    sizes.gin = stats.bytes.indexes[names.searchText] ?? 0
    sizes.total = stats.bytes.total
  }

  async function searchPlan(tenantId: string, efSearch: number, iterativeScan: 'relaxed' | 'off'): Promise<PlanKind> {
    const statements = renderStatements(store.config)
    const probe = `[${Array.from((await source.queryVectors(tenantId, 1))[0]!).join(',')}]`
    const plan = await explain(db, statements.search, [tenantId, probe, K], {
      settings: { 'hnsw.ef_search': Math.max(efSearch, K), 'hnsw.iterative_scan': iterativeScan === 'relaxed' ? 'relaxed_order' : 'off' },
    })
    return planKind(plan, names)
  }
}
