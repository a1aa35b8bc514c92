import { sql, type Kysely, type Migration, type RawBuilder } from 'kysely'
import type { ReplicaSet } from '../replicas/index.js'
import { InvalidArgumentError } from '../errors.js'
import {
  drain,
  markDirty,
  read,
  readAcross,
  readAcrossQuery,
  readQuery,
  rebuild,
  refreshAt,
  refreshDirty,
  RollupContext,
  rollupMigrationSql,
  track,
  trackingMigration,
  typedErrors,
  untrack,
} from './buckets/index.js'
import type {
  DrainOptions,
  MarkDirtyOptions,
  MonthlyRollupConfig,
  ReadAcrossOptions,
  ReadOptions,
  RebuildOptions,
  RefreshAtOptions,
  RefreshDirtyOptions,
  RefreshDirtyResult,
  RollupMigrationOptions,
  RollupParts,
  RollupTable,
} from './config/index.js'
import {
  dirtyLogStats,
  distributeRollup,
  recordedRollups,
  rollupTable,
  sourceIndexFor,
  type DirtyLogStats,
  type GroupNameOf,
  type MonthlyRollupConfigOf,
  type ReadAcrossOptionsOf,
  type ReadOptionsOf,
  type RecordedRollup,
  type RollupAcrossRowOf,
  type RollupRowOf,
  type SourceIndex,
  type RollupTop,
} from './schema/index.js'
import { fleetHooks, fleetTable, refreshFleet, type RefreshFleetOptions, type RefreshFleetResult } from './fleet/index.js'

/**
 * A recompute-style monthly rollup: one row per tenant, local month and group, recomputed from the
 * source rows under an advisory lock — never `total = total + amount`, because events and jobs
 * arrive at least once. Months are local months in an IANA zone, half-open `[start, end)` in UTC,
 * so the source's `(tenant, at)` index serves each bucket.
 *
 * `T` is its target's type: on a table from {@link rollupTable} the configuration's `groupBy` and
 * `measures` are checked against the table's columns at compile time, and `read`/`readAcross`
 * rows are typed by them ({@link RollupRowOf}); on a loosely declared table (`RollupTable`) the
 * rows are {@link RollupRow}.
 *
 * ### Examples
 * ```ts
 * const rollup = new MonthlyRollup({
 *   source: 'expenses', target: expensesMonthly, at: 'paid_at', tenant: 'tenant_id',
 *   groupBy: ['category'], measures: { total: sql`sum(amount)`, count: sql`count(*)` },
 *   where: sql`status <> 'cancelled'`, zone: 'America/Mexico_City',
 * })
 * await rollup.refreshAt(db, { tenantId: 42, moment: expense.paidAt })
 * const rows = await rollup.read(db, { tenantId: 42, from: '2025-01', to: '2025-12' }) // { month: string; category: string | null; total: string; count: number }[]
 * ```
 */
export class MonthlyRollup<T extends RollupTable = RollupTable> {
  readonly #ctx: RollupContext
  /** The IANA zone of the buckets. */
  readonly zone: string

  /**
   * A rollup of `config.source` into `config.target`, validated here (identifiers, groups and
   * measures against the target, the zone); the server's checks run on first use.
   *
   * @param config - The rollup's definition; its `groupBy` and `measures` are checked against `config.target` at compile time.
   */
  constructor(config: MonthlyRollupConfigOf<T>) {
    this.#ctx = new RollupContext(config as MonthlyRollupConfig, fleetHooks)
    this.zone = this.#ctx.parts.zone
  }

  /**
   * Every rollup `track` recorded in this database, rebuilt from its record with its fleet level
   * (recorded, or for a record written before, the level the catalog marks for its table) and its
   * table's isolation (row-level security on: `rls`, so a drain as the runtime role runs as
   * fleet-wide work): how tools that do not have the app's code (`pgscale drain`, `pgscale doctor`)
   * find them.
   *
   * ### Examples
   * ```ts
   * for (const rollup of await MonthlyRollup.tracked(db)) await rollup.refreshDirty(db)
   * ```
   */
  static async tracked(db: Kysely<any>): Promise<MonthlyRollup[]> {
    return (await typedErrors(recordedRollups(db.withoutPlugins()))).map((record) => MonthlyRollup.fromRecord(record))
  }

  /**
   * A rollup rebuilt from its recorded definition, with its levels when the record has them (a
   * record the catalog completed, see {@link tracked}). A record that does not declare a valid
   * rollup is an `InvalidArgumentError`.
   *
   * ### Examples
   * ```ts
   * const rollup = MonthlyRollup.fromRecord(record) // record.fleet: { name: 'expenses_fleet', groupBy: ['category'] }
   * ```
   */
  static fromRecord(record: RecordedRollup): MonthlyRollup {
    const target = rollupTable(record.target.name, {
      groupBy: Object.fromEntries(record.target.groupBy.map((g) => [g.name, g.type])),
      measures: Object.fromEntries(record.target.measures.map((m) => [m.name, m.type])),
      tenantType: record.target.tenantType,
      ...(record.target.isolation ? { isolation: record.target.isolation } : {}),
    })
    const levels = (record.levels ?? (record.fleet ? [record.fleet] : [])).map((l) =>
      fleetTable(l.name, {
        of: target,
        groupBy: l.groupBy,
        ...(l.perTenant ? { perTenant: true } : {}),
        ...(l.deferred ? { deferred: true } : {}),
      }),
    )
    const fleet = levels.length > 1 ? levels : levels[0]
    return new MonthlyRollup({
      source: record.source,
      target,
      at: record.at,
      tenant: record.tenant,
      groupBy: record.groupBy,
      measures: Object.fromEntries(record.measures.map((m) => [m.name, sql.raw(m.sql)])),
      ...(record.where === null ? {} : { where: sql.raw(record.where) }),
      zone: record.zone,
      ...(fleet ? { fleet } : {}),
    })
  }

  /**
   * On a Citus coordinator: distributes the rollup's table by tenant, colocated with its source
   * (which must be distributed by the rollup's tenant column), so refresh, rebuild and read of a
   * tenant route to one shard. Idempotent; typed errors otherwise.
   *
   * ### Examples
   * ```ts
   * await sql`select create_distributed_table('expenses', 'tenant_id')`.execute(db)
   * await rollup.distribute(db)
   * ```
   */
  distribute(db: Kysely<any>): Promise<void> {
    return typedErrors(distributeRollup(db, this.#ctx.parts))
  }

  /** The validated parts the statements are built from (for plan tests and benches). */
  get parts(): RollupParts {
    return this.#ctx.parts
  }

  /**
   * Recomputes one bucket — the tenant's local month around `moment` — from its source rows and
   * replaces it (groups that vanished are deleted), under `pg_advisory_xact_lock` on (rollup,
   * tenant, month). Idempotent. In its own transaction (3 round trips), or in the caller's when
   * `db` is a transaction.
   *
   * ### Examples
   * ```ts
   * await rollup.refreshAt(db, { tenantId, moment: paidAt })
   * await db.transaction(async (trx) => { await insertExpense(trx); await rollup.refreshAt(trx, { tenantId, moment }) })
   * ```
   */
  refreshAt(db: Kysely<any>, options: RefreshAtOptions): Promise<void> {
    return typedErrors(refreshAt(this.#ctx, db, options))
  }

  /**
   * The covering index this rollup's refreshes want on the source: `(tenant, at) INCLUDE (the
   * groups, the measured columns, the where columns)`. With it (and the table vacuumed, so the
   * visibility map allows it) a bucket is aggregated by an index-only scan instead of a heap visit
   * per row: what makes a big tenant's refresh cheap. Returns the DDL; run it when it suits you
   * (`concurrently: true` for a live table).
   *
   * ### Examples
   * ```ts
   * const index = await rollup.sourceIndex(db, { concurrently: true })
   * await sql.raw(index.sql).execute(db) // create index concurrently if not exists … include (category, amount, status)
   * ```
   */
  async sourceIndex(db: Kysely<any>, options: { concurrently?: boolean } = {}): Promise<SourceIndex> {
    if (
      options === null ||
      typeof options !== 'object' ||
      (options.concurrently !== undefined && typeof options.concurrently !== 'boolean')
    )
      throw new InvalidArgumentError('sourceIndex: options must be { concurrently?: boolean }')
    const plain = db.withoutPlugins()
    await typedErrors(this.#ctx.validate(plain))
    return typedErrors(sourceIndexFor(plain, this.#ctx.parts, options))
  }

  /**
   * Heals every month from `since` to `until` (local months, inclusive) in set-based SQL: one
   * statement of per-month range scans, under the same locks as `refreshAt`. Equals a from-scratch
   * aggregate of the range.
   *
   * ### Examples
   * ```ts
   * await rollup.rebuild(db, { tenantId, since: '2024-01-01', until: new Date() })
   * ```
   */
  rebuild(db: Kysely<any>, options: RebuildOptions): Promise<{ months: number }> {
    return typedErrors(rebuild(this.#ctx, db, options))
  }

  /**
   * Makes every write to the source mark its buckets dirty, in the writer's own transaction, so
   * {@link refreshDirty} can heal them whoever wrote: INSERT and COPY, UPDATE (the old and the new
   * bucket of a row that moves month or tenant), DELETE, TRUNCATE (every bucket the rollup holds).
   * Statement-level triggers with transition tables on the source (on a partitioned source, on the
   * parent) append to a log beside the rollup table (`<target>_dirty`): no key, so writers of the
   * same bucket never wait on each other, and a rolled-back write leaves nothing. Rows the rollup's
   * `where` leaves out are marked too. Idempotent; two at once take turns. Writes made before
   * tracking are not in the log: `rebuild` once after the first `track`. The trigger function runs as
   * its owner (`security definer`): writers need no right on the log. `track` runs as the source's
   * owner (it creates triggers); once tracked, a `track` of the same definition only reads the
   * catalog, so any role may call it — another role asking for DDL gets a `PrivilegeError` before
   * anything changes. The definition is recorded for `MonthlyRollup.tracked`. A source Citus
   * distributes is refused (`SchemaMismatchError`: Citus runs no triggers on
   * distributed tables).
   *
   * ### Examples
   * ```ts
   * await rollup.track(db)
   * await sql`update expenses set paid_at = paid_at - interval '40 days' where id = 7`.execute(db) // marks both months
   * await rollup.refreshDirty(db) // { buckets: 2, remaining: 0 }
   * ```
   */
  track(db: Kysely<any>): Promise<void> {
    return typedErrors(track(this.#ctx, db))
  }

  /**
   * Stops tracking: the triggers and their function are dropped; the log keeps the keys still
   * pending (a later `refreshDirty` drains them). Writes made while untracked are not marked.
   *
   * ### Examples
   * ```ts
   * await rollup.untrack(db)
   * ```
   */
  untrack(db: Kysely<any>): Promise<void> {
    return typedErrors(untrack(this.#ctx, db))
  }

  /**
   * {@link track} as a Kysely migration for the app's deploy step (`down` untracks); with
   * `runtimeRole`, that role is granted what writers and drainers need on the dirty-key log.
   *
   * ### Examples
   * ```ts
   * const migrations = { '0004-track-expenses': rollup.trackingMigration({ runtimeRole: 'app' }) }
   * ```
   */
  trackingMigration(options: RollupMigrationOptions = {}): Migration {
    return trackingMigration(this.#ctx, options)
  }

  /**
   * The rollup's table and (unless `track: false`) its tracking as one transaction of plain SQL,
   * with the runtime role's grants: what `pgscale migrate --print` writes. Reads the source's `at`
   * column type from `db` (no DDL).
   *
   * ### Examples
   * ```ts
   * await writeFile('V8__expenses_monthly.sql', await rollup.migrationSql(db, { runtimeRole: 'app' }))
   * ```
   */
  migrationSql(db: Kysely<any>, options: RollupMigrationOptions & { track?: boolean } = {}): Promise<string> {
    return typedErrors(rollupMigrationSql(this.#ctx, db, options))
  }

  /**
   * Heals the buckets tracked writes marked dirty: claims up to `limit` log rows (rows another
   * drainer holds are skipped), refreshes each claimed bucket from the source under its bucket lock
   * (one set-based statement per tenant, locks in tenant and month order), and removes what it
   * claimed — all in one transaction, so a drainer that dies leaves its keys to the next, and a key
   * marked after its refresh read the source stays in the log. Safe with several drainers.
   *
   * ### Examples
   * ```ts
   * let { remaining } = await rollup.refreshDirty(db, { limit: 500 })
   * ```
   */
  refreshDirty(db: Kysely<any>, options: RefreshDirtyOptions = {}): Promise<RefreshDirtyResult> {
    return typedErrors(refreshDirty(this.#ctx, db, options))
  }

  /**
   * Marks one tenant's buckets holding `at` dirty, in the writer's own transaction: for writes the
   * triggers do not see (a load with `session_replication_role = replica`, a logical-replication
   * apply). `refreshDirty` and `read({ fresh })` then treat them like any tracked write. One
   * statement (on Citus routed to the tenant's shard); the rollup must be tracked.
   *
   * ### Examples
   * ```ts
   * await db.transaction().execute(async (trx) => {
   *   await trx.insertInto('expenses').values(rows).execute() // with triggers off for this load
   *   await rollup.markDirty(trx, { tenantId: 42, at: rows.map((r) => r.paid_at) })
   * })
   * ```
   */
  markDirty(db: Kysely<any>, options: MarkDirtyOptions): Promise<{ months: number }> {
    return typedErrors(markDirty(this.#ctx, db, options))
  }

  /**
   * Brings the rollup's deferred fleet levels (`fleetTable(…, { deferred: true })`) up to date: up
   * to `limit` months its writes marked pending (oldest first) recomputed from the rollup table, in
   * one transaction under those months' exclusive fleet locks (writes of them wait; a month marked
   * after the claim stays pending). `readAcross` is exact before and after; this makes its reads of
   * those months come from the level again. The `drain` loop runs it whenever the log is empty;
   * without tracking, call it from a worker. `{ months: 0, remaining: 0 }` without a deferred level.
   *
   * ### Examples
   * ```ts
   * const { months, remaining } = await rollup.refreshFleet(db)
   * setInterval(() => rollup.refreshFleet(db).catch(report), 5_000) // a worker without tracking
   * ```
   */
  refreshFleet(db: Kysely<any>, options: RefreshFleetOptions = {}): Promise<RefreshFleetResult> {
    const level = this.#ctx.fleet?.level
    return typedErrors(level ? level.refreshDeferred(this.#ctx, db, options) : refreshFleet(this.#ctx, [], 0, db, options))
  }

  /**
   * A drain loop for a worker process: {@link refreshDirty} until the log is empty, then waits
   * `intervalMs` and looks again, until `signal` aborts. Resolves to the buckets it refreshed.
   *
   * ### Examples
   * ```ts
   * const stop = new AbortController()
   * const drained = rollup.drain(db, { intervalMs: 500, signal: stop.signal })
   * // … on shutdown:
   * stop.abort(); await drained
   * ```
   */
  drain(db: Kysely<any>, options: DrainOptions = {}): Promise<{ buckets: number }> {
    return typedErrors(drain(this.#ctx, db, options))
  }

  /**
   * What a dashboard reads: the tenant's rows from month `from` to month `to`, as
   * `{ month: 'YYYY-MM', ...groups, ...measures }`, ordered by month and groups. With `groupBy`,
   * only those group columns are kept and measures are combined over the rest (sum and count by
   * sum, min by min, max by max).
   *
   * ### Examples
   * ```ts
   * const byCategory = await rollup.read(db, { tenantId, from: '2025-01', to: '2025-12' })
   * const totals = await rollup.read(db, { tenantId, from: '2025-01', to: '2025-12', groupBy: [] })
   * const now = await rollup.read(db, { tenantId, from: '2025-01', to: '2025-12', fresh: true }) // tracked writes not drained yet included
   * const near = await rollup.read(replicas, { tenantId, from: '2025-01', to: '2025-12', consistencyToken }) // a replica that has replayed the token
   * ```
   */
  read<const K extends string = GroupNameOf<T>>(db: Kysely<any> | ReplicaSet, options: ReadOptionsOf<T, K>): Promise<RollupRowOf<T, K>[]> {
    return typedErrors(read(this.#ctx, db, options as ReadOptions)) as Promise<RollupRowOf<T, K>[]>
  }

  /**
   * An admin view across tenants — "revenue by month for all tenants", "the 20 tenants that spent
   * most this quarter", "distinct users across the fleet" — from the rollup instead of the source:
   * every tenant's buckets (or `tenants`'), the measures combined across tenants by their rules (sums
   * and counts add, min/max, `hll` sketches unite — never add —, `tdigest`s merge; other measures are
   * refused), per tenant with `perTenant`, or the top `n` tenants by a measure (`top`), per month or
   * over the range (`combineMonths`), `fresh` as `read`. Served by the rollup table's month index,
   * or by a declared level (`fleet`): the level without the tenant when the view needs no tenant
   * detail, a per-tenant level when it keeps no group that level drops. An admin read: never the
   * tenant-scoped path; under row-level security it runs as fleet-wide work. Through a `ReplicaSet`
   * it reads a replica that has replayed every write of this rollup made in this process (else the
   * primary; `fresh` reads the primary).
   *
   * ### Examples
   * ```ts
   * const byMonth = await rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: [] })
   * const top20 = await rollup.readAcross(db, { from: '2025-10', to: '2025-12', combineMonths: true, groupBy: [], top: { by: 'total', n: 20 } })
   * const fleetNow = await rollup.readAcross(replicas, { from: '2025-01', to: '2025-12', groupBy: [] }) // sees this process's refreshes
   * ```
   */
  readAcross<const K extends string = GroupNameOf<T>, P extends boolean = false, const R extends RollupTop | undefined = undefined>(
    db: Kysely<any> | ReplicaSet,
    options: ReadAcrossOptionsOf<T, K, P, R>,
  ): Promise<RollupAcrossRowOf<T, K, P, R>[]> {
    return typedErrors(readAcross(this.#ctx, db, options as ReadAcrossOptions)) as Promise<RollupAcrossRowOf<T, K, P, R>[]>
  }

  /**
   * The dirty-key log's backlog: rows waiting (counted up to 100,000; `capped` beyond) and when the
   * oldest was marked — what `pgscale doctor` alerts on. Reads only; cheap whatever the backlog.
   *
   * ### Examples
   * ```ts
   * const { rows, oldestMarkedAt } = await rollup.dirtyStats(db)
   * ```
   */
  dirtyStats(db: Kysely<any>): Promise<DirtyLogStats> {
    return typedErrors(dirtyLogStats(db.withoutPlugins(), this.#ctx.parts))
  }

  /** The statement {@link readAcross} runs, without running it (plan checks). */
  readAcrossQuery<const K extends string = GroupNameOf<T>, P extends boolean = false, const R extends RollupTop | undefined = undefined>(
    _db: Kysely<any>,
    options: ReadAcrossOptionsOf<T, K, P, R>,
  ): RawBuilder<RollupAcrossRowOf<T, K, P, R>> {
    return readAcrossQuery(this.#ctx, options as ReadAcrossOptions) as RawBuilder<RollupAcrossRowOf<T, K, P, R>>
  }

  /**
   * The statement {@link read} runs, without running it: for plan checks and logging.
   *
   * ### Examples
   * ```ts
   * const plan = await explain(db, rollup.readQuery(db, { tenantId, from: '2025-01', to: '2025-12' }))
   * ```
   */
  readQuery<const K extends string = GroupNameOf<T>>(_db: Kysely<any>, options: ReadOptionsOf<T, K>): RawBuilder<RollupRowOf<T, K>> {
    return readQuery(this.#ctx, options as ReadOptions) as RawBuilder<RollupRowOf<T, K>>
  }
}
