import { sql, type Kysely, type Migration } from 'kysely'
import {
  assertMetadataField,
  buildSharedIndex,
  buildTenantIndex,
  createMetadataIndex,
  DeclaredFields,
  distributeStore,
  type IndexBuildOptions,
  type IndexBuildResult,
  IndexedTenants,
  listMetadataIndexes,
  type MetadataIndex,
  type MetadataIndexOptions,
  dropStore,
  ensureStoreRowSecurity,
  grantStore,
  storeMigrationSql,
  type StoreMigrationOptions,
  storeObject,
  storeStats,
  type StoreStats,
  type TenantTuning,
  TuningCache,
} from './schema/index.js'
import { adoptDatabase, type DatabaseHandle } from '../db/adopt.js'
import { ALL_TENANTS_SETTING, TENANT_SETTING } from '../db/security/row-security.js'
import { scopedHandle } from '../db/security/scoped-handle.js'
import { ReplicaSet, WriteJournal, type ReplicaStats } from '../replicas/index.js'
import type { Database } from '../db/database.js'
import {
  dropSpaces,
  EmbeddingSpaces,
  type EmbeddingSpace,
  type EmbeddingSpaceConfig,
  type MigrateTenantOptions,
  type MigrateTenantResult,
  type MigrationStatus,
  type SwitchTenantOptions,
  type TenantSpaceState,
  type CompareSpacesOptions,
  type SpaceComparison,
} from './spaces/index.js'
import { joinTransaction, type AppTransaction } from '../db/joined-transaction.js'
import { migrateObject } from '../db/migration/object-migrations.js'
import { InvalidArgumentError, SchemaMismatchError } from '../errors.js'
import { ensureVectorExtension } from '../db/server-info.js'
import { assertId, type BulkIngestOptions, type BulkIngestResult, bulkIngestWithIndexes, type IngestRow } from './ingest/index.js'
import {
  type PgVectorStoreConfig,
  renderStatements,
  type ResolvedStoreConfig,
  resolveStoreConfig,
  type StoreStatements,
} from './config/index.js'
import {
  type FilteredStatements,
  FilterVerdicts,
  type QuerySampleFlush,
  QuerySampler,
  renderFilteredStatements,
  TenantStore,
} from './tenant/index.js'
import {
  applyTenantTiers,
  tuneOneTenant,
  type MeasureRecallOptions,
  type MeasureRecallResult,
  measureStoreRecall,
  type OptimizeOptions,
  type OptimizeResult,
  recallReport,
  type TenantRecallReport,
} from './tuning/index.js'
import type { MetadataFieldType } from '../filter/metadata-field.js'

export type { BulkIngestOptions, BulkIngestResult } from './ingest/index.js'
export { DEFAULT_MAX_OWN_INDEXES, DEFAULT_OWN_INDEX_ABOVE, type OptimizeOptions, type OptimizeResult } from './tuning/index.js'
export type { StoreStats } from './schema/index.js'

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
  readonly #indexed: IndexedTenants
  readonly #filtered: FilteredStatements
  readonly #fields: DeclaredFields
  /** The replicas tenant reads may go to, and whether the store made the set (and closes it). */
  readonly #replicas: { set: ReplicaSet; owned: boolean } | undefined
  /** The handle as given; `#db` is it scoped to every tenant under row-level security. */
  readonly #raw: Database
  readonly #verdicts = new FilterVerdicts()
  readonly #sampler: QuerySampler | undefined
  /** Where every committed write of the store is recorded (its replicas' read-your-writes). */
  readonly #journal: WriteJournal
  /** The configuration as given (a space's store opens with it, its own table and vectors put in). */
  readonly #given: PgVectorStoreConfig
  /** The store's embedding spaces (docs/store.md, "Changing the embedding model"); made on first use. */
  #spaces: EmbeddingSpaces<PgVectorStore> | undefined
  /** The validated configuration. */
  readonly config: ResolvedStoreConfig

  private constructor(
    raw: Database,
    config: ResolvedStoreConfig,
    given: PgVectorStoreConfig,
    replicas?: { set: ReplicaSet; owned: boolean },
  ) {
    // Under row-level security the store's own fleet-wide work (tuning records, the query sample,
    // reports) says so for its transactions, and each tenant handle sets its tenant.
    const db = config.isolation === 'rls' ? scopedHandle(raw, { [ALL_TENANTS_SETTING]: 'on' }) : raw
    this.#raw = raw
    this.#given = given
    this.#db = db
    this.config = config
    this.#sql = renderStatements(config)
    this.#tuning = new TuningCache(db, config)
    this.#indexed = new IndexedTenants(db, config)
    this.#filtered = renderFilteredStatements(config)
    this.#fields = new DeclaredFields(db, config)
    this.#sampler = config.querySample ? new QuerySampler(db, config, config.querySample) : undefined
    this.#replicas = replicas
    this.#journal = new WriteJournal(replicas ? [replicas.set] : [])
  }

  /**
   * Opens a store, creating its table and indexes if missing (idempotent; two processes opening
   * at once is safe), and the `vector` extension where the role may (else an `ExtensionMissingError`
   * that names the fix). An existing table with other dimensions, distance or `fullText` is a {@link SchemaMismatchError}.
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
    // An adopted handle (the app's Kysely or pg.Pool) never went through connect(), which makes sure of
    // pgvector: do the same here, or fail with an error that names the fix, not `type "vector" does not exist`.
    await ensureVectorExtension(db)
    const object = storeObject(resolved)
    await migrateObject(db, object.key, object.config, object.steps, {
      relation: object.relation,
      recordedDefaults: object.recordedDefaults,
      migrate: resolved.migrate,
      command: `\`npx pgscale migrate\` with this store in its config, or PgVectorStore.migration(config) in your migrations`,
    })
    const { rows } = await sql<{ dims: number }>`
      select a.atttypmod as dims from pg_attribute a
      where a.attrelid = to_regclass(${resolved.qualified}) and a.attname = 'embedding' and not a.attisdropped`.execute(db)
    const dims = rows[0]?.dims
    if (dims !== resolved.dimensions) {
      throw new SchemaMismatchError(
        `${resolved.qualified}.embedding is ${resolved.vectorType}(${dims ?? '?'}), the store is configured with ${resolved.dimensions} dimensions`,
      )
    }
    await ensureStoreRowSecurity(db, resolved)
    await distributeStore(db, resolved)
    const store = new PgVectorStore(db, resolved, config, replicaSetOf(db, config))
    await store.#tuning.reload()
    await store.#fields.get()
    return store
  }

  /**
   * The store's DDL as a Kysely migration, for apps that run DDL only at deploy time with their own
   * `Migrator`: `up` creates (or upgrades) the tables as `open` would and, with `runtimeRole`,
   * grants that role what the app needs at run time (DML on the store's tables, `SELECT` on the
   * version table, `USAGE` on the schema); `down` drops the store with its embedding spaces (each
   * added space's table, the spaces' bookkeeping and guard). Afterwards the runtime role's
   * `open` only reads the catalog.
   *
   * ### Examples
   * ```ts
   * const migrations = { '0002-rag-chunks': PgVectorStore.migration({ table: 'rag_chunks', dimensions: 384 }, { runtimeRole: 'app' }) }
   * ```
   */
  static migration(config: PgVectorStoreConfig, options: StoreMigrationOptions = {}): Migration {
    const resolved = resolveStoreConfig(config)
    return {
      up: async (db: Kysely<any>) => {
        await (await PgVectorStore.open(db, { ...config, migrate: true, querySample: false })).close()
        if (options.runtimeRole !== undefined) await grantStore(db, resolved, options.runtimeRole)
      },
      // The store's embedding spaces first (their tables, bookkeeping and guard), then the store.
      down: async (db: Kysely<any>) => {
        await dropSpaces(db, config, resolved)
        await dropStore(db, resolved)
      },
    }
  }

  /**
   * The same migration as plain SQL in one transaction (what `pgscale migrate --print` writes), for
   * teams whose migrations are SQL files. Running it twice changes nothing the second time.
   *
   * ### Examples
   * ```ts
   * await writeFile('V7__rag_chunks.sql', await PgVectorStore.migrationSql({ dimensions: 384 }, { runtimeRole: 'app' }))
   * ```
   */
  static migrationSql(config: PgVectorStoreConfig, options: StoreMigrationOptions = {}): Promise<string> {
    return storeMigrationSql(resolveStoreConfig(config), options)
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
    if (options.transaction !== undefined) return this.#handle(joinTransaction(options.transaction), tenantId, this.#sampler)
    return this.#handle(this.#raw, tenantId, this.#sampler, this.#replicas?.set)
  }

  /** A tenant handle; without a sampler for the store's own measuring searches (tuning, recall). */
  #handle(db: Database, tenantId: string, sampler: QuerySampler | undefined, replicas?: ReplicaSet): TenantStore {
    const bind = (handle: Database) => (this.config.isolation === 'rls' ? scopedHandle(handle, { [TENANT_SETTING]: tenantId }) : handle)
    const scoped = bind(db === this.#db ? this.#raw : db)
    return new TenantStore(
      scoped,
      this.config,
      this.#sql,
      tenantId,
      this.#tuning,
      this.#indexed,
      this.#filtered,
      this.#fields,
      this.#verdicts,
      sampler,
      replicas && { set: replicas, bind },
      this.#journal,
    )
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
    const tenants = new Set<string>()
    const result = await bulkIngestWithIndexes(this.#db, this.config, this.#sql.copyRows, noteTenants(rows, tenants), options).finally(
      () => {
        this.#indexed.invalidate()
        this.#verdicts.clear()
      },
    )
    await this.#journal.committed(tenants, this.#db)
    return result
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
    return buildSharedIndex(this.#db, this.config, options).finally(() => this.#indexed.invalidate())
  }

  /**
   * Builds a partial HNSW index for one tenant (`WHERE tenant_id = '...'`): its searches walk an
   * unfiltered graph of its own chunks, so recall does not collapse when tenants share topics. On a
   * partitioned store it is built on the tenant's partition only.
   *
   * ### Examples
   * ```ts
   * await store.createTenantIndex('big-tenant')
   * ```
   */
  async createTenantIndex(tenantId: string, options: IndexBuildOptions = {}): Promise<IndexBuildResult> {
    assertId(tenantId, 'tenant id')
    return buildTenantIndex(this.#db, this.config, tenantId, options).finally(() => this.#indexed.invalidate())
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
    return applyTenantTiers(this.#internals(), options).finally(() => this.#indexed.invalidate())
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
    return measureStoreRecall(this.#internals(), options)
  }

  /**
   * The recall monitor: per tenant, the setting its searches use, the queries its tuning was
   * chosen on (`querySource`), and the last tie-aware recall@10 measured on its recent real
   * queries and on a chunk sample (by `optimize()` or `measureRecall`), with the gap between them.
   *
   * ### Examples
   * ```ts
   * for (const t of await store.recallReport()) console.log(t.tenantId, t.efSearch, t.recent?.recall, t.chunks?.recall)
   * ```
   */
  async recallReport(): Promise<TenantRecallReport[]> {
    return recallReport(this.#db, this.config, await this.#tuning.all())
  }

  /**
   * Writes the query sample this process has buffered now (it is also written every
   * `querySample.flushIntervalMs`, and before `optimize()` and `measureRecall()`). Never rejects:
   * a failed write is in `error`, and searches are unaffected.
   *
   * ### Examples
   * ```ts
   * const { written } = await store.flushQuerySample()
   * ```
   */
  async flushQuerySample(): Promise<QuerySampleFlush> {
    return this.#sampler ? this.#sampler.flush() : { written: 0 }
  }

  /**
   * Stops the store's background work (the query sample's timer) after a last flush. The
   * database handle stays open: it is the app's.
   *
   * ### Examples
   * ```ts
   * await store.close()
   * await db.destroy()
   * ```
   */
  async close(): Promise<void> {
    await this.#spaces?.close()
    await this.#sampler?.close()
    if (this.#replicas?.owned) await this.#replicas.set.close()
  }

  /**
   * A token for the tenant's latest write through this store (else the primary's current WAL
   * position): give it to a read in another request or process (`{ consistencyToken }`) so it sees
   * that write even on a replica. Without replicas there is nothing to wait for: `undefined`.
   *
   * ### Examples
   * ```ts
   * await acme.replaceDocument('doc-1', chunks)
   * session.pgscale = await store.consistencyToken('acme')
   * // next request, any instance:
   * await store.forTenant('acme').search(q, { consistencyToken: session.pgscale })
   * ```
   */
  async consistencyToken(tenantId: string): Promise<string | undefined> {
    return this.#replicas?.set.consistencyToken(assertId(tenantId, 'tenant id'))
  }

  /**
   * Where tenant reads went: the primary and each replica, reads that waited for replay, why reads
   * went to the primary, replay lag seen, replicas down or promoted. Undefined without replicas.
   *
   * ### Examples
   * ```ts
   * console.log(store.replicaStats()?.replicaReads)
   * ```
   */
  replicaStats(): ReplicaStats | undefined {
    return this.#replicas?.set.stats()
  }

  /**
   * Declares a metadata field and builds the expression index its filters use, led by `tenant_id`:
   * equality, ranges and `$in` on `path` with operands of `type` are then served by it (exactly:
   * rows where the path holds another type or an array are still matched by the general form). `type`
   * is `string` (code-point order), `number`, `boolean` or `timestamp` (ISO-8601 strings with an
   * offset, compared with `Date` operands). Recorded with the store, listed in `stats()`. Idempotent.
   *
   * ### Examples
   * ```ts
   * await store.createMetadataIndex('owner', 'string')
   * await store.createMetadataIndex('published_at', 'timestamp', { concurrently: true })
   * const hits = await store.forTenant('acme').search(embedding, { filter: { owner: { $in: ['ana', 'bo'] } } })
   * ```
   */
  async createMetadataIndex(path: string, type: MetadataFieldType, options: MetadataIndexOptions = {}): Promise<MetadataIndex> {
    const field = assertMetadataField(path, type)
    return createMetadataIndex(this.#db, this.config, field, options).finally(() => this.#fields.invalidate())
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
    const [stats, metadataIndexes] = await Promise.all([storeStats(this.#db, this.config), listMetadataIndexes(this.#db, this.config)])
    return { ...stats, metadataIndexes }
  }

  /** The store's embedding spaces (made on first use: a store without spaces reads nothing of them). */
  #embeddingSpaces(): EmbeddingSpaces<PgVectorStore> {
    this.#spaces ??= EmbeddingSpaces.open({
      db: this.#db,
      raw: this.#raw,
      config: this.config,
      given: this.#given,
      store: this,
      replicas: this.#replicas?.set,
      journal: this.#journal,
      open: (handle, config) => PgVectorStore.open(handle, config),
      // A space's store is a PgVectorStore too: its own tuner, as its optimize() runs it, for one tenant.
      tune: (space, tenantId, options) => tuneOneTenant(space.#internals(), tenantId, options).finally(() => space.#indexed.invalidate()),
    })
    return this.#spaces
  }

  /**
   * Adds an embedding space beside the store's own (`default`): a table with the same columns and
   * `dimensions`-wide vectors of another model, opened as a store of its own (its per-tenant
   * indexes, tuning, query sample, isolation), and a guard on every space's table that refuses
   * writes to a space the row's tenant neither searches nor migrates to. DDL: the table's owner
   * runs it (a migration); `runtimeRole` grants that role what it needs. Idempotent.
   *
   * ### Examples
   * ```ts
   * await store.addSpace({ name: 'small_256', dimensions: 256, model: 'text-embedding-3-small@256' }, { runtimeRole: 'app' })
   * ```
   */
  addSpace(space: EmbeddingSpaceConfig, options: { runtimeRole?: string } = {}): Promise<EmbeddingSpace> {
    return this.#embeddingSpaces().add(space, options)
  }

  /**
   * The store's embedding spaces, `default` (the store's own column) first.
   *
   * ### Examples
   * ```ts
   * (await store.listSpaces()).map((s) => `${s.name}: ${s.dimensions}`) // ['default: 384', 'small_256: 256']
   * ```
   */
  listSpaces(): Promise<EmbeddingSpace[]> {
    return this.#embeddingSpaces().list()
  }

  /**
   * The space a tenant searches and a handle on it: embed the query with that space's model and
   * search through `tenant`. A handle kept across a switch keeps answering in its own space (the
   * model its queries come from) and refuses writes with an {@link EmbeddingSpaceError}; take a new
   * one after a switch. One read of the tenant's state (on the primary).
   *
   * ### Examples
   * ```ts
   * const { space, tenant } = await store.activeTenant('acme')
   * const hits = await tenant.search(await models[space].embed(question), { k: 10 })
   * ```
   */
  activeTenant(tenantId: string): Promise<{ space: string; tenant: TenantStore; store: PgVectorStore }> {
    return this.#embeddingSpaces().activeTenant(tenantId)
  }

  /**
   * Fills space `to` with the tenant's chunks, embedded by the app's `embed`, while the tenant
   * keeps searching and writing its active space: batches in key order, each written in one
   * statement; resumable (the target is the checkpoint: a crash or an abort loses nothing embedded);
   * rate-limited with `maxChunksPerSecond`; chunks written meanwhile are found and embedded by the
   * next pass, deletions and metadata changes brought over. Ends with the tenant's own index in the
   * space when it is large, tuned there with `optimize`'s tuner at its recall target (`tune`; the
   * result's `tuning`), the state `ready`, and — with `switch: true` — the switch.
   *
   * ### Examples
   * ```ts
   * await store.migrateTenant('acme', { to: 'small_256', embed: (texts) => model.embed(texts), maxChunksPerSecond: 2000 })
   * const { tuning } = await store.migrateTenant('acme', { to: 'small_256', embed, tune: { targetRecall: 0.99 } })
   * tuning?.tuning?.efSearch // the ef_search its searches there will use; tuning?.tuning?.recallBound: the stated bound
   * ```
   */
  migrateTenant(tenantId: string, options: MigrateTenantOptions): Promise<MigrateTenantResult> {
    return this.#embeddingSpaces().migrateTenant(tenantId, options)
  }

  /**
   * Before a switch: the same questions answered by the tenant's active space and by `to` — each
   * query embedded by each space's model (`embed.from`, `embed.to`; pgscale keeps no query text,
   * so the app gives the texts) — with the overlap of the two top k, the rank correlation of what
   * they share, and, given `judgments` (relevant chunks per query), recall@k and nDCG@k of each.
   *
   * ### Examples
   * ```ts
   * const { overlap, quality } = await store.compareSpaces('acme', { to: 'v2', queries, embed: { from: oldModel, to: newModel }, judgments })
   * ```
   */
  compareSpaces(tenantId: string, options: CompareSpacesOptions): Promise<SpaceComparison> {
    return this.#embeddingSpaces().compare(tenantId, options)
  }

  /**
   * Where a tenant's migration stands: its active space, target, state, chunks embedded and
   * pending, the backfill's rate and an estimate of the seconds left, and its tuning in the target
   * (`tuning`: its index there, the `ef_search` / exact path and stated recall bound, `untuned`).
   *
   * ### Examples
   * ```ts
   * const { pending, etaSeconds } = await store.migrationStatus('acme')
   * ```
   */
  migrationStatus(tenantId: string): Promise<MigrationStatus> {
    return this.#embeddingSpaces().status(tenantId)
  }

  /**
   * Switches the tenant to the space its migration filled, in one transaction: with `embed`, the
   * chunks written since the backfill's last pass embedded first without the lock; then the
   * tenant's state row locked (writes in flight finish first, new ones wait for the switch),
   * deletions and metadata brought over, the chunks written during that pass embedded (at most
   * `maxEmbedUnderLock`), and — only if every chunk then has the new space's vector of its current
   * text — the flip; otherwise an {@link EmbeddingSpaceError} with `pending` (run `migrateTenant`
   * again). Under the lock it looks only at the keys written since the migration began (the space
   * guard logs them), so its time does not grow with the tenant. A tenant whose own index in the new space is not tuned is refused (`untuned`) unless
   * `allowUntuned`. The old space is kept, frozen, for {@link rollbackTenant}.
   *
   * ### Examples
   * ```ts
   * await store.switchTenant('acme', 'small_256', { embed: (texts) => model.embed(texts) })
   * ```
   */
  switchTenant(tenantId: string, to?: string, options?: SwitchTenantOptions): Promise<TenantSpaceState> {
    return this.#embeddingSpaces().switchTenant(tenantId, to, options)
  }

  /**
   * Switches the tenant back to the space it searched before its last switch (until that space is
   * released): its answers are the old ones exactly; chunks written since the switch must be
   * embedded with the old model first (`migrateTenant(t, { to: previous, embed: oldModel })`, which
   * is then the way back) — otherwise an {@link EmbeddingSpaceError} with `pending`.
   *
   * ### Examples
   * ```ts
   * await store.rollbackTenant('acme')
   * ```
   */
  rollbackTenant(tenantId: string): Promise<TenantSpaceState> {
    return this.#embeddingSpaces().rollbackTenant(tenantId)
  }

  /**
   * Stops a migration under way: the tenant keeps its active space; what was embedded stays in the
   * target (a later `migrateTenant` resumes from it, or `releaseTenantSpace` deletes it).
   *
   * ### Examples
   * ```ts
   * await store.cancelMigration('acme')
   * ```
   */
  cancelMigration(tenantId: string): Promise<TenantSpaceState> {
    return this.#embeddingSpaces().cancelMigration(tenantId)
  }

  /**
   * Deletes a tenant's chunks in a space it neither searches nor migrates to (its old space after
   * a switch: no rollback afterwards); resolves to how many.
   *
   * ### Examples
   * ```ts
   * await store.releaseTenantSpace('acme', 'default')
   * ```
   */
  releaseTenantSpace(tenantId: string, space: string): Promise<number> {
    return this.#embeddingSpaces().releaseTenantSpace(tenantId, space)
  }

  /**
   * Drops a space no tenant searches, fills or can roll back to, and that holds no chunk (its
   * tables and record); otherwise an {@link EmbeddingSpaceError} naming who uses it. DDL: the owner.
   *
   * ### Examples
   * ```ts
   * await store.dropSpace('small_256')
   * ```
   */
  dropSpace(space: string): Promise<void> {
    return this.#embeddingSpaces().dropSpace(space)
  }

  /** What the modules behind the facade need of this store. */
  #internals() {
    return {
      db: this.#db,
      config: this.config,
      statements: this.#sql,
      tuning: this.#tuning,
      forTenant: (tenantId: string) => this.#handle(this.#db, tenantId, undefined),
      sampler: this.#sampler,
      createTenantIndex: (tenantId: string, options: IndexBuildOptions) => this.createTenantIndex(tenantId, options),
      fields: async () => (await this.#fields.get()).list(),
    }
  }
}

/** `rows` as they are, each row's tenant added to `tenants` as it passes (for the write journal); anything else untouched (bulk ingest refuses it). */
function noteTenants<R extends { tenantId?: unknown }>(
  rows: AsyncIterable<R> | Iterable<R>,
  tenants: Set<string>,
): AsyncIterable<R> | Iterable<R> {
  if (rows === null || typeof rows !== 'object' || !(Symbol.asyncIterator in rows || Symbol.iterator in rows)) return rows
  return (async function* () {
    for await (const row of rows) {
      if (row !== null && typeof row === 'object' && typeof row.tenantId === 'string') tenants.add(row.tenantId)
      yield row
    }
  })()
}

/** The store's replica set: the one given, or one made of the given handles (closed with the store). */
function replicaSetOf(db: Database, config: PgVectorStoreConfig): { set: ReplicaSet; owned: boolean } | undefined {
  const given = config.replicas
  if (given === undefined) return undefined
  if (given instanceof ReplicaSet) return { set: given, owned: false }
  if (!Array.isArray(given) || given.length === 0)
    throw new InvalidArgumentError('replicas must be a ReplicaSet or a non-empty array of handles')
  return { set: new ReplicaSet(db, given, config.replicaOptions), owned: true }
}
