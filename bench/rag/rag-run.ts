import { explain, type Embedding, type PgVectorStore, type ProvisionedDatabase } from '../../src/index.js'
import { hnswIndexNames as storeHnswIndexNames, renderStatements, storeIndexNames } from '../../src/bench-kit.js'
import type { TenantSize } from '../synthetic/corpus.js'
import type { BenchSource } from './bench-source.js'
import { planKind, type PlanKind } from './plan-kind.js'
import type { RagBenchConfig } from './rag-bench-config.js'
import type { RagBenchReport, Strategy, TenantClass } from './rag-report.js'
import { sampleByClass } from './tenant-classes.js'

export const BENCH_SCHEMA = 'pgscale_rag_bench'
export const BENCH_TABLE = `${BENCH_SCHEMA}.chunks`
/** Results per search in every phase. */
export const K = 10

/** What every phase of one rag-bench run shares: the configuration, the store, the report it fills. */
export interface RagRun {
  readonly config: RagBenchConfig
  readonly db: ProvisionedDatabase['db']
  readonly store: PgVectorStore
  readonly source: BenchSource
  readonly report: RagBenchReport
  readonly log: (line: string) => void
  /** The index strategies measured, in order (`--index both`: shared, then tiered). */
  readonly strategies: Strategy[]
  /** Up to 4 tenants of each class present: the tenants the search phases query. */
  readonly sampled: Array<{ cls: TenantClass; tenants: TenantSize[] }>
  /** Set once the tiered strategy's optimize() ran (it runs once, in whichever phase needs it first). */
  tieredBuilt: boolean
}

/**
 * The shared state of a run whose store is open.
 *
 * ### Examples
 * ```ts
 * const run = newRagRun(config, db, store, source, report, log)
 * ```
 */
export function newRagRun(
  config: RagBenchConfig,
  db: RagRun['db'],
  store: PgVectorStore,
  source: BenchSource,
  report: RagBenchReport,
  log: RagRun['log'],
): RagRun {
  const strategies: Strategy[] = config.index === 'both' ? ['shared', 'tiered'] : [config.index]
  return { config, db, store, source, report, log, strategies, sampled: sampleByClass(config.tenants, 4), tieredBuilt: false }
}

/**
 * `config.queries` queries spread over `tenants` (the same ones on every call).
 *
 * ### Examples
 * ```ts
 * for (const { tenant, q } of await queriesFor(run, tenants)) await run.store.forTenant(tenant.id).search(q)
 * ```
 */
export async function queriesFor(run: RagRun, tenants: TenantSize[]): Promise<Array<{ tenant: TenantSize; q: Embedding }>> {
  const per = Math.max(1, Math.ceil(run.config.queries / tenants.length))
  const all: Array<{ tenant: TenantSize; q: Embedding }> = []
  for (const t of tenants) for (const q of await run.source.queryVectors(t.id, per)) all.push({ tenant: t, q })
  return all.slice(0, run.config.queries)
}

/**
 * The names of the bench table's HNSW indexes.
 *
 * ### Examples
 * ```ts
 * const indexes = await hnswIndexNames(run) // ['chunks_embedding_hnsw']
 * ```
 */
export async function hnswIndexNames(run: RagRun): Promise<string[]> {
  return storeHnswIndexNames(run.db, run.store.config)
}

/**
 * Fills `report.index.sizes` from the store's stats (creating `report.index` if no index phase ran).
 *
 * ### Examples
 * ```ts
 * await recordSizes(run)
 * ```
 */
export async function recordSizes(run: RagRun): Promise<void> {
  const names = storeIndexNames('chunks')
  const stats = await run.store.stats()
  run.report.index ??= { sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 } }
  const sizes = run.report.index.sizes
  sizes.heap = stats.bytes.heap
  sizes.toast = stats.bytes.toast
  sizes.sharedHnsw = stats.bytes.indexes[names.sharedHnsw] ?? 0
  sizes.tenantHnsw = Object.entries(stats.bytes.indexes)
    .filter(([n]) => n.startsWith(names.tenantPrefix))
    .reduce((s, [, b]) => s + b, 0)
  sizes.btree = stats.bytes.indexes[names.primaryKey] ?? 0
  sizes.gin = stats.bytes.indexes[names.searchText] ?? 0
  sizes.total = stats.bytes.total
}

/**
 * The plan a tenant's search gets at these settings, reduced to its kind.
 *
 * ### Examples
 * ```ts
 * await searchPlan(run, 'tenant-1', 100, 'relaxed') // 'tenant-hnsw'
 * ```
 */
export async function searchPlan(run: RagRun, tenantId: string, efSearch: number, iterativeScan: 'relaxed' | 'off'): Promise<PlanKind> {
  const statements = renderStatements(run.store.config)
  const probe = `[${Array.from((await run.source.queryVectors(tenantId, 1))[0]!).join(',')}]`
  const plan = await explain(run.db, statements.search, [tenantId, probe, K], {
    settings: { 'hnsw.ef_search': Math.max(efSearch, K), 'hnsw.iterative_scan': iterativeScan === 'relaxed' ? 'relaxed_order' : 'off' },
  })
  return planKind(plan, storeIndexNames('chunks'))
}
