import { sql } from 'kysely'
import { PgVectorStore, type ProvisionedDatabase } from '../../src/index.js'
import { renderStatements } from '../../src/bench-kit.js'
import { citusPlacement } from '../report/citus-placement.js'
import { reportHeader } from '../report/header.js'
import { heartbeat } from '../report/progress.js'
import type { CorpusSpec } from '../synthetic/corpus.js'
import { directorySource, syntheticSource } from './bench-source.js'
import { ragFindings } from './findings.js'
import { corpusFiltersPhase } from './phases/corpus-filters.js'
import { hybridPhase } from './phases/hybrid.js'
import { indexPhase } from './phases/index.js'
import { ingestIndexedPhase } from './phases/ingest-indexed.js'
import { ingestPhase } from './phases/ingest.js'
import { queriesPhase } from './phases/queries.js'
import { searchPhase } from './phases/search.js'
import { writesPhase } from './phases/writes.js'
import type { RagBenchConfig } from './rag-bench-config.js'
import type { Phase, RagBenchReport, TenantClass } from './rag-report.js'
import { BENCH_SCHEMA, BENCH_TABLE, K, newRagRun, type RagRun } from './rag-run.js'
import { tenantClass } from './tenant-classes.js'
import { dropBenchSchema } from '../report/bench-cleanup.js'

export { BENCH_SCHEMA } from './rag-run.js'

/** The phases after seeding, in the order they run; `findings` is computed from the report. */
const PHASE_STEPS: Array<[Phase, (run: RagRun) => Promise<void>]> = [
  ['index', indexPhase],
  ['ingest-indexed', ingestIndexedPhase],
  ['search', searchPhase],
  ['queries', queriesPhase],
  ['hybrid', hybridPhase],
  ['writes', writesPhase],
]

/**
 * Runs the phases of rag-bench on a provisioned database and returns the report.
 *
 * ### Examples
 * ```ts
 * const report = await runRagBench(await provision({ provider: 'auto' }), resolveRagBenchConfig(options), console.error)
 * ```
 *
 * `filtered`: after the `queries` phase's place, the filtered queries on a corpus of your own
 * (bench/rag/phases/corpus-filters.ts; `--corpus DIR --filtered`).
 */
export async function runRagBench(
  provisioned: ProvisionedDatabase,
  c: RagBenchConfig,
  log: (line: string) => void,
  options: { filtered?: boolean } = {},
): Promise<RagBenchReport> {
  const started = performance.now()
  const { db } = provisioned
  const report = emptyReport(provisioned, c)
  if (c.phases.has('ingest')) await dropBenchSchema(db, BENCH_SCHEMA)
  await sql.raw(`create schema if not exists ${BENCH_SCHEMA}`).execute(db)
  // The bench's own searches are measurements, not traffic: no query sample (the queries phase sends traffic through a store of its own).
  const store = await PgVectorStore.open(db, { table: BENCH_TABLE, dimensions: c.dim, querySample: false })
  const spec: CorpusSpec = {
    seed: c.seed,
    dim: c.dim,
    chunksPerDoc: c.chunksPerDoc,
    topics: c.topics,
    tenants: c.tenants,
    duplicates: c.duplicates,
    topicSkew: c.topicSkew,
  }
  const source = c.corpus ? directorySource(c.corpus, store, db, c.seed) : syntheticSource(spec, c.seed)
  const run = newRagRun(c, db, store, source, report, log)
  // Piped, a phase without a bar of its own still says it runs at least every 10 s.
  const phase = async (name: string, step: () => Promise<void>) => {
    const stop = heartbeat(`rag-bench: ${name}`, { enabled: !c.showProgress })
    try {
      await step()
    } finally {
      stop()
    }
  }
  await phase('ingest', () => ingestPhase(run))
  for (const [name, step] of PHASE_STEPS) {
    if (c.phases.has(name)) await phase(name, () => step(run))
    if (name === 'queries' && options.filtered) await phase('filtered queries', () => corpusFiltersPhase(run))
  }
  if (c.phases.has('findings')) report.findings = ragFindings(report)
  report.citus = await citusSearchPlacement(run)
  if (!c.keep) await dropBenchSchema(db, BENCH_SCHEMA)
  report.process = { peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024), seconds: (performance.now() - started) / 1000 }
  return report
}

/**
 * On Citus (the store's table distributed): for each sampled tenant (up to 4 per class), its shard, worker and
 * the plan of its search (task count, the shard's plan). `undefined` on plain PostgreSQL.
 */
async function citusSearchPlacement(run: RagRun): Promise<RagBenchReport['citus']> {
  const statements = renderStatements(run.store.config)
  const tenants = run.sampled.flatMap((x) => x.tenants.map((t) => ({ label: x.cls, tenant: t.id })))
  const probes = new Map<string, string>()
  for (const { tenant } of tenants) probes.set(tenant, `[${Array.from((await run.source.queryVectors(tenant, 1))[0]!).join(',')}]`)
  return citusPlacement(run.db, run.store.config.qualified, tenants, (tenant) => ({
    sql: statements.search,
    params: [tenant, probes.get(String(tenant)), K],
    settings: { 'hnsw.ef_search': run.store.config.defaultEfSearch, 'hnsw.iterative_scan': 'relaxed_order' },
  }))
}

/** The report's header and tenant summary, before any phase ran. */
function emptyReport({ info }: ProvisionedDatabase, c: RagBenchConfig): RagBenchReport {
  const classes: Record<TenantClass, number> = { small: 0, medium: 0, large: 0 }
  for (const t of c.tenants) classes[tenantClass(t.chunks)]++
  const parameters = {
    chunks: c.chunks,
    tenantMix: c.mix,
    dim: c.dim,
    chunksPerDoc: c.chunksPerDoc,
    writers: c.writers,
    topics: c.topics,
    index: c.index,
    m: c.m,
    efConstruction: c.efConstruction,
    efSearch: c.efSearch,
    queries: c.queries,
    seed: c.seed,
    phases: [...c.phases],
    ...(c.corpus ? { corpus: c.corpus.dir } : { duplicates: c.duplicates, topicSkew: c.topicSkew }),
  }
  const method = `tie-aware recall@10 against exactSearch (a hit: a returned row within the exact 10th distance + 0.001, as ann-benchmarks counts; recallAt10ById counts exact ids) over ${c.queries} seeded queries per tenant class (spread over up to 4 tenants of the class); latency p50/p95/p99 of sequential calls from one client; ingest rates are whole-phase averages`
  return {
    ...reportHeader('rag-bench', info, parameters, method),
    tenants: { count: c.tenants.length, chunks: c.chunks, largest: c.tenants[0]!.chunks, smallest: c.tenants.at(-1)!.chunks, classes },
    process: { peakRssMB: 0, seconds: 0 },
  }
}
