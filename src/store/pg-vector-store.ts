import { CompiledQuery, sql } from 'kysely'
import { chunksTableSteps } from './chunks-table.js'
import { adoptDatabase, type DatabaseHandle } from '../db/adopt.js'
import type { Database } from '../db/database.js'
import { joinTransaction, type AppTransaction } from '../db/joined-transaction.js'
import { migrateObject } from '../db/object-migrations.js'
import { InvalidArgumentError, SchemaMismatchError } from '../errors.js'
import { ingestRows, type IngestOptions, type IngestResult, type IngestRow } from './bulk-ingest.js'
import { assertId } from './embedding.js'
import { buildIndex, buildParameters, indexBytes, type IndexBuildOptions, type IndexBuildResult } from './index-build.js'
import { storeIndexNames, tenantIndexName } from './index-names.js'
import { resolveStoreConfig, type PgVectorStoreConfig, type ResolvedStoreConfig } from './store-config.js'
import { renderStatements, type StoreStatements } from './store-sql.js'
import { hnswIndexDdl } from './hnsw-ddl.js'
import { TenantStore } from './tenant-store.js'
import { TuningCache, type TenantTuning } from './tenant-tuning.js'
import { exactAnswers, measureParameters, percentile, sampleQueries, searchRecall, type MeasureRecallOptions, type MeasureRecallResult, type TenantRecall } from './measure-recall.js'
import { DEFAULT_TARGET_RECALL, stillTuned, tuneTenant, tuningParameters, type RecallTuningOptions, type TenantTuningReport } from './tune-recall.js'
import { quoteQualified } from '../sql/quote.js'

/** Options of {@link PgVectorStore.bulkIngest}. */
export interface BulkIngestOptions extends IngestOptions {
  /**
   * What to do with HNSW indexes: `keep` loads through them; `rebuild` drops them, loads, and
   * rebuilds them in the same transaction (faster for large loads; blocks the table meanwhile);
   * `auto` (default) rebuilds when `expectedRows` ≥ 50,000 and ≥ 25% of the table, else keeps.
   */
  indexStrategy?: 'keep' | 'rebuild' | 'auto'
  /** How many rows the load will bring, for `indexStrategy: 'auto'`. */
  expectedRows?: number
  /** Build options when indexes are rebuilt. */
  indexBuild?: Omit<IndexBuildOptions, 'm' | 'efConstruction'>
}

/** What {@link PgVectorStore.bulkIngest} did. */
export interface BulkIngestResult extends IngestResult {
  /** HNSW indexes dropped and rebuilt around the load. */
  rebuiltIndexes: string[]
  /** Advice, e.g. that a load this size would have been faster with `indexStrategy: 'rebuild'`. */
  hints: string[]
}

/** Options of {@link PgVectorStore.optimize}. */
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
}

/** What {@link PgVectorStore.optimize} found and did. */
export interface OptimizeResult {
  ownIndexAbove: number
  tenants: { total: number; withOwnIndex: number; withoutOwnIndex: number }
  /** Tenant indexes built by this call, and why: above the threshold, or the planner chose the shared index. */
  built: Array<{ tenantId: string; rows: number; index: string; seconds: number; bytes: number; reason: 'size' | 'planner' }>
  /** Tenants that already had their own index. */
  alreadyIndexed: string[]
  /** The shared HNSW index, if any: does the planner still use it for any tenant without its own index? */
  sharedIndex: null | { name: string; bytes: number; servesAnyone: boolean; probedTenant?: { tenantId: string; rows: number }; dropped: boolean }
  /** Recall tuning: the target, each tenant tuned by this call, and those whose tuning still held. */
  tuning: { targetRecall: number | null; tenants: TenantTuningReport[]; unchanged: string[] }
  /** Plain sentences for a person. */
  notes: string[]
}

/** Sizes of the store's table and indexes. */
export interface StoreStats {
  rows: number
  tenants: number
  bytes: { heap: number; toast: number; indexes: Record<string, number>; total: number }
}

/**
 * Tenants above this many chunks get their own partial HNSW index from `optimize()`. Below it,
 * the primary key + an exact sort serves a search with recall 1.0 in about 1 µs per chunk on
 * the project's machine (docs/store.md), so 5,000 chunks stay near a few milliseconds.
 */
export const DEFAULT_OWN_INDEX_ABOVE = 5000

/**
 * A tenant-scoped pgvector store. `open` creates the table if needed; `forTenant` is the only
 * read path; bulk ingest streams binary COPY; indexes are built after loads and per tenant.
 *
 * ### Examples
 * ```ts
 * const store = await PgVectorStore.open(db, { table: 'rag_chunks', dimensions: 384, distance: 'cosine' })
 * await store.forTenant('acme').replaceDocument('doc-1', chunks)
 * const hits = await store.forTenant('acme').search(embedding, { k: 10 })
 * ```
 */
export class PgVectorStore {
  readonly #db: Database
  readonly #sql: StoreStatements
  readonly #tuning: TuningCache
  /** The validated configuration. */
  readonly config: ResolvedStoreConfig

  private constructor(db: Database, config: ResolvedStoreConfig) {
    this.#db = db
    this.config = config
    this.#sql = renderStatements(config)
    this.#tuning = new TuningCache(db, config)
  }

  /**
   * Opens a store, creating its table and indexes if missing (idempotent; two processes opening
   * at once is safe). An existing table with other dimensions or distance is a {@link SchemaMismatchError}.
   * `handle` is a pgscale {@link Database}, the app's `Kysely` or its `pg.Pool`: the store uses the
   * app's pool, and the app's Kysely plugins never change what the store reads or returns.
   *
   * ### Examples
   * ```ts
   * const store = await PgVectorStore.open(db, { dimensions: 384 })
   * const shared = await PgVectorStore.open(appKysely, { dimensions: 384 }) // or a pg.Pool
   * ```
   */
  static async open(handle: DatabaseHandle, config: PgVectorStoreConfig): Promise<PgVectorStore> {
    const resolved = resolveStoreConfig(config)
    const db = adoptDatabase(handle)
    const key = `store:${resolved.schema ?? 'public'}.${resolved.table}`
    await migrateObject(
      db,
      key,
      { dimensions: resolved.dimensions, distance: resolved.distance, textSearchConfig: resolved.textSearchConfig },
      chunksTableSteps(resolved),
      { relation: resolved.qualified },
    )
    const { rows } = await sql<{ dims: number }>`
      select a.atttypmod as dims from pg_attribute a
      where a.attrelid = to_regclass(${resolved.qualified}) and a.attname = 'embedding' and not a.attisdropped`.execute(db)
    const dims = rows[0]?.dims
    if (dims !== resolved.dimensions) {
      throw new SchemaMismatchError(
        `${resolved.qualified}.embedding is vector(${dims ?? '?'}), the store is configured with ${resolved.dimensions} dimensions`,
      )
    }
    const store = new PgVectorStore(db, resolved)
    await store.#tuning.reload()
    return store
  }

  /**
   * A handle scoped to one tenant; every statement it sends filters `tenant_id = $1`. With
   * `transaction` (a Kysely `Transaction`, or a pg client on which the app ran `BEGIN`), every call
   * of the handle runs inside the app's transaction, each as a savepoint: its writes commit or roll
   * back with the app's, and a call that fails rolls back to its savepoint, leaving the app's
   * transaction usable.
   *
   * ### Examples
   * ```ts
   * const acme = store.forTenant('acme')
   * await db.transaction().execute(async (trx) => {
   *   await trx.insertInto('documents').values(doc).execute()
   *   await store.forTenant('acme', { transaction: trx }).replaceDocument(doc.id, chunks)
   * })
   * ```
   */
  forTenant(tenantId: string, options: { transaction?: AppTransaction } = {}): TenantStore {
    const db = options.transaction === undefined ? this.#db : joinTransaction(options.transaction)
    return new TenantStore(db, this.config, this.#sql, tenantId, this.#tuning)
  }

  /**
   * Loads rows through binary `COPY ... FROM STDIN`, streamed with constant memory on a server
   * (PGlite: in batches; an app's Kysely, which hides its client: batched INSERTs). All or nothing:
   * a bad row or a failure leaves the table as it was, unless `onInvalidRow: 'skip'` leaves the
   * invalid rows out (listed in `skipped`). For one tenant's rows, `forTenant(id).bulkIngest`.
   *
   * ### Examples
   * ```ts
   * await store.bulkIngest(rowsFromSomewhere(), { onProgress: ({ rows }) => console.log(rows) })
   * ```
   */
  async bulkIngest(rows: AsyncIterable<IngestRow> | Iterable<IngestRow>, options: BulkIngestOptions = {}): Promise<BulkIngestResult> {
    const strategy = options.indexStrategy ?? 'auto'
    if (!['keep', 'rebuild', 'auto'].includes(strategy)) {
      throw new InvalidArgumentError(`indexStrategy must be keep, rebuild or auto, got ${JSON.stringify(strategy)}`)
    }
    const hnsw = await this.#hnswIndexes()
    let rebuild = strategy === 'rebuild'
    if (strategy === 'auto' && options.expectedRows !== undefined && hnsw.length > 0) {
      const current = (await this.#estimatedRows()) ?? 0
      rebuild = options.expectedRows >= 50_000 && options.expectedRows >= 0.25 * current
    }
    if (!rebuild) hnsw.length = 0
    const result = await ingestRows(this.#db, {
      config: this.config,
      copySql: this.#sql.copyRows,
      before: hnsw.map((index) => `drop index ${quoteQualified(this.config.schema, index.name)}`),
      after: hnsw.map((index) => index.definition),
      settings: rebuild ? buildParameters(this.config, options.indexBuild ?? {}).settings : {},
    }, rows, options)

    const hints: string[] = []
    const kept = rebuild ? [] : await this.#hnswIndexes()
    if (!rebuild && kept.length > 0 && result.rows >= 50_000) {
      hints.push(
        `${result.rows} rows went through ${kept.length} HNSW index(es) at ${Math.round(result.rowsPerSecond)} rows/s; ` +
          `for loads this size pass indexStrategy: 'rebuild' (or build the index after the load).`,
      )
    }
    return { ...result, rebuiltIndexes: hnsw.map((i) => i.name), hints }
  }

  /**
   * Builds the shared HNSW index over all tenants (after a bulk load is best), with this build's
   * `maintenance_work_mem` and parallel workers, and progress reports.
   *
   * ### Examples
   * ```ts
   * await store.createIndex({ m: 16, efConstruction: 64, parallelWorkers: 1, maintenanceWorkMem: '1GB' })
   * ```
   */
  async createIndex(options: IndexBuildOptions = {}): Promise<IndexBuildResult> {
    const { m, efConstruction, settings } = buildParameters(this.config, options)
    const name = storeIndexNames(this.config.table).sharedHnsw
    const ddl = await hnswIndexDdl(this.#db, this.config, { name, m, efConstruction, concurrently: options.concurrently === true })
    return buildIndex(this.#db, { schema: this.config.schema, name, qualifiedTable: this.config.qualified, ddl }, settings, options)
  }

  /**
   * Builds a partial HNSW index for one tenant (`WHERE tenant_id = '...'`): its searches walk an
   * unfiltered graph of its own chunks, so recall does not collapse when tenants share topics.
   *
   * ### Examples
   * ```ts
   * await store.createTenantIndex('big-tenant')
   * ```
   */
  async createTenantIndex(tenantId: string, options: IndexBuildOptions = {}): Promise<IndexBuildResult> {
    assertId(tenantId, 'tenant id')
    const { m, efConstruction, settings } = buildParameters(this.config, options)
    const name = tenantIndexName(this.config.table, tenantId)
    const ddl = await hnswIndexDdl(this.#db, this.config, { name, m, efConstruction, concurrently: options.concurrently === true, tenantId })
    return buildIndex(this.#db, { schema: this.config.schema, name, qualifiedTable: this.config.qualified, ddl }, settings, options)
  }

  /**
   * Applies tenant tiers from the tenants' sizes: every tenant above `ownIndexAbove` chunks gets its
   * own partial HNSW index; smaller ones are served by the primary key and an exact sort. Then
   * `ANALYZE`, and a look at whether the shared HNSW index still serves anyone. Drops nothing
   * unless `dropUnusedSharedIndex` is set.
   *
   * ### Examples
   * ```ts
   * const report = await store.optimize()
   * console.log(report.notes.join('\n'))
   * ```
   */
  async optimize(options: OptimizeOptions = {}): Promise<OptimizeResult> {
    const threshold = options.ownIndexAbove ?? DEFAULT_OWN_INDEX_ABOVE
    if (!Number.isInteger(threshold) || threshold < 1) {
      throw new InvalidArgumentError(`ownIndexAbove must be a positive integer, got ${String(threshold)}`)
    }
    const minOwnIndex = options.minOwnIndex ?? 1000
    const maxNewIndexes = options.maxNewIndexes ?? 200
    const t = sql.raw(this.config.qualified)
    const { rows: sizes } = await sql<{ tenant_id: string; rows: number }>`
      select tenant_id, count(*)::int as rows from ${t} group by tenant_id order by count(*) desc, tenant_id`.execute(this.#db)
    const existing = new Set((await this.#hnswIndexes()).map((i) => i.name))
    const built: OptimizeResult['built'] = []
    const alreadyIndexed: string[] = []
    const notes: string[] = []
    const promote = async (tenantId: string, rows: number, reason: 'size' | 'planner') => {
      const result = await this.createTenantIndex(tenantId, { ...options.indexBuild, concurrently: options.concurrently ?? options.indexBuild?.concurrently })
      built.push({ tenantId, rows, index: result.index, seconds: result.seconds, bytes: result.bytes, reason })
      existing.add(result.index)
    }
    // 1. Size: every tenant above the threshold gets its own index.
    for (const { tenant_id: tenantId, rows } of sizes) {
      if (rows <= threshold) break
      if (existing.has(tenantIndexName(this.config.table, tenantId))) alreadyIndexed.push(tenantId)
      else if (built.length < maxNewIndexes) await promote(tenantId, rows, 'size')
    }
    await sql`analyze ${t}`.execute(this.#db)

    // 2. Planner: while a shared index exists, the tenants it would still serve (largest first).
    const sharedName = storeIndexNames(this.config.table).sharedHnsw
    let sharedIndex: OptimizeResult['sharedIndex'] = null
    const sharedBytes = await indexBytes(this.#db, this.config.schema, sharedName)
    if (sharedBytes !== undefined) {
      let servedBy: { tenantId: string; rows: number } | undefined
      for (const { tenant_id: tenantId, rows } of sizes) {
        if (existing.has(tenantIndexName(this.config.table, tenantId))) continue
        if (!(await this.#planUsesIndex(tenantId, sharedName))) break
        if (rows < minOwnIndex || built.length >= maxNewIndexes) {
          servedBy = { tenantId, rows }
          break
        }
        await promote(tenantId, rows, 'planner')
      }
      if (built.some((b) => b.reason === 'planner')) await sql`analyze ${t}`.execute(this.#db)
      let dropped = false
      if (!servedBy && options.dropUnusedSharedIndex) {
        await sql`drop index ${sql.raw(options.concurrently ? 'concurrently ' : '')}${sql.raw(quoteQualified(this.config.schema, sharedName))}`.execute(this.#db)
        dropped = true
      }
      sharedIndex = { name: sharedName, bytes: sharedBytes, servesAnyone: servedBy !== undefined, probedTenant: servedBy, dropped }
      const byPlanner = built.filter((b) => b.reason === 'planner')
      if (byPlanner.length) {
        notes.push(
          `${byPlanner.length} tenant(s) below ${threshold} chunks (${byPlanner.map((b) => `${b.tenantId}: ${b.rows}`).join(', ')}) ` +
            `were planned on the shared HNSW index, where a filtered walk loses recall when tenants share topics; they got their own index.`,
        )
      }
      notes.push(
        servedBy
          ? `The shared HNSW index (${mb(sharedBytes)}) still serves tenants without their own index (the planner uses it for ${servedBy.tenantId}, ${servedBy.rows} chunks, ` +
              `below minOwnIndex ${minOwnIndex}); their recall depends on ef_search and iterative scan.`
          : `The shared HNSW index (${mb(sharedBytes)}) serves no tenant any more: each is served exactly through the primary key or by its own index. ` +
              (dropped ? 'It was dropped.' : 'Drop it with optimize({ dropUnusedSharedIndex: true }) to save its space and ingest cost.'),
      )
    }
    const tuning = await this.#tuneIndexedTenants(options, sizes, [...built.map((b) => b.tenantId), ...alreadyIndexed])
    const tunedIndex = tuning.tenants.filter((r) => r.path === 'index')
    const tunedExact = tuning.tenants.filter((r) => r.path === 'exact')
    if (tunedIndex.length) {
      notes.push(
        `Tuned to tie-aware recall@10 ≥ ${tuning.targetRecall}: ${tunedIndex.map((r) => `${r.tenantId} ef_search ${r.efSearch}` +
          `${r.rebuiltWith ? ` (index rebuilt, m ${r.rebuiltWith.m}, ef_construction ${r.rebuiltWith.efConstruction})` : ''}: ${r.recall.toFixed(3)}, ` +
          `${ms(r.searchP50Ms ?? 0)} p50`).join('; ')}.`,
      )
    }
    for (const r of tunedExact) {
      notes.push(
        `${r.tenantId} (${r.rows} chunks): no index setting reached recall ${tuning.targetRecall} within ${ms(r.latencyBoundMs)} p50 ` +
          `(best: ${bestTried(r)}); its searches take the exact path (recall 1.0, ${ms(r.exactP50Ms)} p50).`,
      )
    }
    const withOwnIndex = built.length + alreadyIndexed.length
    notes.unshift(
      `${sizes.length} tenants: ${withOwnIndex} have their own HNSW index${built.length ? ` (${built.length} built now)` : ''}; ` +
        `${sizes.length - withOwnIndex} are served by the primary key and an exact sort (recall 1.0).`,
    )
    return {
      ownIndexAbove: threshold,
      tenants: { total: sizes.length, withOwnIndex, withoutOwnIndex: sizes.length - withOwnIndex },
      built,
      alreadyIndexed,
      sharedIndex,
      tuning,
      notes,
    }
  }

  /** Tunes each indexed tenant whose tuning is missing or stale (size changed, other target). */
  async #tuneIndexedTenants(
    options: OptimizeOptions,
    sizes: ReadonlyArray<{ tenant_id: string; rows: number }>,
    indexed: readonly string[],
  ): Promise<OptimizeResult['tuning']> {
    const target = options.targetRecall === undefined ? DEFAULT_TARGET_RECALL : options.targetRecall
    if (target === null) return { targetRecall: null, tenants: [], unchanged: [] }
    if (typeof target !== 'number' || !(target > 0 && target <= 1)) {
      throw new InvalidArgumentError(`targetRecall must be a number in (0, 1], or null to skip tuning; got ${String(target)}`)
    }
    const params = tuningParameters(options.tuning ?? {})
    const rowsOf = new Map(sizes.map((s) => [s.tenant_id, s.rows]))
    const tenants: TenantTuningReport[] = []
    const unchanged: string[] = []
    const concurrently = options.concurrently ?? options.indexBuild?.concurrently
    const deps = {
      db: this.#db,
      config: this.config,
      cache: this.#tuning,
      rebuild: async (tenantId: string, build: IndexBuildOptions) => {
        const index = quoteQualified(this.config.schema, tenantIndexName(this.config.table, tenantId))
        await this.#db.executeQuery(CompiledQuery.raw(`drop index ${concurrently ? 'concurrently ' : ''}if exists ${index}`))
        await this.createTenantIndex(tenantId, { ...build, concurrently })
      },
    }
    for (const tenantId of indexed) {
      const rows = rowsOf.get(tenantId) ?? 0
      if (stillTuned(await this.#tuning.get(tenantId), rows, target, params.retuneAbove)) {
        unchanged.push(tenantId)
        continue
      }
      tenants.push(await tuneTenant(deps, this.forTenant(tenantId), rows, target, params, options.indexBuild ?? {}))
    }
    return { targetRecall: target, tenants, unchanged }
  }

  /**
   * The per-tenant settings `optimize({ targetRecall })` chose (read from the store's tuning table).
   *
   * ### Examples
   * ```ts
   * for (const t of await store.tenantTuning()) console.log(t.tenantId, t.exact ? 'exact' : `ef_search ${t.efSearch}`)
   * ```
   */
  async tenantTuning(): Promise<TenantTuning[]> {
    return this.#tuning.all()
  }

  /**
   * Measures recall@k of `search` as it runs now (the tenant's tuned or the store's settings)
   * against `exactSearch`, per tenant, with latency beside it: the way to check a deployment, cheap
   * enough to run after every `optimize()`. Recall is tie-aware (a returned row within the exact
   * k-th distance + ε is a hit, as ann-benchmarks counts), with the id-based figure beside it.
   * Queries are given, or sampled from the tenant's own chunks with a seeded perturbation.
   *
   * ### Examples
   * ```ts
   * const { tenants } = await store.measureRecall({ sample: 200 })
   * for (const t of tenants) console.log(t.tenantId, t.recall.toFixed(3), `${t.searchP50Ms.toFixed(1)} ms`)
   * ```
   */
  async measureRecall(options: MeasureRecallOptions = {}): Promise<MeasureRecallResult> {
    const started = performance.now()
    const { sample, k, seed, epsilon } = measureParameters(options)
    const { rows: sizes } = await sql<{ tenant_id: string; rows: number }>`
      select tenant_id, count(*)::int as rows from ${sql.raw(this.config.qualified)} group by tenant_id order by count(*) desc, tenant_id`.execute(this.#db)
    const rowsOf = new Map(sizes.map((s) => [s.tenant_id, s.rows]))
    let tenantIds: string[]
    if (options.tenantId !== undefined) {
      tenantIds = (typeof options.tenantId === 'string' ? [options.tenantId] : [...options.tenantId]).map((id) => assertId(id, 'tenant id'))
    } else {
      const indexes = new Set((await this.#hnswIndexes()).map((i) => i.name))
      tenantIds = sizes.filter((s) => indexes.has(tenantIndexName(this.config.table, s.tenant_id))).map((s) => s.tenant_id)
      if (tenantIds.length === 0) tenantIds = sizes.slice(0, 3).map((s) => s.tenant_id)
    }
    if (options.queries !== undefined && tenantIds.length !== 1) throw new InvalidArgumentError('measureRecall: queries go with exactly one tenantId')
    const tenants: TenantRecall[] = []
    for (const tenantId of tenantIds) {
      const handle = this.forTenant(tenantId)
      const queries = options.queries ?? (await sampleQueries(this.#db, this.config, tenantId, sample, seed))
      const { truth, ms: exactMs } = await exactAnswers(handle, queries, k)
      const r = await searchRecall(handle, queries, truth, k, epsilon, options.efSearch === undefined ? {} : { efSearch: options.efSearch })
      tenants.push({
        tenantId,
        rows: rowsOf.get(tenantId) ?? 0,
        queries: queries.length,
        recall: r.recall,
        recallById: r.recallById,
        searchP50Ms: percentile(r.ms, 50),
        searchP95Ms: percentile(r.ms, 95),
        exactP50Ms: percentile(exactMs, 50),
      })
    }
    return {
      k,
      epsilon,
      tenants,
      seconds: (performance.now() - started) / 1000,
      method:
        `recall@${k} of search at its current settings against exactSearch, ${options.queries ? 'on the given queries' : `on ${sample} chunks per tenant sampled with seed "${seed}", each moved by seeded noise`}; ` +
        `a hit is a returned row within the exact ${k}-th distance + ${epsilon} (recallById counts exact ids); latency p50/p95 of sequential calls`,
    }
  }

  /**
   * Rows, tenants and bytes: heap, TOAST, each index, total.
   *
   * ### Examples
   * ```ts
   * const { rows, tenants, bytes } = await store.stats()
   * ```
   */
  async stats(): Promise<StoreStats> {
    const t = sql.raw(this.config.qualified)
    const { rows: counts } = await sql<{ rows: number; tenants: number }>`
      select count(*)::int as rows, count(distinct tenant_id)::int as tenants from ${t}`.execute(this.#db)
    const { rows: rel } = await sql<{ heap: string; toast: string; total: string }>`
      select pg_relation_size(c.oid)::text as heap,
        (case when c.reltoastrelid = 0 then 0 else pg_total_relation_size(c.reltoastrelid) end)::text as toast,
        pg_total_relation_size(c.oid)::text as total
      from pg_class c where c.oid = to_regclass(${this.config.qualified})`.execute(this.#db)
    const { rows: idx } = await sql<{ name: string; bytes: string }>`
      select i.relname as name, pg_relation_size(i.oid)::text as bytes
      from pg_index x join pg_class i on i.oid = x.indexrelid
      where x.indrelid = to_regclass(${this.config.qualified}) order by i.relname`.execute(this.#db)
    return {
      rows: counts[0]?.rows ?? 0,
      tenants: counts[0]?.tenants ?? 0,
      bytes: {
        heap: Number(rel[0]?.heap ?? 0),
        toast: Number(rel[0]?.toast ?? 0),
        indexes: Object.fromEntries(idx.map((r) => [r.name, Number(r.bytes)])),
        total: Number(rel[0]?.total ?? 0),
      },
    }
  }

  /** The store's HNSW indexes with their definitions. */
  async #hnswIndexes(): Promise<Array<{ name: string; definition: string }>> {
    const { rows } = await sql<{ name: string; definition: string }>`
      select i.relname as name, pg_get_indexdef(i.oid) as definition
      from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
      where x.indrelid = to_regclass(${this.config.qualified}) and am.amname = 'hnsw'`.execute(this.#db)
    return rows
  }

  async #estimatedRows(): Promise<number | undefined> {
    const { rows } = await sql<{ n: number }>`select reltuples::float8 as n from pg_class where oid = to_regclass(${this.config.qualified})`.execute(this.#db)
    return rows[0] ? Math.max(0, rows[0].n) : undefined
  }

  /** Whether the plan of a tenant's search uses `index`. */
  async #planUsesIndex(tenantId: string, index: string): Promise<boolean> {
    const probe = new Array<number>(this.config.dimensions).fill(0)
    probe[0] = 1
    const text = `explain (format json) ${this.#sql.search}`
    const plan = await this.#db.transaction(async (trx) => {
      const result = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(text, [tenantId, `[${probe.join(',')}]`, 10]))
      return JSON.stringify(result.rows[0]?.['QUERY PLAN'])
    }, { settings: { 'hnsw.ef_search': this.config.defaultEfSearch, 'hnsw.iterative_scan': 'relaxed_order' } })
    return plan.includes(`"Index Name":"${index}"`)
  }
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
