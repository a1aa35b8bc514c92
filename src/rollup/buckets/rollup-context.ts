import { CompiledQuery, type Kysely, type RawBuilder } from 'kysely'
import { Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import { ALL_TENANTS_SETTING, FLEET_WRITE_SETTING, TENANT_SETTING } from '../../db/security/row-security.js'
import { scopedHandle } from '../../db/security/scoped-handle.js'
import { advisoryXactLock, int32Hash } from '../../sql/advisory-lock.js'
import { statementTemplate } from '../../sql/statement-template.js'
import { resolveRollupConfig, type AtKind, type MonthlyRollupConfig, type RollupParts } from '../config/index.js'
import { checkRollupOnServer, logPlacement, type LogPlacement } from '../schema/index.js'
import { rebuildStatement, refreshStatement } from '../sql/index.js'
import { ReplicaSet, WriteJournal, type TenantKey } from '../../replicas/index.js'

/** The refresh and rebuild statements for one kind of `at` column, compiled once each. */
export interface BucketStatements {
  refresh: (values: { tenant: unknown; month: unknown }) => CompiledQuery
  rebuild: (values: { tenant: unknown; months: unknown }) => CompiledQuery
  /** A large drain's rebuild: without the delta-kept levels' parts (they are recomputed once after it); absent without such a level. */
  bulkRebuild?: (values: { tenant: unknown; months: unknown }) => CompiledQuery
}

/**
 * What a rollup's fleet level (src/rollup/fleet, installed by the facade) adds to the bucket
 * operations. `validate` runs after the rollup's own server checks, declared level or not (a rollup
 * that declares none refuses to write a rollup table that has one on the server).
 */
export interface FleetHooks {
  validate(db: Kysely<any>): Promise<void>
  /** The declared level's maintenance; absent when the rollup declares none. */
  level?: FleetMaintenance
}

/** How refreshes keep a rollup's levels: locks first, tenant writes (with the levels' parts folded in), then `after`. */
export interface FleetMaintenance {
  /** `SELECT pg_advisory_xact_lock(…)` on each month's fleet buckets, in month order: taken before any bucket lock (none for per-tenant levels only). */
  lockMonths(months: readonly string[]): string[]
  /** The refresh statement to run instead of the tenant-only one (the levels' parts folded in), when a level is written by it. */
  refresh?: (parts: RollupParts, tenant: unknown, month: unknown) => RawBuilder<unknown>
  /** The rebuild statement likewise. */
  rebuild?: (parts: RollupParts, tenant: unknown, months: unknown) => RawBuilder<unknown>
  /** What runs after the tenant writes of `months`, in their transaction (bound values: inlinable). */
  after(months: readonly string[]): CompiledQuery[]
  /**
   * A large drain's way, when a level is kept by deltas: its rebuild statement without the levels'
   * parts, and after it every level without the tenant recomputed for the months (one aggregate of
   * the rollup table's rows of those months instead of one upsert of the same fleet rows per
   * tenant) and every per-tenant level for the claimed buckets (`keys`); `rows(months)` counts
   * those rows (from the fleet level), to choose.
   */
  bulk?: {
    rebuild?: (parts: RollupParts, tenant: unknown, months: unknown) => RawBuilder<unknown>
    after(months: readonly string[], keys: ReadonlyArray<{ tenantId: string | number; month: string }>): CompiledQuery[]
    rows(months: readonly string[]): CompiledQuery
  }
  /**
   * Recomputes the pending months of the rollup's deferred levels (`fleetTable(…, { deferred: true })`),
   * as fleet-wide work: what `rollup.refreshFleet` and the drain loop run; `{ months: 0 }` without one.
   */
  refreshDeferred(
    ctx: RollupContext,
    db: Kysely<any>,
    options?: { limit?: number },
  ): Promise<{ months: number; buckets: number; remaining: number }>
  /** Whether the rollup declares a deferred level. */
  deferred: boolean
  /** The level's table (or, for a deferred level, the statement's source) that answers a `readAcross` view, else undefined. */
  across(view: { keep: readonly string[]; perTenant: boolean; tenants: boolean; fresh: boolean }): string | undefined
  /** Refuses, typed, when the fleet table is missing (checked once); what a read from it awaits. */
  ready(db: Kysely<any>): Promise<void>
  /** The level as plain SQL for the rollup's migration script: its statements (DDL, fill) and the runtime role's grants. */
  migrationSql(runtimeRole: string | undefined): { statements: string[]; grants: string[] }
}

/**
 * What every operation of one rollup shares: its validated parts, what the server said about them
 * (checked once, the first time it succeeds), its statements compiled per `at` column kind, its
 * bucket locks, and how it writes (in the caller's transaction, or its own).
 *
 * ### Examples
 * ```ts
 * const ctx = new RollupContext(config)
 * const { refresh } = ctx.statementsFor(await ctx.validate(db))
 * ```
 */
export class RollupContext {
  readonly parts: RollupParts
  readonly lockClass: number
  #validated: Promise<AtKind> | undefined
  /** The `at` column's kind once the server said it (what a fresh read's month bounds need). */
  atKind: AtKind | undefined
  #fragmentsInlinable: boolean | undefined
  #placement: Promise<LogPlacement> | undefined
  readonly #statements = new Map<AtKind, BucketStatements>()
  /** The replica set of the rollup's configuration, if any (its writes are noted there). */
  readonly #replicas: ReplicaSet | undefined
  /** The fleet level's hooks (src/rollup/fleet), when the facade installed them. */
  readonly fleet: FleetHooks | undefined

  constructor(config: MonthlyRollupConfig, fleet?: (parts: RollupParts) => FleetHooks) {
    this.parts = resolveRollupConfig(config)
    this.fleet = fleet?.(this.parts)
    this.lockClass = int32Hash(`pgscale.rollup:${this.parts.target.qualified}`)
    const replicas = config.replicas
    if (replicas !== undefined && !(replicas instanceof ReplicaSet))
      throw new InvalidArgumentError('MonthlyRollup: replicas must be a ReplicaSet (new ReplicaSet(primary, [standbys]))')
    this.#replicas = replicas
  }

  /**
   * After a write of `tenants`' buckets or dirty keys through `db` (the handle the caller gave)
   * committed — or joined the caller's transaction —: the write journal records it (the rollup's
   * replicas and the sets made with `db` as their primary note the tenants' positions).
   */
  async wrote(db: Kysely<any>, tenants: Iterable<TenantKey>): Promise<void> {
    await WriteJournal.of(db, this.#replicas).committed([...tenants, this.acrossKey], db)
  }

  /**
   * The key every write of this rollup is also noted under in the write journal: what a read
   * across tenants (`readAcross` through a `ReplicaSet`) must see. It starts with a NUL, which no
   * tenant id stored in PostgreSQL can hold.
   */
  get acrossKey(): string {
    return `\u0000pgscale.rollup:${this.parts.target.qualified}`
  }

  /** The refresh and rebuild statements for the `at` column's type, compiled once each. */
  statementsFor(atKind: AtKind): BucketStatements {
    let statements = this.#statements.get(atKind)
    if (!statements) {
      const parts = { ...this.parts, atKind }
      const level = this.fleet?.level
      const refresh = level?.refresh ?? refreshStatement
      const rebuild = level?.rebuild ?? rebuildStatement
      const bulkRebuild = level?.bulk && (level.bulk.rebuild ?? rebuildStatement)
      statements = {
        refresh: statementTemplate(['tenant', 'month'], (v) => refresh(parts, v.tenant, v.month)),
        rebuild: statementTemplate(['tenant', 'months'], (v) => rebuild(parts, v.tenant, v.months)),
        ...(bulkRebuild ? { bulkRebuild: statementTemplate(['tenant', 'months'], (v) => bulkRebuild(parts, v.tenant, v.months)) } : {}),
      }
      this.#statements.set(atKind, statements)
    }
    return statements
  }

  /** Checks once (the first time it succeeds) what only the server can; resolves to the `at` column's kind. */
  validate(db: Kysely<any>): Promise<AtKind> {
    if (!this.#validated) {
      const done = checkRollupOnServer(db, this.parts).then(async (kind) => {
        await this.fleet?.validate(db)
        return (this.atKind = kind)
      })
      this.#validated = done
      done.catch(() => {
        if (this.#validated === done) this.#validated = undefined
      })
    }
    return this.#validated
  }

  /**
   * Where the dirty-key log lives (`local`, or distributed with its source on Citus), read once the
   * first time it succeeds; `fresh` reads it again (what `track` and `untrack` do) and keeps that.
   */
  placement(db: Kysely<any>, options: { fresh?: boolean } = {}): Promise<LogPlacement> {
    if (!this.#placement || options.fresh) {
      const found = logPlacement(db, this.parts)
      this.#placement = found
      found.catch(() => {
        if (this.#placement === found) this.#placement = undefined
      })
    }
    return this.#placement
  }

  /**
   * Whether a refresh can be sent with its values inlined: the app's fragments (measures, where)
   * carry no parameters and no `$` of their own, so every `$n` in the statement is one of pgscale's
   * placeholders (tenant and month, a string or a number). Checked once.
   */
  inlinable(db: Kysely<any>): boolean {
    this.#fragmentsInlinable ??= [...this.parts.measures.map((m) => m.expression), ...(this.parts.where ? [this.parts.where] : [])].every(
      (fragment) => {
        const compiled = fragment.compile(db)
        return compiled.parameters.length === 0 && !compiled.sql.includes('$')
      },
    )
    return this.#fragmentsInlinable
  }

  /**
   * `db` as the rollup's statements of one tenant (or, without one, its fleet-wide work: drains)
   * run it under row-level security (`isolation: 'rls'` on the rollup table); `db` itself otherwise.
   * A tenant's `write` (refresh, rebuild, a tenant's drain) of a rollup with a fleet level also
   * carries `pgscale.fleet_write`: its statement adds the tenant's delta to the fleet table.
   */
  scoped<K extends Kysely<any>>(db: K, tenantId?: string | number, options: { write?: boolean } = {}): K {
    if (this.parts.target.isolation !== 'rls') return db
    if (tenantId === undefined) return scopedHandle(db, { [ALL_TENANTS_SETTING]: 'on' })
    const fleet: Record<string, string> = options.write && this.fleet?.level ? { [FLEET_WRITE_SETTING]: 'on' } : {}
    return scopedHandle(db, { [TENANT_SETTING]: String(tenantId), ...fleet })
  }

  /** `SELECT pg_advisory_xact_lock(...)` on each month, in month order (no deadlocks between ranges). */
  lockStatement(tenantId: string | number, months: readonly string[]): string {
    return advisoryXactLock(
      this.lockClass,
      months.map((m) => int32Hash(`${String(tenantId)}:${m}`)),
    )
  }

  /**
   * The fleet level's part of a write of `months`: its lock (before any bucket lock) and what runs
   * after the tenant statements; nothing without a fleet level.
   */
  fleetWrite(
    months: readonly string[],
    options: { bulk?: ReadonlyArray<{ tenantId: string | number; month: string }> } = {},
  ): { locks: string[]; after: CompiledQuery[] } {
    const level = this.fleet?.level
    if (!level || months.length === 0) return { locks: [], after: [] }
    const sorted = [...new Set(months)].sort()
    const after = options.bulk && level.bulk ? level.bulk.after(sorted, options.bulk) : level.after(sorted)
    return { locks: this.fleetLocks(sorted), after }
  }

  /** The fleet level's locks on `months` (before any bucket lock), without compiling what runs after: a drain's first step. */
  fleetLocks(months: readonly string[]): string[] {
    const level = this.fleet?.level
    return level && months.length ? level.lockMonths([...new Set(months)].sort()) : []
  }

  /** Runs `prelude`, `statement`, then `after` in the caller's transaction, or in one of its own. */
  async write(db: Kysely<any>, prelude: string[], statement: CompiledQuery, after: readonly CompiledQuery[] = []): Promise<void> {
    if (db.isTransaction) {
      for (const text of prelude) await db.executeQuery(CompiledQuery.raw(text))
      await db.executeQuery(statement)
      for (const query of after) await db.executeQuery(query)
    } else if (db instanceof Database) {
      await db.withTransactionConnection(
        async (conn) => {
          await conn.executeQuery(statement)
          for (const query of after) await conn.executeQuery(query)
        },
        { prelude },
      )
    } else {
      await db.transaction().execute(async (trx) => this.write(trx, prelude, statement, after))
    }
  }

  /** Runs DDL (then `after`) in one transaction under the rollup's DDL lock (two `track` at once take turns). */
  async ddl(db: Kysely<any>, statements: readonly string[], after?: (trx: Kysely<any>) => Promise<void>): Promise<void> {
    const run = async (trx: Kysely<any>) => {
      await trx.executeQuery(CompiledQuery.raw(advisoryXactLock(this.lockClass, [int32Hash('pgscale.rollup.track')])))
      for (const text of statements) await trx.executeQuery(CompiledQuery.raw(text))
      await after?.(trx)
    }
    await (db.isTransaction ? run(db) : db.transaction().execute(run))
  }
}
