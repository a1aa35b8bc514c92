import { CompiledQuery, sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { scopedHandle } from '../../db/security/scoped-handle.js'
import { EmbeddingSpaceError, InvalidArgumentError, MigrationRequiredError, SchemaMismatchError } from '../../errors.js'
import type { ReplicaSet, WriteJournal } from '../../replicas/index.js'
import { advisoryXactLock, int32Hash } from '../../sql/advisory-lock.js'
import type { PgVectorStoreConfig, ResolvedStoreConfig } from '../config/index.js'
import { assertId } from '../ingest/index.js'
import { dropStore, grantStore } from '../schema/index.js'
import type { TenantStore } from '../tenant/index.js'
import type { IndexBuildOptions, IndexBuildResult, TenantTuning } from '../schema/index.js'
import type { TuneOneTenantOptions } from '../tuning/index.js'
import { quoteQualified } from '../../sql/quote.js'
import {
  hasSpaceChangeLog,
  listSpaces,
  spaceCatalogDdl,
  spaceCatalogGrants,
  spaceGuardTrigger,
  SPACE_MAINTENANCE_SETTING,
} from './space-catalog.js'
import { changeLogDiff, clearChangeLog, type ChangeLogDiff } from './space-change-log.js'
import {
  assertSpaceName,
  DEFAULT_SPACE,
  spaceStoreConfig,
  spaceTableName,
  spaceTables,
  type EmbeddingSpace,
  type EmbeddingSpaceConfig,
} from './space-config.js'
import { spaceDiff } from './space-diff.js'
import { spaceTenantTuning, switchTenantTuning, tuneInSpace, tuneOption, type SpaceTenantTuning, type SpaceTuner } from './space-tuning.js'
import {
  embedAndWrite,
  lastUnlockedPass,
  runBackfill,
  type EmbedTexts,
  type MigrateTenantOptions,
  type MigrateTenantResult,
  type PendingRow,
} from './backfill.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { compareTenantSpaces, type CompareSpacesOptions, type SpaceComparison } from './shadow-evaluation.js'

/** A tenant's place among the spaces: what it searches, what it migrates to, what it can roll back to. */
export interface TenantSpaceState {
  tenantId: string
  /** The space its searches and writes use. */
  active: string
  /** The space a migration is filling, if one is under way. */
  target: string | null
  /** The space it searched before its last switch (kept for `rollbackTenant` until released). */
  previous: string | null
  state: 'active' | 'backfilling' | 'ready' | 'switched' | 'rolled_back'
}

/** {@link PgVectorStore.migrationStatus}: the state, the progress and an estimate of what is left. */
export interface MigrationStatus extends TenantSpaceState {
  /** Chunks the tenant has in its active space. */
  total: number
  /** Of them, chunks the target holds with the same content (0 without a target). */
  embedded: number
  /** `total - embedded`: chunks still to embed before the switch. */
  pending: number
  /** Chunks embedded and calls to `embed` since the migration started (counted by the backfill). */
  embeddedSinceStart: number
  embedCalls: number
  startedAt: Date | null
  updatedAt: Date
  /** The backfill's rate since it started, and the seconds left at that rate (null before any batch). */
  chunksPerSecond: number | null
  etaSeconds: number | null
  /**
   * The tenant's tuning in its target (in its active space when it migrates nowhere): its own index
   * there, `tuning.efSearch` / `exact` / `targetRecall` / `recallBound` (the stated bound), and
   * `untuned` — an index without a tuning that holds, which `switchTenant` refuses.
   */
  tuning: SpaceTenantTuning
}

/** Options of {@link PgVectorStore.switchTenant}. */
export interface SwitchTenantOptions {
  /**
   * The new space's embed: chunks written since the last backfill pass (at most
   * `maxEmbedUnderLock` of them) are embedded inside the switch, while the tenant's writes wait;
   * without it such chunks make the switch refuse (`EmbeddingSpaceError.pending`).
   */
  embed?: EmbedTexts
  /** The most chunks embedded inside the switch's lock, 0..10,000. Default 256. */
  maxEmbedUnderLock?: number
  /**
   * Switch a tenant whose own index in the new space has no tuning that holds for its size
   * (`migrationStatus().tuning.untuned`; `migrateTenant` tunes it unless `tune: false`): its
   * searches there then run at the store's default `ef_search`, with no stated recall. Default
   * false: such a switch is refused (`EmbeddingSpaceError`, `untuned`).
   */
  allowUntuned?: boolean
}

/** What the spaces module needs of a space's store (a `PgVectorStore`). */
export interface SpaceStore {
  readonly config: ResolvedStoreConfig
  forTenant(tenantId: string): TenantStore
  createTenantIndex(tenantId: string, options?: IndexBuildOptions): Promise<IndexBuildResult>
  /** The space's tuning table (`optimize`'s choices per tenant). */
  tenantTuning(): Promise<TenantTuning[]>
  close(): Promise<void>
}

/** What the spaces module needs of its store. */
export interface SpacesHost<S extends SpaceStore = SpaceStore> {
  /** The store's handle for its own work (under `rls`, scoped to every tenant). */
  db: Database
  /** The handle as the app gave it (sibling stores open on it). */
  raw: Database
  config: ResolvedStoreConfig
  given: PgVectorStoreConfig
  store: S
  replicas: ReplicaSet | undefined
  journal: WriteJournal
  open: (handle: Database, config: PgVectorStoreConfig) => Promise<S>
  /** Tunes one tenant of a space's store, as `optimize({ targetRecall })` tunes each (`tuneOneTenant`). */
  tune: (store: S, tenantId: string, options: TuneOneTenantOptions) => Promise<unknown>
}

/** How many times `migrateTenant({ switch: true })` tries to switch while writes keep coming in. */
const MAX_SWITCH_ATTEMPTS = 8

interface StateRow {
  tenant_id: string
  active: string
  target: string | null
  previous: string | null
  state: TenantSpaceState['state']
  embedded: string
  embed_calls: string
  started_at: Date | null
  updated_at: Date
  /**
   * Read only where the store has the change log: whether it holds every key written since the
   * tenant's spaces were last compared whole or made equal (a migration begun, a flip) — false for
   * a migration or a switch made before the store had the log.
   */
  changes_logged?: boolean
}

/**
 * A store's embedding spaces: the store's own column (`default`) and the spaces added beside it,
 * each a table with the same columns and its own vectors, opened as a store of its own (its own
 * per-tenant indexes, tuning, query sample). Each tenant searches one space; a migration fills
 * another from the active one's chunks, the switch flips the tenant in one transaction, the
 * guard on every space's table refuses writes to a space the tenant neither searches nor fills.
 * Reached through {@link PgVectorStore.addSpace}, `migrateTenant`, `switchTenant`, … (docs/store.md,
 * "Changing the embedding model").
 *
 * ### Examples
 * ```ts
 * const spaces = await EmbeddingSpaces.open(host)
 * const { tenant } = await spaces.activeTenant('acme')
 * ```
 */
export class EmbeddingSpaces<S extends SpaceStore = SpaceStore> {
  readonly #host: SpacesHost<S>
  readonly #stores = new Map<string, Promise<S>>()
  /** Whether the bookkeeping is known to exist (it is never dropped while the store is open): the tenant's state is then one read. */
  #catalog = false
  /** Whether the guard is known to log the keys written while a tenant migrates (the change log exists). */
  #changeLog = false

  private constructor(host: SpacesHost<S>) {
    this.#host = host
  }

  /** The spaces of `host`'s store (nothing is read until a space is used). */
  static open<S extends SpaceStore>(host: SpacesHost<S>): EmbeddingSpaces<S> {
    return new EmbeddingSpaces(host)
  }

  /** The spaces recorded, `default` first. */
  list(): Promise<EmbeddingSpace[]> {
    return listSpaces(this.#host.db, this.#host.config)
  }

  /** The store of one space (`default`: the store itself). */
  async store(space: string): Promise<S> {
    assertSpaceName(space)
    if (space === DEFAULT_SPACE) return this.#host.store
    let opened = this.#stores.get(space)
    if (!opened) {
      opened = this.#openSpace(space)
      this.#stores.set(space, opened)
      opened.catch(() => this.#stores.delete(space))
    }
    return opened
  }

  async #openSpace(space: string): Promise<S> {
    const found = (await this.list()).find((s) => s.name === space)
    if (!found)
      throw new EmbeddingSpaceError(
        `${this.#host.config.qualified} has no embedding space "${space}": the owner adds it with store.addSpace({ name: '${space}', dimensions })`,
      )
    return this.#host.open(this.#host.raw, this.#siblingConfig(found))
  }

  #siblingConfig(space: EmbeddingSpaceConfig | EmbeddingSpace): PgVectorStoreConfig {
    const config = spaceStoreConfig(this.#host.given, this.#host.config, space)
    return this.#host.replicas ? { ...config, replicas: this.#host.replicas } : config
  }

  /** Adds a space (a migration the owner runs): see {@link PgVectorStore.addSpace}. */
  async add(space: EmbeddingSpaceConfig, options: { runtimeRole?: string } = {}): Promise<EmbeddingSpace> {
    if (space === null || typeof space !== 'object') throw new InvalidArgumentError('addSpace needs { name, dimensions }')
    const name = assertSpaceName(space.name, false)
    if (space.model !== undefined && typeof space.model !== 'string') throw new InvalidArgumentError('addSpace: model must be a string')
    const { config, db } = this.#host
    if (config.distributed !== false && config.distributed !== 'auto') {
      throw new InvalidArgumentError(
        'addSpace: embedding spaces are not available on a Citus-distributed store yet (their guard is a row trigger)',
      )
    }
    if (!config.migrate) {
      throw new MigrationRequiredError(
        `store:${config.qualified}`,
        `store.addSpace(...) on a store opened by the table's owner`,
        `adding the embedding space "${name}" is DDL and this store opens with migrate: false`,
      )
    }
    const siblingConfig = this.#siblingConfig(space)
    // The space's own store first (its table, indexes, tuning, policies), then the bookkeeping and the guards.
    const sibling = await this.#host.open(this.#host.raw, { ...siblingConfig, migrate: true })
    const table = spaceTableName(config, name)
    const tables = spaceTables(config)
    await db.transaction(async (trx) => {
      await sql.raw(advisoryXactLock(int32Hash('pgscale.spaces'), [int32Hash(config.qualified)])).execute(trx)
      for (const s of spaceCatalogDdl(config)) await sql.raw(s).execute(trx)
      const { rows } = await sql<{ dimensions: number }>`
        insert into ${sql.raw(tables.spaces)} (name, dimensions, distance, vector_type, model, table_name)
        values (${name}, ${sibling.config.dimensions}, ${sibling.config.distance}, ${sibling.config.vectorType}, ${space.model ?? null}, ${table})
        on conflict (name) do update set model = coalesce(excluded.model, ${sql.raw(tables.spaces)}.model)
        returning dimensions`.execute(trx)
      if (rows[0]?.dimensions !== sibling.config.dimensions) {
        throw new SchemaMismatchError(
          `embedding space "${name}" exists with ${rows[0]?.dimensions} dimensions, not ${sibling.config.dimensions}`,
        )
      }
      for (const s of spaceGuardTrigger(config, config.qualified, DEFAULT_SPACE)) await sql.raw(s).execute(trx)
      for (const s of spaceGuardTrigger(config, sibling.config.qualified, name)) await sql.raw(s).execute(trx)
      if (options.runtimeRole !== undefined) {
        await grantStore(trx, sibling.config, options.runtimeRole)
        for (const s of spaceCatalogGrants(config, quoteQualified(undefined, options.runtimeRole))) await sql.raw(s).execute(trx)
      }
    })
    this.#stores.set(name, Promise.resolve(sibling))
    return (await this.list()).find((s) => s.name === name)!
  }

  /** The tenant's state (a tenant never migrated: `default`, nothing under way). */
  async state(tenantId: string): Promise<TenantSpaceState> {
    const row = await this.#stateRow(assertId(tenantId, 'tenant id'))
    return toState(tenantId, row)
  }

  /**
   * The tenant's state row. Without `via`, the catalog is looked at first (a store that never added
   * a space has no state table); with `via` (a transaction of the spaces' own work, which runs only
   * once a space exists) nothing else is sent on another connection — PGlite has one.
   */
  async #stateRow(tenantId: string, via?: Pick<Database, 'executeQuery'>, lock = '', logged = false): Promise<StateRow | undefined> {
    if (via === undefined && !this.#catalog) {
      if ((await this.list()).length === 1) return undefined
      this.#catalog = true
    }
    const { rows } = await (via ?? this.#host.db).executeQuery<StateRow>(
      CompiledQuery.raw(
        `select tenant_id, active, target, previous, state, embedded::text, embed_calls::text, started_at, updated_at${logged ? ', changes_logged' : ''}
        from ${spaceTables(this.#host.config).tenants} where tenant_id = $1 ${lock}`,
        [tenantId],
      ),
    )
    return rows[0]
  }

  /** The tenant's active space and a handle on it: see {@link PgVectorStore.activeTenant}. */
  async activeTenant(tenantId: string): Promise<{ space: string; tenant: TenantStore; store: S }> {
    const { active } = await this.state(tenantId)
    const store = await this.store(active)
    return { space: active, tenant: store.forTenant(tenantId), store }
  }

  /** Both spaces' answers to the same questions: see {@link PgVectorStore.compareSpaces}. */
  async compare(tenantId: string, options: CompareSpacesOptions): Promise<SpaceComparison> {
    assertId(tenantId, 'tenant id')
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('compareSpaces needs { to, queries, embed }')
    const to = assertSpaceName(options.to)
    const { active } = await this.state(tenantId)
    if (active === to) throw new EmbeddingSpaceError(`tenant ${tenantId} already searches "${to}": compare it with another space`)
    const [current, next] = await Promise.all([this.store(active), this.store(to)])
    return compareTenantSpaces(current.forTenant(tenantId), next.forTenant(tenantId), active, to, options)
  }

  /** Fills `to` with the tenant's chunks: see {@link PgVectorStore.migrateTenant}. */
  async migrateTenant(tenantId: string, options: MigrateTenantOptions): Promise<MigrateTenantResult> {
    assertId(tenantId, 'tenant id')
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('migrateTenant needs { to, embed }')
    const to = assertSpaceName(options.to)
    if (typeof options.embed !== 'function')
      throw new InvalidArgumentError('migrateTenant: embed must be a function (texts) => Promise<number[][]>')
    const tune = tuneOption(options.tune)
    const target = await this.store(to)
    const { db, config } = this.#host
    const tables = spaceTables(config)
    const active = await this.#beginMigration(tenantId, to)
    const from = await this.store(active)
    const backfill = () =>
      runBackfill({
        db,
        tables,
        tenantId,
        from: from.config,
        to: target,
        space: to,
        options,
        createTenantIndex: (o) => target.createTenantIndex(tenantId, o),
        tune: tune && (() => tuneInSpace(this.#tuner(to, target), from, tenantId, tune)),
      })
    let result = await backfill()
    await this.#host.journal.committed([tenantId], db)
    if (!options.switch) return result
    // Writes keep arriving while the backfill runs: each pass embeds what came meanwhile, and the
    // switch happens once a pass leaves nothing (checked under the switch's lock).
    for (let attempt = 1; ; attempt++) {
      try {
        await this.switchTenant(tenantId, to, {
          embed: options.embed,
          maxEmbedUnderLock: options.batchSize ?? 256,
          allowUntuned: tune === undefined,
        })
        return { ...result, switched: true }
      } catch (err) {
        if (!(err instanceof EmbeddingSpaceError) || err.pending === 0 || attempt >= MAX_SWITCH_ATTEMPTS) throw err
      }
      const more = await backfill()
      result = {
        ...more,
        embedded: result.embedded + more.embedded,
        batches: result.batches + more.batches,
        deleted: result.deleted + more.deleted,
        indexBuilt: result.indexBuilt || more.indexBuilt,
        tuning: more.tuning && { ...more.tuning, tunedNow: more.tuning.tunedNow || result.tuning?.tunedNow === true },
      }
    }
  }

  /**
   * Starts (or resumes) a migration: the state row says where the tenant goes; the chunks already
   * in the target with their current content are the checkpoint. Resolves to the space it searches.
   */
  async #beginMigration(tenantId: string, to: string): Promise<string> {
    const tables = spaceTables(this.#host.config)
    // The row is locked first, so writes in flight (which hold it `FOR KEY SHARE` through the guard
    // and did not log their keys) commit before the backfill's first pass: every write after it is
    // logged. A migration begun (not resumed) where the store has the change log is logged from here.
    const logged = (await this.#hasChangeLog()) ? 'true' : undefined
    const { rows } = await this.#host.db.transaction(async (trx) => {
      await trx.executeQuery(CompiledQuery.raw(`select 1 from ${tables.tenants} where tenant_id = $1 for update`, [tenantId]))
      return trx.executeQuery<{ active: string; target: string | null }>(
        CompiledQuery.raw(
          `insert into ${tables.tenants} as s (tenant_id, target, state, started_at, updated_at${logged ? ', changes_logged' : ''})
           values ($1, $2, 'backfilling', now(), now()${logged ? ', true' : ''})
         on conflict (tenant_id) do update set
           target = excluded.target, state = 'backfilling', updated_at = now(),${
             logged ? '\n           changes_logged = case when s.target = excluded.target then s.changes_logged else true end,' : ''
           }
           started_at = case when s.target = excluded.target then s.started_at else now() end,
           embedded = case when s.target = excluded.target then s.embedded else 0 end,
           embed_calls = case when s.target = excluded.target then s.embed_calls else 0 end
         where s.active <> excluded.target and (s.target is null or s.target = excluded.target)
         returning active, target`,
          [tenantId, to],
        ),
      )
    })
    if (rows.length === 0) {
      const state = await this.state(tenantId)
      if (state.active === to) throw new EmbeddingSpaceError(`tenant ${tenantId} already searches "${to}"`)
      throw new EmbeddingSpaceError(
        `tenant ${tenantId} is migrating to "${state.target}": finish it (switchTenant) or cancelMigration first`,
      )
    }
    return rows[0]!.active
  }

  /** A space's store as the tuning of one tenant sees it. */
  #tuner(space: string, store: S): SpaceTuner & { space: string } {
    return {
      space,
      config: store.config,
      db: this.#host.db,
      tenantTuning: () => store.tenantTuning(),
      tune: (tenantId, options) => this.#host.tune(store, tenantId, options),
    }
  }

  /** How far the tenant's migration is: see {@link PgVectorStore.migrationStatus}. */
  async status(tenantId: string): Promise<MigrationStatus> {
    assertId(tenantId, 'tenant id')
    const row = await this.#stateRow(tenantId)
    const state = toState(tenantId, row)
    const from = await this.store(state.active)
    let total: number
    let embedded = 0
    if (state.target) {
      const to = await this.store(state.target)
      const { rows } = await this.#host.db.executeQuery<{ total: number; embedded: number }>(
        CompiledQuery.raw(spaceDiff(from.config, to.config).counts, [tenantId]),
      )
      total = rows[0]?.total ?? 0
      embedded = rows[0]?.embedded ?? 0
    } else {
      const { rows } = await this.#host.db.executeQuery<{ n: number }>(
        CompiledQuery.raw(`select count(*)::int as n from ${from.config.qualified} where tenant_id = $1`, [tenantId]),
      )
      total = rows[0]?.n ?? 0
      embedded = total
    }
    const since = Number(row?.embedded ?? 0)
    const seconds = row?.started_at ? (row.updated_at.getTime() - row.started_at.getTime()) / 1000 : 0
    const rate = since > 0 && seconds > 0 ? since / seconds : null
    const pending = total - embedded
    const space = state.target ?? state.active
    const tuning = await spaceTenantTuning(this.#tuner(space, await this.store(space)), space, tenantId)
    return {
      ...state,
      total,
      embedded,
      pending,
      embeddedSinceStart: since,
      embedCalls: Number(row?.embed_calls ?? 0),
      startedAt: row?.started_at ?? null,
      updatedAt: row?.updated_at ?? new Date(0),
      chunksPerSecond: rate,
      etaSeconds: rate ? pending / rate : null,
      tuning,
    }
  }

  /** Flips the tenant to `to` in one transaction: see {@link PgVectorStore.switchTenant}. */
  async switchTenant(tenantId: string, to?: string, options: SwitchTenantOptions = {}): Promise<TenantSpaceState> {
    assertId(tenantId, 'tenant id')
    if (to !== undefined) assertSpaceName(to)
    if (options.embed !== undefined && typeof options.embed !== 'function')
      throw new InvalidArgumentError('switchTenant: embed must be a function')
    const limit = assertIntegerIn(options.maxEmbedUnderLock ?? 256, 0, 10_000, 'switchTenant: maxEmbedUnderLock')
    const catchUp = options.embed ? { embed: options.embed, limit } : undefined
    const row = await this.#stateRow(tenantId)
    const target = to ?? row?.target
    // Before the lock (checked again under it): what the switch needs, and the chunks written since
    // the last backfill pass embedded while writes go on — the lock then waits only for those
    // written during this pass.
    if (row?.target && row.target === target) await this.#beforeSwitch(tenantId, row.active, row.target, options, catchUp)
    return this.#flip(
      tenantId,
      catchUp,
      (locked) => {
        if (!locked || !locked.target || locked.target !== target) {
          throw new EmbeddingSpaceError(
            `tenant ${tenantId} is not migrating${target ? ` to "${target}"` : ''}: store.migrateTenant(${JSON.stringify(tenantId)}, { to, embed }) first`,
          )
        }
        return { to: locked.target, state: 'switched' }
      },
      row,
    )
  }

  /**
   * The switch's work before its lock: a tenant with its own index in `to` and no tuning there that
   * holds is refused (unless `allowUntuned`); with `embed`, the last unlocked pass.
   */
  async #beforeSwitch(
    tenantId: string,
    active: string,
    to: string,
    options: SwitchTenantOptions,
    catchUp: { embed: EmbedTexts; limit: number } | undefined,
  ): Promise<void> {
    const [from, into] = await Promise.all([this.store(active), this.store(to)])
    const diff = spaceDiff(from.config, into.config)
    const logged = await this.#changeLogDiff(from.config, into.config)
    const tables = spaceTables(this.#host.config)
    const batch = { config: into.config, space: to, tables, diff }
    // The tuning check first (it reads the change log, which the last pass prunes), then that pass.
    const tuning = options.allowUntuned
      ? undefined
      : await switchTenantTuning(this.#tuner(to, into), to, tenantId, logged && tables.changes)
    await lastUnlockedPass(this.#host.db, batch, tenantId, catchUp?.embed, catchUp?.limit ?? 0, logged)
    if (tuning?.untuned) {
      throw new EmbeddingSpaceError(
        `tenant ${tenantId} has its own index in "${to}" and no tuning there for its ${tuning.chunks} chunks` +
          `${tuning.tuning ? ` (tuned at ${tuning.tuning.rowsAtTuning})` : ''}: its searches would run untuned — ` +
          `run store.migrateTenant(${JSON.stringify(tenantId)}, { to: '${to}', embed }) again (it tunes), or switch with { allowUntuned: true }`,
        { untuned: true },
      )
    }
  }

  /** Flips the tenant back to the space it searched before: see {@link PgVectorStore.rollbackTenant}. */
  async rollbackTenant(tenantId: string): Promise<TenantSpaceState> {
    assertId(tenantId, 'tenant id')
    return this.#flip(tenantId, undefined, (row) => {
      if (!row?.previous) throw new EmbeddingSpaceError(`tenant ${tenantId} has no previous space to roll back to`)
      if (row.target) throw new EmbeddingSpaceError(`tenant ${tenantId} is migrating to "${row.target}": cancelMigration first`)
      return { to: row.previous, state: 'rolled_back' }
    })
  }

  /**
   * The switch and the rollback: the tenant's state row locked `FOR UPDATE` (writes in flight,
   * which hold it `FOR KEY SHARE` through the guard, finish first; new ones wait), deletions and
   * metadata brought over, then — only if no chunk lacks the new space's vector of its current
   * text — the flip. Under the lock, in one transaction. Where the store has the change log, a
   * switch compares only the keys the guard logged since the migration began (the backfill's full
   * passes began after it), and a rollback only those logged since that switch; the flip empties
   * the log. A store whose bookkeeping predates the log, or a rollback of a switch made before it,
   * compares the tenant's rows whole.
   */
  async #flip(
    tenantId: string,
    catchUp: { embed: EmbedTexts; limit: number } | undefined,
    decide: (row: StateRow | undefined) => { to: string; state: TenantSpaceState['state'] },
    seen?: StateRow,
  ): Promise<TenantSpaceState> {
    const { db, config } = this.#host
    const tables = spaceTables(config)
    const maintenance = scopedHandle(db, { [SPACE_MAINTENANCE_SETTING]: 'on' })
    // The spaces the tenant's row names opened first (each store once per process), and the log
    // looked for: inside the transaction nothing goes to another connection.
    const before = seen ?? (await this.#stateRow(tenantId))
    const stores = new Map<string, S>()
    for (const name of [before?.active ?? DEFAULT_SPACE, before?.target, before?.previous])
      if (name && !stores.has(name)) stores.set(name, await this.store(name))
    const logging = await this.#hasChangeLog()
    const result = await maintenance.transaction(async (trx) => {
      const row = await this.#stateRow(tenantId, trx, 'for update', logging)
      const { to, state } = decide(row)
      const from = stores.get(row!.active)?.config
      const into = stores.get(to)?.config
      if (!from || !into) throw new EmbeddingSpaceError(`tenant ${tenantId}'s spaces changed while this switch began: try it again`)
      const whole = spaceDiff(from, into)
      const diff = logging && row!.changes_logged ? changeLogDiff(from, into, tables.changes) : whole
      // Deletions and metadata brought over, and the chunks still lacking their vector read, in one
      // statement. Under the lock nothing new arrives: when the catch-up can embed all of them
      // (at most its limit), nothing is left; otherwise the switch refuses, with their count.
      const limit = catchUp?.limit ?? 0
      const { rows: late } = await trx.executeQuery<PendingRow>(CompiledQuery.raw(diff.settle, [tenantId, limit + 1]))
      if (late.length > limit) {
        const { rows } = await trx.executeQuery<{ n: number }>(CompiledQuery.raw(diff.countPending, [tenantId]))
        const pending = rows[0]?.n ?? late.length
        throw new EmbeddingSpaceError(
          `tenant ${tenantId}: ${pending} chunk(s) of "${row!.active}" have no vector of their current text in "${to}" (written since the backfill): ` +
            `run store.migrateTenant(${JSON.stringify(tenantId)}, { to: '${to}', embed }) again — it embeds only those — then switch`,
          { pending },
        )
      }
      // The few chunks written since the last pass, embedded under the lock (writes wait meanwhile).
      const run = (text: string, params: unknown[]) => trx.executeQuery(CompiledQuery.raw(text, [tenantId, ...params]))
      if (late.length > 0) await embedAndWrite(run, whole.upsert, into, late, catchUp!.embed)
      // The flip; what the log held is in line now, and it logs for the rollback from here.
      const { rows: flipped } = await trx.executeQuery<StateRow>(
        CompiledQuery.raw(
          `with flipped as (update ${tables.tenants} set active = $2, previous = active, target = null, state = $3,
             switched_at = now(), updated_at = now()${logging ? ', changes_logged = true' : ''}
           where tenant_id = $1
           returning tenant_id, active, target, previous, state, embedded::text, embed_calls::text, started_at, updated_at)
           ${logging ? `, cleared as (${clearChangeLog(tables.changes)})` : ''}
           select * from flipped`,
          [tenantId, to, state],
        ),
      )
      return toState(tenantId, flipped[0])
    })
    await this.#host.journal.committed([tenantId], db)
    return result
  }

  /** Whether the guard logs the keys written while a tenant migrates (cached once seen: the log is never dropped while the store is open). */
  async #hasChangeLog(): Promise<boolean> {
    if (!this.#changeLog) this.#changeLog = await hasSpaceChangeLog(this.#host.db, this.#host.config)
    return this.#changeLog
  }

  /** The change-log statements between two spaces, when the store has the log. */
  async #changeLogDiff(from: ResolvedStoreConfig, into: ResolvedStoreConfig): Promise<ChangeLogDiff | undefined> {
    return (await this.#hasChangeLog()) ? changeLogDiff(from, into, spaceTables(this.#host.config).changes) : undefined
  }

  /** Stops a migration under way: see {@link PgVectorStore.cancelMigration}. */
  async cancelMigration(tenantId: string): Promise<TenantSpaceState> {
    assertId(tenantId, 'tenant id')
    const tables = spaceTables(this.#host.config)
    // In the same statement, the tenant's change log goes with the migration (a later one starts
    // from full passes; a write logged after this statement's snapshot is only looked at again).
    const clearLog = (await this.#hasChangeLog())
      ? `, cleared as (${clearChangeLog(tables.changes)} and exists (select 1 from cancelled))`
      : ''
    const { rows } = await this.#host.db.executeQuery<StateRow>(
      CompiledQuery.raw(
        `with cancelled as (update ${tables.tenants} set target = null, state = case when previous is null then 'active' else 'switched' end, updated_at = now()
           where tenant_id = $1 and target is not null
           returning tenant_id, active, target, previous, state, embedded::text, embed_calls::text, started_at, updated_at)${clearLog}
         select * from cancelled`,
        [tenantId],
      ),
    )
    return toState(tenantId, rows[0] ?? (await this.#stateRow(tenantId)))
  }

  /** Deletes the tenant's chunks in a space it neither searches nor fills: see {@link PgVectorStore.releaseTenantSpace}. */
  async releaseTenantSpace(tenantId: string, space: string): Promise<number> {
    assertId(tenantId, 'tenant id')
    assertSpaceName(space)
    const store = await this.store(space)
    const { config } = this.#host
    const maintenance = scopedHandle(this.#host.db, { [SPACE_MAINTENANCE_SETTING]: 'on' })
    const logging = await this.#hasChangeLog()
    const deleted = await maintenance.transaction(async (trx) => {
      const row = await this.#stateRow(tenantId, trx, 'for update')
      const active = row?.active ?? DEFAULT_SPACE
      if (active === space || row?.target === space) {
        throw new EmbeddingSpaceError(
          `tenant ${tenantId} ${active === space ? 'searches' : 'is migrating to'} "${space}": it cannot be released`,
        )
      }
      const { rows } = await trx.executeQuery<{ n: number }>(
        CompiledQuery.raw(
          `with gone as (delete from ${store.config.qualified} where tenant_id = $1 returning 1) select count(*)::int as n from gone`,
          [tenantId],
        ),
      )
      const { rows: released } = await trx.executeQuery(
        CompiledQuery.raw(
          `update ${spaceTables(config).tenants} set previous = null, updated_at = now() where tenant_id = $1 and previous = $2 returning 1`,
          [tenantId, space],
        ),
      )
      // Nothing to roll back to and no migration: the tenant's writes are logged no more, nor is what was.
      if (logging && released.length > 0 && !row?.target)
        await trx.executeQuery(CompiledQuery.raw(clearChangeLog(spaceTables(config).changes), [tenantId]))
      return rows[0]?.n ?? 0
    })
    await this.#host.journal.committed([tenantId], this.#host.db)
    return deleted
  }

  /** Drops a space no tenant uses: see {@link PgVectorStore.dropSpace}. */
  async dropSpace(space: string): Promise<void> {
    const name = assertSpaceName(space, false)
    const store = await this.store(name)
    const { db, config } = this.#host
    const tables = spaceTables(config)
    await db.transaction(async (trx) => {
      await sql.raw(advisoryXactLock(int32Hash('pgscale.spaces'), [int32Hash(config.qualified)])).execute(trx)
      const { rows } = await trx.executeQuery<{ tenant_id: string }>(
        CompiledQuery.raw(`select tenant_id from ${tables.tenants} where $1 in (active, target, previous) order by tenant_id limit 6`, [
          name,
        ]),
      )
      const { rows: left } = await trx.executeQuery<{ n: number }>(
        CompiledQuery.raw(`select count(*)::int as n from (select 1 from ${store.config.qualified} limit 1) x`, []),
      )
      if (rows.length > 0 || (left[0]?.n ?? 0) > 0) {
        const who =
          rows.length > 0
            ? `tenants ${rows
                .slice(0, 5)
                .map((r) => r.tenant_id)
                .join(', ')}${rows.length > 5 ? ', …' : ''} still use it`
            : 'it still holds chunks'
        throw new EmbeddingSpaceError(`embedding space "${name}" cannot be dropped: ${who} (switch them away, then releaseTenantSpace)`)
      }
      await dropStore(trx, store.config)
      await trx.executeQuery(CompiledQuery.raw(`delete from ${tables.spaces} where name = $1`, [name]))
    })
    this.#stores.delete(name)
    await store.close()
  }

  /** Closes the spaces' stores (their query samples flush). */
  async close(): Promise<void> {
    const stores = await Promise.allSettled([...this.#stores.values()])
    this.#stores.clear()
    for (const s of stores) if (s.status === 'fulfilled') await s.value.close()
  }
}

function toState(tenantId: string, row: StateRow | undefined): TenantSpaceState {
  return {
    tenantId,
    active: row?.active ?? DEFAULT_SPACE,
    target: row?.target ?? null,
    previous: row?.previous ?? null,
    state: row?.state ?? 'active',
  }
}
