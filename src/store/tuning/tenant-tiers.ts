import { assertEmbedding, assertId, type Embedding } from '../ingest/index.js'
import { type QuerySampler, tenantFilteredSample, tenantSample, type TenantStore } from '../tenant/index.js'
import type { MetadataField } from '../../filter/metadata-field.js'
import { assertMayAlter } from '../../db/security/privileges.js'
import { scopedHandle } from '../../db/security/scoped-handle.js'
import { TENANT_SETTING } from '../../db/security/row-security.js'
import { tryBinaryRerank } from './binary-trial.js'
import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import {
  dropIndexInTurn,
  hnswIndexNames,
  type IndexBuildOptions,
  type IndexBuildResult,
  indexBytes,
  planUsesIndex,
  rebuildTenantIndex,
  tenantIndexGraph,
  type TenantSize,
  tenantSizes,
  type TuningCache,
  withTableMaintenanceLock,
} from '../schema/index.js'
import { type ResolvedStoreConfig, storeIndexNames, type StoreStatements, tenantIndexName } from '../config/index.js'
import { recallReport } from './recall-monitor.js'
import { MIN_BOUND_QUERIES } from './recall-bound.js'
import {
  DEFAULT_TARGET_RECALL,
  stillTuned,
  tuneTenant,
  tuningParameters,
  type RecallTuningOptions,
  type TenantTuningReport,
  type TuningDeps,
} from './tune-recall.js'

/**
 * Tenants above this many chunks get their own partial HNSW index from `optimize()`. Below it,
 * the primary key + an exact sort serves a search with recall 1.0 in about 1 µs per chunk on
 * the project's machine (docs/store.md), so 5,000 chunks stay near a few milliseconds.
 */
export const DEFAULT_OWN_INDEX_ABOVE = 5000

/**
 * Tenant indexes per table (or per partition) `optimize()` stops at. Planning a search opens every
 * index of the table it reads: measured here (`rag-bench planning`, docs/store.md), the planning
 * time of one search was 0.07 ms with 10 partial indexes on the table, 0.31 ms with 100, 2.7 ms
 * with 1,000 and 23 ms with 5,000 (warm connection; 0.8 / 2.2 / 18 / 104 ms on a fresh one). At 100
 * it stays a fraction of an indexed tenant's search (1-3 ms); past it, partition the table.
 */
export const DEFAULT_MAX_OWN_INDEXES = 100

/** Options of `PgVectorStore.optimize`. */
export interface OptimizeOptions {
  /** Tenants with more chunks than this get their own partial HNSW index. Default {@link DEFAULT_OWN_INDEX_ABOVE}. */
  ownIndexAbove?: number
  /** Drop the shared HNSW index when no remaining tenant is served by it. Default false. */
  dropUnusedSharedIndex?: boolean
  /**
   * While a shared HNSW index exists, a tenant below `ownIndexAbove` that the planner would still
   * send to it (a filtered walk of a shared graph, whose recall is luck) also gets its own index,
   * if it has at least this many chunks. Default 1,000.
   */
  minOwnIndex?: number
  /** At most this many tenant indexes are built by one call. Default 200. */
  maxNewIndexes?: number
  /**
   * At most this many tenant indexes on the table in all (planning cost: every search plans
   * against every partial index of its table — measured, docs/store.md); on a store with
   * `partitions`, this many per partition (the planner sees only the tenant's partition), so
   * `maxOwnIndexes × partitions` in all. Past it, the largest tenants keep theirs and the rest are
   * served by the shared index or the exact path, listed in `capped`. Default {@link DEFAULT_MAX_OWN_INDEXES}.
   */
  maxOwnIndexes?: number
  /** Build options of the tenant indexes. */
  indexBuild?: IndexBuildOptions
  /** Build (and drop) indexes without blocking writes: `CREATE INDEX CONCURRENTLY`. Default false. */
  concurrently?: boolean
  /**
   * The tie-aware recall@10 every tenant with its own index is tuned to (on a seeded sample of its
   * chunks): the cheapest `ef_search` that meets it, else a rebuild of its index with a larger
   * graph, else the exact path. Kept per tenant in the store's tuning table; `search` uses it.
   * Default {@link DEFAULT_TARGET_RECALL} (0.98); `null` skips tuning.
   */
  targetRecall?: number | null
  /** How tuning searches (steps, latency bound, rebuilds, sample). */
  tuning?: RecallTuningOptions
  /**
   * Query embeddings to tune these tenants on (an evaluation set of yours), by tenant id, instead
   * of their query sample or chunks; such a tenant is tuned by every call that gives them.
   * Checked before anything is built.
   */
  queries?: Readonly<Record<string, readonly Embedding[]>>
}

/** What `PgVectorStore.optimize` found and did. */
export interface OptimizeResult {
  ownIndexAbove: number
  tenants: { total: number; withOwnIndex: number; withoutOwnIndex: number }
  /** Tenant indexes built by this call, and why: above the threshold, or the planner chose the shared index. */
  built: Array<{ tenantId: string; rows: number; index: string; seconds: number; bytes: number; reason: 'size' | 'planner' }>
  /** Tenants that already had their own index. */
  alreadyIndexed: string[]
  /** Tenants that qualified for their own index but were left without one by `maxOwnIndexes`. */
  capped: Array<{ tenantId: string; rows: number }>
  /** The shared HNSW index, if any: does the planner still use it for any tenant without its own index? */
  sharedIndex: null | {
    name: string
    bytes: number
    servesAnyone: boolean
    probedTenant?: { tenantId: string; rows: number }
    dropped: boolean
  }
  /** Recall tuning: the target, each tenant tuned by this call, and those whose tuning still held. */
  tuning: { targetRecall: number | null; tenants: TenantTuningReport[]; unchanged: string[] }
  /** Plain sentences for a person. */
  notes: string[]
}

/** What the tiers need of the store they optimize. */
export interface TieredStore {
  db: Database
  config: ResolvedStoreConfig
  statements: StoreStatements
  tuning: TuningCache
  forTenant(tenantId: string): TenantStore
  createTenantIndex(tenantId: string, options: IndexBuildOptions): Promise<IndexBuildResult>
  /** This process's query sample buffer, flushed before tuning (absent: `querySample: false`). */
  sampler?: QuerySampler
  /** The store's declared metadata fields (synthetic filters for tuning the filtered path). */
  fields(): Promise<readonly MetadataField[]>
}

/** The state of one `optimize()` call as its steps fill it in. */
interface TierRun {
  store: TieredStore
  options: OptimizeOptions
  threshold: number
  sizes: TenantSize[]
  existing: Set<string>
  built: OptimizeResult['built']
  alreadyIndexed: string[]
  capped: OptimizeResult['capped']
  /** Tenant indexes on the table now, and the most it may have. */
  ownIndexes: number
  maxOwnIndexes: number
  notes: string[]
}

/**
 * Applies tenant tiers from the tenants' sizes: every tenant above `ownIndexAbove` chunks gets its
 * own partial HNSW index; smaller ones are served by the primary key and an exact sort. Then
 * `ANALYZE`, a look at whether the shared HNSW index still serves anyone, and recall tuning of the
 * indexed tenants. `PgVectorStore.optimize` is this function.
 *
 * ### Examples
 * ```ts
 * const report = await applyTenantTiers(store, { ownIndexAbove: 5000 })
 * console.log(report.notes.join('\n'))
 * ```
 */
export async function applyTenantTiers(store: TieredStore, options: OptimizeOptions): Promise<OptimizeResult> {
  const threshold = options.ownIndexAbove ?? DEFAULT_OWN_INDEX_ABOVE
  if (!Number.isInteger(threshold) || threshold < 1) {
    throw new InvalidArgumentError(`ownIndexAbove must be a positive integer, got ${String(threshold)}`)
  }
  const perTable = options.maxOwnIndexes ?? DEFAULT_MAX_OWN_INDEXES
  if (!Number.isInteger(perTable) || perTable < 0) {
    throw new InvalidArgumentError(`maxOwnIndexes must be a non-negative integer, got ${String(perTable)}`)
  }
  const maxOwnIndexes = perTable * Math.max(1, store.config.partitions)
  const given = givenQueries(options.queries, store.config)
  await assertMayAlter(store.db, store.config.qualified, 'optimize', 'builds and drops HNSW indexes and runs ANALYZE')
  const sizes = await tenantSizes(store.db, store.config)
  const existing = new Set(await hnswIndexNames(store.db, store.config))
  const prefix = storeIndexNames(store.config.table).tenantPrefix
  const ownIndexes = [...existing].filter((name) => name.startsWith(prefix)).length
  const run: TierRun = {
    store,
    options,
    threshold,
    sizes,
    existing,
    built: [],
    alreadyIndexed: [],
    capped: [],
    ownIndexes,
    maxOwnIndexes,
    notes: [],
  }
  await indexLargeTenants(run)
  const sharedIndex = await reviewSharedIndex(run)
  const tuning = await tuneIndexedTenants(store, options, sizes, [...run.built.map((b) => b.tenantId), ...run.alreadyIndexed], given)
  run.notes.push(...tuningNotes(tuning))
  const withOwnIndex = run.built.length + run.alreadyIndexed.length
  run.notes.unshift(
    `${sizes.length} tenants: ${withOwnIndex} have their own HNSW index${run.built.length ? ` (${run.built.length} built now)` : ''}; ` +
      `${sizes.length - withOwnIndex} are served by the primary key and an exact sort (recall 1.0).`,
  )
  return {
    ownIndexAbove: threshold,
    tenants: { total: sizes.length, withOwnIndex, withoutOwnIndex: sizes.length - withOwnIndex },
    built: run.built,
    alreadyIndexed: run.alreadyIndexed,
    capped: run.capped,
    sharedIndex,
    tuning,
    notes: run.notes,
  }
}

/**
 * `ANALYZE` of the store's table; under `concurrently`, holding the table's maintenance lock, so it
 * never waits on a concurrent build (of another optimize()) that waits on it.
 */
async function analyzeTable(run: TierRun): Promise<void> {
  const { config, db } = run.store
  const analyze = sql`analyze ${sql.raw(config.qualified)}`
  if (run.options.concurrently ?? run.options.indexBuild?.concurrently)
    await withTableMaintenanceLock(db, config.qualified, (conn) => analyze.execute(conn))
  else await analyze.execute(db)
}

/** Builds a tenant's own index and records it. */
async function promote(run: TierRun, { tenantId, rows }: TenantSize, reason: 'size' | 'planner'): Promise<void> {
  const { options } = run
  const result = await run.store.createTenantIndex(tenantId, {
    ...options.indexBuild,
    concurrently: options.concurrently ?? options.indexBuild?.concurrently,
  })
  run.built.push({ tenantId, rows, index: result.index, seconds: result.seconds, bytes: result.bytes, reason })
  run.existing.add(result.index)
  run.ownIndexes++
}

/** Step 1, size: every tenant above the threshold gets its own index (up to `maxNewIndexes`). */
async function indexLargeTenants(run: TierRun): Promise<void> {
  const maxNewIndexes = run.options.maxNewIndexes ?? 200
  const { config } = run.store
  for (const tenant of run.sizes) {
    if (tenant.rows <= run.threshold) break
    if (run.existing.has(tenantIndexName(config.table, tenant.tenantId))) run.alreadyIndexed.push(tenant.tenantId)
    else if (run.ownIndexes >= run.maxOwnIndexes) run.capped.push({ tenantId: tenant.tenantId, rows: tenant.rows })
    else if (run.built.length < maxNewIndexes) await promote(run, tenant, 'size')
  }
  if (run.capped.length) {
    run.notes.push(
      `${run.capped.length} tenant(s) above ${run.threshold} chunks have no index of their own: the table has ${run.ownIndexes} ` +
        `(maxOwnIndexes ${run.maxOwnIndexes}; every partial index adds planning time to every search of the table). ` +
        `They are served by the shared HNSW index if there is one, else exactly through the primary key.`,
    )
  }
  await analyzeTable(run)
}

/**
 * Step 2, planner: while a shared index exists, the tenants it would still serve (largest first) get
 * their own index down to `minOwnIndex`; the shared index is dropped when asked and no one needs it.
 */
async function reviewSharedIndex(run: TierRun): Promise<OptimizeResult['sharedIndex']> {
  const { store, options } = run
  const { config, db } = store
  const sharedName = storeIndexNames(config.table).sharedHnsw
  const sharedBytes = await indexBytes(db, config.schema, sharedName)
  if (sharedBytes === undefined) return null
  const minOwnIndex = options.minOwnIndex ?? 1000
  const maxNewIndexes = options.maxNewIndexes ?? 200
  let servedBy: TenantSize | undefined
  for (const tenant of run.sizes) {
    if (run.existing.has(tenantIndexName(config.table, tenant.tenantId))) continue
    if (!(await planUsesIndex(db, config, store.statements, tenant.tenantId, sharedName))) break
    if (tenant.rows < minOwnIndex || run.built.length >= maxNewIndexes || run.ownIndexes >= run.maxOwnIndexes) {
      servedBy = tenant
      break
    }
    await promote(run, tenant, 'planner')
  }
  const byPlanner = run.built.filter((b) => b.reason === 'planner')
  if (byPlanner.length) await analyzeTable(run)
  let dropped = false
  if (!servedBy && options.dropUnusedSharedIndex) {
    // If it exists: another optimize() at once may have dropped it first.
    await dropIndexInTurn(db, { schema: config.schema, name: sharedName, table: config.qualified }, options.concurrently === true)
    dropped = true
  }
  if (byPlanner.length) {
    run.notes.push(
      `${byPlanner.length} tenant(s) below ${run.threshold} chunks (${byPlanner.map((b) => `${b.tenantId}: ${b.rows}`).join(', ')}) ` +
        `were planned on the shared HNSW index, where a filtered walk loses recall when tenants share topics; they got their own index.`,
    )
  }
  run.notes.push(
    servedBy
      ? `The shared HNSW index (${mb(sharedBytes)}) still serves tenants without their own index (the planner uses it for ${servedBy.tenantId}, ${servedBy.rows} chunks, ` +
          `below minOwnIndex ${minOwnIndex}); their recall depends on ef_search and iterative scan.`
      : `The shared HNSW index (${mb(sharedBytes)}) serves no tenant any more: each is served exactly through the primary key or by its own index. ` +
          (dropped ? 'It was dropped.' : 'Drop it with optimize({ dropUnusedSharedIndex: true }) to save its space and ingest cost.'),
  )
  return { name: sharedName, bytes: sharedBytes, servesAnyone: servedBy !== undefined, probedTenant: servedBy, dropped }
}

/** Step 3: tunes each indexed tenant whose tuning is missing or stale (size changed, other target). */
async function tuneIndexedTenants(
  store: TieredStore,
  options: OptimizeOptions,
  sizes: readonly TenantSize[],
  indexed: readonly string[],
  given: ReadonlyMap<string, readonly Embedding[]>,
): Promise<OptimizeResult['tuning']> {
  const target = options.targetRecall === undefined ? DEFAULT_TARGET_RECALL : options.targetRecall
  if (target === null) return { targetRecall: null, tenants: [], unchanged: [] }
  assertTargetRecall(target)
  const params = tuningParameters(options.tuning ?? {})
  const rowsOf = new Map(sizes.map((s) => [s.tenantId, s.rows]))
  const tenants: TenantTuningReport[] = []
  const unchanged: string[] = []
  const concurrently = options.concurrently ?? options.indexBuild?.concurrently
  await store.sampler?.flush()
  // The sample table, whoever wrote it: the process that tunes is often not the one that serves searches.
  const sampled = (tenantId: string, n: number, since?: Date) => tenantSample(store.db, store.config, tenantId, n, since)
  const deps = tuningDeps(store, concurrently === true)
  // The recall monitor's verdicts: a tenant whose delivered recall fell below what was stated is re-tuned from its sample.
  const flagged = new Set(
    (await recallReport(store.db, store.config, await store.tuning.all())).filter((r) => r.belowStated).map((r) => r.tenantId),
  )
  for (const tenantId of indexed) {
    const rows = rowsOf.get(tenantId) ?? 0
    const tuned = await store.tuning.get(tenantId)
    const sample = await sampled(tenantId, 0, tuned?.tunedAt)
    const isFlagged = flagged.has(tenantId)
    if (!given.has(tenantId) && stillTuned(tuned, rows, target, params.retuneAbove, sample, params.minRecentQueries, isFlagged)) {
      unchanged.push(tenantId)
      continue
    }
    const handle = store.forTenant(tenantId)
    tenants.push(await tuneTenant(deps, handle, rows, target, params, options.indexBuild ?? {}, given.get(tenantId), isFlagged))
  }
  return { targetRecall: target, tenants, unchanged }
}

/** A recall target: a number in (0, 1]; else an `InvalidArgumentError`. */
function assertTargetRecall(target: unknown): number {
  if (typeof target !== 'number' || !(target > 0 && target <= 1)) {
    throw new InvalidArgumentError(`targetRecall must be a number in (0, 1], or null to skip tuning; got ${String(target)}`)
  }
  return target
}

/** Options of {@link tuneOneTenant}. */
export interface TuneOneTenantOptions {
  /** The tie-aware recall@10 to tune to. Default {@link DEFAULT_TARGET_RECALL}. */
  targetRecall?: number
  /** How tuning searches (steps, latency bound, rebuilds, sample), as `optimize({ tuning })`. */
  tuning?: RecallTuningOptions
  /**
   * Tune on the query model's queries (points never stored, calibrated to the tenant's own
   * distances) whatever the store's query sample holds: before traffic, as in a space the tenant
   * does not search yet. Default false (its recent real queries when it has enough, as `optimize`).
   */
  preTraffic?: boolean
}

/**
 * Tunes one indexed tenant to `targetRecall` with the tuner of `optimize({ targetRecall })`
 * ({@link tuneTenant}): the cheapest `ef_search` that meets it, else a rebuild, else the exact
 * path, saved in the store's tuning table — without the rest of a whole-store `optimize()` (no
 * sizes of every tenant, no builds, no `ANALYZE`). The embedding spaces' backfill tunes the
 * tenant's new index with it before the switch.
 *
 * ### Examples
 * ```ts
 * const report = await tuneOneTenant(store, 'acme', { targetRecall: 0.98, preTraffic: true })
 * report.efSearch // 64
 * ```
 */
export async function tuneOneTenant(store: TieredStore, tenantId: string, options: TuneOneTenantOptions = {}): Promise<TenantTuningReport> {
  assertId(tenantId, 'tenant id')
  const target = assertTargetRecall(options.targetRecall ?? DEFAULT_TARGET_RECALL)
  const params = tuningParameters(options.tuning ?? {})
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from ${sql.raw(store.config.qualified)} where tenant_id = ${tenantId}`.execute(store.db)
  const deps = tuningDeps(store, false)
  const sources = options.preTraffic ? { ...deps, recentQueries: async () => [], recentFiltered: async () => [] } : deps
  return tuneTenant(sources, store.forTenant(tenantId), rows[0]?.n ?? 0, target, params, {})
}

/** What tuning needs of the store: its query sample (embeddings, filtered searches), declared fields, and index rebuilds. */
function tuningDeps(store: TieredStore, concurrently: boolean): TuningDeps {
  return {
    db: store.db,
    config: store.config,
    cache: store.tuning,
    recentQueries: async (tenantId, n) => (await tenantSample(store.db, store.config, tenantId, n)).queries,
    recentFiltered: (tenantId, n) => tenantFilteredSample(store.db, store.config, tenantId, n),
    fields: store.fields,
    currentGraph: (tenantId) => tenantIndexGraph(store.db, store.config, tenantId),
    rebuild: async (tenantId, build) => (await rebuildTenantIndex(store.db, store.config, tenantId, { ...build, concurrently })).seconds,
    binaryTrial: (tenantId, trial) =>
      tryBinaryRerank({
        ...trial,
        db: store.db,
        // Its searches in the tenant's scope, as the tenant's own searches run under row-level security.
        searchDb: store.config.isolation === 'rls' ? scopedHandle(store.db, { [TENANT_SETTING]: tenantId }) : store.db,
        config: store.config,
        tenantId,
        build: { ...trial.build, concurrently },
      }),
  }
}

const QUERY_SOURCE_WORDS = {
  recent: 'recent real queries',
  given: 'given queries',
  chunks: 'model queries (never stored, at its own scale)',
} as const

/** `optimize({ queries })` checked: tenant ids and embeddings of the store's shape, before anything is built. */
function givenQueries(value: OptimizeOptions['queries'], config: ResolvedStoreConfig): Map<string, readonly Embedding[]> {
  const out = new Map<string, readonly Embedding[]>()
  if (value === undefined) return out
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InvalidArgumentError('optimize: queries must be an object of tenant id → query embeddings')
  for (const [tenantId, queries] of Object.entries(value)) {
    assertId(tenantId, 'tenant id')
    if (!Array.isArray(queries) || queries.length === 0)
      throw new InvalidArgumentError(`optimize: queries for ${JSON.stringify(tenantId)} must be a non-empty array of embeddings`)
    for (const q of queries) assertEmbedding(q, config.dimensions, config.distance, 'optimize queries', config.vectorType)
    out.set(tenantId, queries as readonly Embedding[])
  }
  return out
}

/** Sentences on what tuning chose: a setting per indexed tenant, or the exact path. */
function tuningNotes(tuning: OptimizeResult['tuning']): string[] {
  const notes: string[] = []
  const tunedIndex = tuning.tenants.filter((r) => r.path === 'index')
  if (tunedIndex.length) {
    notes.push(
      `Tuned to tie-aware recall@10 ≥ ${tuning.targetRecall}: ${tunedIndex
        .map(
          (r) =>
            `${r.tenantId} ef_search ${r.efSearch}` +
            `${r.rebuiltWith ? ` (index rebuilt, m ${r.rebuiltWith.m}, ef_construction ${r.rebuiltWith.efConstruction})` : ''}: ${r.recall.toFixed(3)}, ` +
            `${ms(r.searchP50Ms ?? 0)} p50 on ${r.queries} ${QUERY_SOURCE_WORDS[r.querySource]}, ` +
            `stated ≥ ${r.bound.lower.toFixed(3)} with ${Math.round(r.bound.confidence * 100)}% confidence (mean ${r.bound.mean.toFixed(3)} over ${r.bound.queries} queries` +
            `${r.families ? `, the worst of ${r.families.length} query families` : ''}` +
            `${r.bound.meanLower === undefined ? '' : `; for ${r.bound.fresh} fresh queries like them — the mean itself ≥ ${r.bound.meanLower.toFixed(3)}`})` +
            `${r.retunedFlagged ? ', re-tuned: its delivered recall was below the target' : ''}` +
            `${r.chunkRecall === undefined ? '' : ` (${r.chunkRecall.toFixed(3)} on model queries)`}`,
        )
        .join('; ')}.`,
    )
  }
  for (const r of tuning.tenants.filter((x) => x.bound.tooSmall && x.path === 'index')) {
    notes.push(
      `${r.tenantId}: its stated bound rests on ${r.bound.queries} queries (fewer than ${MIN_BOUND_QUERIES}): the sample is too small to state much; ` +
        `raise tuning.sample or let it collect real queries.`,
    )
  }
  for (const r of tuning.tenants.filter((x) => x.path === 'exact')) {
    notes.push(
      `${r.tenantId} (${r.rows} chunks): no index setting reached a ${Math.round(r.bound.confidence * 100)}% lower bound of ${r.requiredOnSample.toFixed(3)} on its ${r.queries} ${QUERY_SOURCE_WORDS[r.querySource]} ` +
        `(over queries${r.querySource === 'chunks' ? ', every query family' : ''}) within ${ms(r.latencyBoundMs)} p50 ` +
        `(best: ${bestTried(r)}); its searches take the exact path (recall 1.0, ${ms(r.exactP50Ms)} p50).`,
    )
  }
  return notes
}

function bestTried(report: TenantTuningReport): string {
  const best = [...report.tried].sort((a, b) => b.recall - a.recall)[0]
  return best ? `${best.recall.toFixed(3)} at ef_search ${best.efSearch}, ${ms(best.p50Ms)}` : 'nothing measured'
}

/** Milliseconds for a sentence: two decimals, more for tiny bounds. */
function ms(value: number): string {
  return `${value >= 0.01 ? value.toFixed(2) : value.toPrecision(2)} ms`
}

function mb(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MB`
}
