import { sql } from 'kysely'
import { explain, indexesUsed, PgVectorStore, type ProvisionedDatabase } from '../../src/index.js'
import { storeIndexNames } from '../../src/store/index-names.js'
import { renderStatements } from '../../src/store/store-sql.js'
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
  seed: string
  phases: ReadonlySet<Phase>
  keep: boolean
  showProgress: boolean
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
  const spec: CorpusSpec = { seed: c.seed, dim: c.dim, chunksPerDoc: c.chunksPerDoc, topics: c.topics, tenants: c.tenants }
  const classes: Record<TenantClass, number> = { small: 0, medium: 0, large: 0 }
  for (const t of c.tenants) classes[tenantClass(t.chunks)]++
  const report: RagBenchReport = {
    ...reportHeader('rag-bench', info, {
      chunks: c.chunks, tenantMix: c.mix, dim: c.dim, chunksPerDoc: c.chunksPerDoc, writers: c.writers, topics: c.topics, index: c.index,
      m: c.m, efConstruction: c.efConstruction, efSearch: c.efSearch, queries: c.queries, seed: c.seed, phases: [...c.phases],
    }, `recall@10 against exactSearch over ${c.queries} seeded queries per tenant class (spread over up to 4 tenants of the class); latency p50/p95/p99 of sequential calls from one client; ingest rates are whole-phase averages`),
    tenants: { count: c.tenants.length, chunks: c.chunks, largest: c.tenants[0]!.chunks, smallest: c.tenants.at(-1)!.chunks, classes },
    process: { peakRssMB: 0, seconds: 0 },
  }

  // Phase 1: seed + ingest, no ANN index --------------------------------------------------------
  if (c.phases.has('ingest')) {
    await sql.raw(`drop schema if exists ${BENCH_SCHEMA} cascade`).execute(db)
  }
  await sql.raw(`create schema if not exists ${BENCH_SCHEMA}`).execute(db)
  const store = await PgVectorStore.open(db, { table: TABLE, dimensions: c.dim })
  const names = storeIndexNames('chunks')
  if (c.phases.has('ingest')) {
    const bar = progress('ingest (no index)', c.chunks, { enabled: c.showProgress })
    const result = await store.bulkIngest(generateCorpus(spec), { onProgress: ({ rows }) => bar.update(rows), progressEvery: 5000, indexStrategy: 'keep' })
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
    report.index!.tiered = { seconds, tenantIndexes: result.tenants.withOwnIndex, bytes: result.built.reduce((s, b) => s + b.bytes, 0), droppedSharedIndex: result.sharedIndex?.dropped ?? false, notes: result.notes }
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
  if (c.phases.has('ingest-indexed')) {
    const sliceTotal = Math.min(50_000, Math.max(1000, Math.round(c.chunks * 0.05)))
    const sliceTenants = c.tenants.map((t) => ({ id: t.id, chunks: Math.round((t.chunks / c.chunks) * sliceTotal) })).filter((t) => t.chunks > 0)
    const bar = progress('ingest (with index)', sliceTenants.reduce((s, t) => s + t.chunks, 0), { enabled: c.showProgress })
    const indexes = await hnswIndexNames()
    const result = await store.bulkIngest(generateCorpus({ ...spec, seed: `${c.seed}:slice`, tenants: sliceTenants, documentPrefix: 'slice' }), {
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
  const queriesFor = (tenants: TenantSize[]) => {
    const per = Math.max(1, Math.ceil(c.queries / tenants.length))
    return tenants.flatMap((t) => queryVectors(spec, t.id, per).map((q) => ({ tenant: t, q }))).slice(0, c.queries)
  }
  if (c.phases.has('search')) {
    const rows: SearchRow[] = []
    const truth = new Map<string, Set<string>[]>()
    const total = sampled.length * strategies.length * c.efSearch.length * 2 * c.queries
    const bar = progress('recall + latency', total, { enabled: c.showProgress })
    let done = 0
    for (const { cls, tenants } of sampled) {
      const queries = queriesFor(tenants)
      const sets: Set<string>[] = []
      for (const { tenant, q } of queries) {
        const exact = await store.forTenant(tenant.id).exactSearch(q, { k: K })
        sets.push(new Set(exact.map((r) => `${r.documentId}#${r.chunkIndex}`)))
      }
      truth.set(cls, sets)
    }
    for (const strategy of strategies) {
      if (strategy === 'tiered') {
        if (!report.index) report.index = { sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 } }
        await buildTiered()
        await recordSizes()
      }
      for (const { cls, tenants } of sampled) {
        const queries = queriesFor(tenants)
        const sets = truth.get(cls)!
        for (const efSearch of c.efSearch) {
          for (const iterativeScan of ['relaxed', 'off'] as const) {
            const plans = new Set<PlanKind>()
            for (const t of tenants) plans.add(await searchPlan(t.id, efSearch, iterativeScan))
            const ms: number[] = []
            let found = 0
            let possible = 0
            let short = 0
            for (let i = 0; i < queries.length; i++) {
              const { tenant, q } = queries[i]!
              const t0 = performance.now()
              const got = await store.forTenant(tenant.id).search(q, { k: K, efSearch, iterativeScan, exactFallback: false })
              ms.push(performance.now() - t0)
              const expected = sets[i]!
              found += got.filter((r) => expected.has(`${r.documentId}#${r.chunkIndex}`)).length
              possible += expected.size
              if (got.length < Math.min(K, tenant.chunks)) short++
              bar.update(++done)
            }
            rows.push({
              strategy,
              tenantClass: cls,
              tenantChunks: { min: Math.min(...tenants.map((t) => t.chunks)), max: Math.max(...tenants.map((t) => t.chunks)) },
              efSearch,
              iterativeScan,
              recallAt10: possible ? found / possible : 1,
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
  }

  // Phase 5: hybrid beside vector-only -------------------------------------------------------------
  if (c.phases.has('hybrid')) {
    const vectorMs: number[] = []
    const hybridMs: number[] = []
    let n = 0
    for (const { tenants } of sampled) {
      const texts = new Map(tenants.map((t) => [t.id, queryTexts(spec, t.id, c.queries)]))
      for (const [i, { tenant, q }] of queriesFor(tenants).slice(0, Math.max(20, Math.floor(c.queries / 2))).entries()) {
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
    const replacement = (tenant: string, i: number) =>
      queryVectors(spec, tenant, c.chunksPerDoc).map((embedding, j) => ({ content: `rewritten ${i}.${j} invoice`, embedding, metadata: { rewritten: true } }))
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
      const chunks = replacement(tenant, i)
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
    const probe = `[${Array.from(queryVectors(spec, tenantId, 1)[0]!).join(',')}]`
    const plan = await explain(db, statements.search, [tenantId, probe, K], {
      settings: { 'hnsw.ef_search': Math.max(efSearch, K), 'hnsw.iterative_scan': iterativeScan === 'relaxed' ? 'relaxed_order' : 'off' },
    })
    return planKind(plan, names)
  }
}
