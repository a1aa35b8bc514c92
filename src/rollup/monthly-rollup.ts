import { distributeRollup } from './rollup-distribution.js'
import { CompiledQuery, sql, type Kysely, type RawBuilder } from 'kysely'
import { Database } from '../db/database.js'
import { DatabaseError, InvalidArgumentError, InvalidTimeZoneError } from '../errors.js'
import { monthOf, monthsBetween } from './local-month.js'
import { advisoryXactLock, int32Hash } from '../sql/advisory-lock.js'
import { statementTemplate } from '../sql/statement-template.js'
import { rebuildStatement, refreshStatement, type AtKind, type RollupParts } from './rollup-sql.js'
import { assertIdentifier } from '../sql/identifier.js'
import { resolveRollupConfig, type MonthlyRollupConfig } from './rollup-config.js'
import { sourceIndexFor, type SourceIndex } from './source-index.js'
import { freshRollupRows } from './fresh-read.js'
import { assertPercentiles, measureOutput, type PercentileRequest } from './sketch-measures.js'
import { assertTrackable, claimDirtyKeys, pendingDirtyRows, trackingDdl, untrackingDdl } from './dirty-keys.js'

export type { MonthlyRollupConfig } from './rollup-config.js'
import { SQLSTATE } from '../sql/sqlstate.js'
import { inlineParameters, isInlineValue } from '../sql/literal.js'

/** Options of {@link MonthlyRollup.refreshAt}. */
export interface RefreshAtOptions {
  tenantId: string | number
  /** Any moment in the bucket's local month (a Date, ISO string or epoch ms). */
  moment: Date | string | number
}

/** Options of {@link MonthlyRollup.rebuild}. */
export interface RebuildOptions {
  tenantId: string | number
  /** First moment of the range (its local month is the first rebuilt). */
  since: Date | string | number
  /** Last moment of the range (its local month is the last rebuilt). */
  until: Date | string | number
}

/** Options of {@link MonthlyRollup.refreshDirty}. */
export interface RefreshDirtyOptions {
  /** At most this many log rows claimed (default 1000); their distinct keys are the buckets refreshed. */
  limit?: number
  /** Only this tenant's keys. */
  tenantId?: string | number
}

/** Options of {@link MonthlyRollup.drain}. */
export interface DrainOptions extends RefreshDirtyOptions {
  /** Wait this long when the log is empty before looking again (default 1000 ms). */
  intervalMs?: number
  /** Stops the loop (after the refresh in flight commits). */
  signal?: AbortSignal
}

/** Options of {@link MonthlyRollup.read}. */
export interface ReadOptions {
  tenantId: string | number
  /** First month (any moment in it, or `'YYYY-MM'`). */
  from: Date | string | number
  /** Last month, inclusive. */
  to: Date | string | number
  /** Keep only these group columns, re-aggregating the measures over the others (`[]`: one row per month). */
  groupBy?: readonly string[]
  /**
   * Months the dirty-key log holds (tracked writes not drained yet) are aggregated live from the
   * source instead of read from the rollup table, in the same statement: right after a committed
   * write, without waiting for a drain. Needs `track` to have run.
   */
  fresh?: boolean
  /** One row per group for the whole range (the measures combined over its months; `month` is `'YYYY-MM..YYYY-MM'`). */
  combineMonths?: boolean
  /** The percentiles to return for each `'tdigest'` measure (`approxPercentiles`): `{ latency: [0.5, 0.95] }`. */
  percentiles?: PercentileRequest
}

/** A row of {@link MonthlyRollup.read}: `{ month: '2025-03', category: 'travel', total: '1234.50', count: 7 }`. */
export type RollupRow = { month: string } & Record<string, unknown>

/**
 * A recompute-style monthly rollup: one row per tenant, local month and group, recomputed from the
 * source rows under an advisory lock — never `total = total + amount`, because events and jobs
 * arrive at least once. Months are local months in an IANA zone, half-open `[start, end)` in UTC,
 * so the source's `(tenant, at)` index serves each bucket.
 *
 * ### Examples
 * ```ts
 * const rollup = new MonthlyRollup({
 *   source: 'expenses', target: expensesMonthly, at: 'paid_at', tenant: 'tenant_id',
 *   groupBy: ['category'], measures: { total: sql`sum(amount)`, count: sql`count(*)` },
 *   where: sql`status <> 'cancelled'`, zone: 'America/Mexico_City',
 * })
 * await rollup.refreshAt(db, { tenantId: 42, moment: expense.paidAt })
 * ```
 */
export class MonthlyRollup {
  readonly #parts: RollupParts
  readonly #lockClass: number
  #validated: Promise<AtKind> | undefined
  /** The `at` column's kind once the server said it (what a fresh read's month bounds need). */
  #atKind: AtKind | undefined
  #fragmentsInlinable: boolean | undefined
  readonly #statements = new Map<
    AtKind,
    {
      refresh: (values: { tenant: unknown; month: unknown }) => CompiledQuery
      rebuild: (values: { tenant: unknown; months: unknown }) => CompiledQuery
    }
  >()
  /** The IANA zone of the buckets. */
  readonly zone: string

  constructor(config: MonthlyRollupConfig) {
    this.#parts = resolveRollupConfig(config)
    this.zone = this.#parts.zone
    const { target } = this.#parts
    this.#lockClass = int32Hash(`pgscale.rollup:${target.qualified}`)
  }

  /** The refresh and rebuild statements for the `at` column's type, compiled once each. */
  #statementsFor(atKind: AtKind) {
    let statements = this.#statements.get(atKind)
    if (!statements) {
      const parts = { ...this.#parts, atKind }
      statements = {
        refresh: statementTemplate(['tenant', 'month'], (v) => refreshStatement(parts, v.tenant, v.month)),
        rebuild: statementTemplate(['tenant', 'months'], (v) => rebuildStatement(parts, v.tenant, v.months)),
      }
      this.#statements.set(atKind, statements)
    }
    return statements
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
    return distributeRollup(db, this.#parts)
  }

  /** The validated parts the statements are built from (for plan tests and benches). */
  get parts(): RollupParts {
    return this.#parts
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
  async refreshAt(db: Kysely<any>, options: RefreshAtOptions): Promise<void> {
    const tenantId = assertTenantId(options?.tenantId)
    const month = monthOf(options.moment, this.zone)
    const plain = db.withoutPlugins()
    const { refresh } = this.#statementsFor(await this.#validate(plain))
    const lock = this.#lockStatement(tenantId, [month])
    const statement = refresh({ tenant: tenantId, month })
    // One round trip where the handle allows: the lock and the refresh as one message (one implicit
    // transaction; the refresh's snapshot is taken after the lock is granted, as in three trips).
    const values = statement.parameters
    if (
      plain instanceof Database &&
      plain.sendsOneMessage &&
      !plain.isTransaction &&
      this.#inlinable(plain) &&
      values.every(isInlineValue)
    ) {
      if ((await plain.sendAsOneMessage([lock, inlineParameters(statement.sql, values)])) !== undefined) return
    }
    await this.#write(plain, [lock], statement)
  }

  /**
   * Whether the refresh can be sent with its values inlined: the app's fragments (measures, where)
   * carry no parameters and no `$` of their own, so every `$n` in the statement is one of pgscale's
   * placeholders (tenant and month, a string or a number). Checked once.
   */
  #inlinable(db: Kysely<any>): boolean {
    this.#fragmentsInlinable ??= [
      ...this.#parts.measures.map((m) => m.expression),
      ...(this.#parts.where ? [this.#parts.where] : []),
    ].every((fragment) => {
      const compiled = fragment.compile(db)
      return compiled.parameters.length === 0 && !compiled.sql.includes('$')
    })
    return this.#fragmentsInlinable
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
    const plain = db.withoutPlugins()
    await this.#validate(plain)
    return sourceIndexFor(plain, this.#parts, options)
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
  async rebuild(db: Kysely<any>, options: RebuildOptions): Promise<{ months: number }> {
    const tenantId = assertTenantId(options?.tenantId)
    const first = monthOf(options.since, this.zone, 'since')
    const last = monthOf(options.until, this.zone, 'until')
    if (first > last) throw new InvalidArgumentError(`rebuild: since (${first.slice(0, 7)}) is after until (${last.slice(0, 7)})`)
    const months = monthsBetween(first, last)
    if (months.length > 1200) throw new InvalidArgumentError('rebuild: the range spans more than 100 years')
    const plain = db.withoutPlugins()
    const { rebuild } = this.#statementsFor(await this.#validate(plain))
    // JIT off: the planner overestimates the per-month scans and compiling costs more than it saves.
    await this.#write(plain, [`SET LOCAL jit = off`, this.#lockStatement(tenantId, months)], rebuild({ tenant: tenantId, months }))
    return { months: months.length }
  }

  /**
   * Makes every write to the source mark its buckets dirty, in the writer's own transaction, so
   * {@link refreshDirty} can heal them whoever wrote: INSERT and COPY, UPDATE (the old and the new
   * bucket of a row that moves month or tenant), DELETE, TRUNCATE (every bucket the rollup holds).
   * Statement-level triggers with transition tables on the source (on a partitioned source, on the
   * parent) append to a log beside the rollup table (`<target>_dirty`): no key, so writers of the
   * same bucket never wait on each other, and a rolled-back write leaves nothing. Rows the rollup's
   * `where` leaves out are marked too. Idempotent; two at once take turns. Writes made before
   * tracking are not in the log: `rebuild` once after the first `track`. Writers need INSERT on the
   * log. A source Citus distributes is refused (`SchemaMismatchError`: Citus runs no triggers on
   * distributed tables).
   *
   * ### Examples
   * ```ts
   * await rollup.track(db)
   * await sql`update expenses set paid_at = paid_at - interval '40 days' where id = 7`.execute(db) // marks both months
   * await rollup.refreshDirty(db) // { buckets: 2, remaining: 0 }
   * ```
   */
  async track(db: Kysely<any>): Promise<void> {
    const plain = db.withoutPlugins()
    const atKind = await this.#validate(plain)
    await assertTrackable(plain, this.#parts)
    await this.#ddl(plain, trackingDdl({ ...this.#parts, atKind }))
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
  async untrack(db: Kysely<any>): Promise<void> {
    await this.#ddl(db.withoutPlugins(), untrackingDdl(this.#parts))
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
  async refreshDirty(db: Kysely<any>, options: RefreshDirtyOptions = {}): Promise<{ buckets: number; remaining: number }> {
    const limit = options.limit ?? 1000
    if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000)
      throw new InvalidArgumentError(`refreshDirty: limit must be an integer from 1 to 1000000, got ${String(options.limit)}`)
    const tenantId = options.tenantId === undefined ? undefined : assertTenantId(options.tenantId)
    const plain = db.withoutPlugins()
    const { rebuild } = this.#statementsFor(await this.#validate(plain))
    const run = async (trx: Kysely<any>) => {
      const keys = await claimDirtyKeys(trx, this.#parts, { limit, tenantId })
      const byTenant = new Map<string, { tenantId: string | number; months: string[] }>()
      for (const k of keys) {
        const group = byTenant.get(String(k.tenantId)) ?? { tenantId: k.tenantId, months: [] }
        group.months.push(k.month)
        byTenant.set(String(k.tenantId), group)
      }
      if (keys.length) await trx.executeQuery(CompiledQuery.raw('SET LOCAL jit = off'))
      for (const group of byTenant.values()) {
        await trx.executeQuery(CompiledQuery.raw(this.#lockStatement(group.tenantId, group.months)))
        await trx.executeQuery(rebuild({ tenant: group.tenantId, months: group.months }))
      }
      return { buckets: keys.length, remaining: await pendingDirtyRows(trx, this.#parts, tenantId) }
    }
    return plain.isTransaction ? run(plain) : plain.transaction().execute(run)
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
  async drain(db: Kysely<any>, options: DrainOptions = {}): Promise<{ buckets: number }> {
    const intervalMs = options.intervalMs ?? 1000
    if (!(intervalMs >= 0) || !Number.isFinite(intervalMs)) throw new InvalidArgumentError('drain: intervalMs must be a number ≥ 0')
    let buckets = 0
    while (!options.signal?.aborted) {
      const done = await this.refreshDirty(db, options)
      buckets += done.buckets
      // Nothing left, or nothing this drainer could claim (others hold the rest): wait before looking again.
      if (done.remaining === 0 || done.buckets === 0) await sleep(intervalMs, options.signal)
    }
    return { buckets }
  }

  /** Runs DDL in one transaction under the rollup's DDL lock (two `track` at once take turns). */
  async #ddl(db: Kysely<any>, statements: readonly string[]): Promise<void> {
    const run = async (trx: Kysely<any>) => {
      await trx.executeQuery(CompiledQuery.raw(advisoryXactLock(this.#lockClass, [int32Hash('pgscale.rollup.track')])))
      for (const text of statements) await trx.executeQuery(CompiledQuery.raw(text))
    }
    await (db.isTransaction ? run(db) : db.transaction().execute(run))
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
   * ```
   */
  async read(db: Kysely<any>, options: ReadOptions): Promise<RollupRow[]> {
    const plain = db.withoutPlugins()
    if (options?.fresh) await this.#validate(plain)
    return (await this.readQuery(plain, options).execute(plain)).rows
  }

  /**
   * The statement {@link read} runs, without running it: for plan checks and logging.
   *
   * ### Examples
   * ```ts
   * const plan = await explain(db, rollup.readQuery(db, { tenantId, from: '2025-01', to: '2025-12' }))
   * ```
   */
  readQuery(db: Kysely<any>, options: ReadOptions): RawBuilder<RollupRow> {
    const tenantId = assertTenantId(options?.tenantId)
    const from = this.#monthOf(options.from, 'from')
    const to = this.#monthOf(options.to, 'to')
    if (from > to) throw new InvalidArgumentError(`read: from (${from.slice(0, 7)}) is after to (${to.slice(0, 7)})`)
    const { target } = this.#parts
    const allGroups = target.groupBy.map((g) => g.name)
    const keep = options.groupBy === undefined ? allGroups : options.groupBy.map((g) => assertIdentifier(g, 'read groupBy column'))
    const unknown = keep.filter((g) => !allGroups.includes(g))
    if (unknown.length) throw new InvalidArgumentError(`read: ${unknown.join(', ')} is not a group column of ${target.name}`)
    if (options.fresh !== undefined && typeof options.fresh !== 'boolean') throw new InvalidArgumentError('read: fresh must be a boolean')
    let t = sql.raw(target.qualified)
    if (options.fresh) {
      if (!this.#atKind)
        throw new InvalidArgumentError(
          "readQuery({ fresh: true }) needs the at column's type from the server: call read, refreshAt or track once first",
        )
      t = sql`${freshRollupRows({ ...this.#parts, atKind: this.#atKind }, tenantId, from, to)} as r`
    }
    if (options.combineMonths !== undefined && typeof options.combineMonths !== 'boolean')
      throw new InvalidArgumentError('read: combineMonths must be a boolean')
    const percentiles = assertPercentiles(options.percentiles, target.measures)
    const tenant = sql`${tenantId}::${sql.raw(target.tenantType)}`
    const keptCols = keep.map((g) => sql.raw(`"${g}"`))
    // Folding groups or months combines the measures: sums add, sketches unite.
    const combined = keep.length !== allGroups.length || options.combineMonths === true
    const measures = target.measures.flatMap((m) => {
      const out = measureOutput(
        { ...m, expression: this.#parts.measures.find((x) => x.name === m.name)!.expression },
        combined,
        percentiles,
      )
      return out ? [out] : []
    })
    const range = sql`tenant_id = ${tenant} and month >= ${from}::date and month <= ${to}::date`
    if (options.combineMonths) {
      const label = `${from.slice(0, 7)}..${to.slice(0, 7)}`
      return sql<RollupRow>`select ${sql.join([sql`${label}::text as month`, ...keptCols, ...measures])} from ${t}
        where ${range}
        ${keptCols.length ? sql`group by ${sql.join(keptCols)} order by ${sql.join(keptCols)}` : sql`having count(*) > 0`}`
    }
    const monthCol = sql`to_char(month, 'YYYY-MM') as month`
    const order = sql.join([sql`month`, ...keptCols])
    if (!combined)
      return sql<RollupRow>`select ${sql.join([monthCol, ...keptCols, ...measures])} from ${t} where ${range} order by ${order}`
    return sql<RollupRow>`select ${sql.join([monthCol, ...keptCols, ...measures])} from ${t} where ${range}
      group by ${order} order by ${order}`
  }

  #monthOf(value: unknown, what: string): string {
    return monthOf(value, this.zone, what)
  }

  /** `SELECT pg_advisory_xact_lock(...)` on each month, in month order (no deadlocks between ranges). */
  #lockStatement(tenantId: string | number, months: readonly string[]): string {
    return advisoryXactLock(
      this.#lockClass,
      months.map((m) => int32Hash(`${String(tenantId)}:${m}`)),
    )
  }

  async #write(db: Kysely<any>, prelude: string[], statement: CompiledQuery): Promise<void> {
    if (db.isTransaction) {
      for (const text of prelude) await db.executeQuery(CompiledQuery.raw(text))
      await db.executeQuery(statement)
    } else if (db instanceof Database) {
      await db.withTransactionConnection((conn) => conn.executeQuery(statement), { prelude })
    } else {
      await db.transaction().execute(async (trx) => this.#write(trx, prelude, statement))
    }
  }

  /**
   * Checks once (the first time it succeeds) what only the server can: the zone is known, the
   * columns exist, the `at` column's type, and every measure is an aggregate.
   */
  #validate(db: Kysely<any>): Promise<AtKind> {
    if (!this.#validated) {
      const done = this.#checkOnServer(db).then((kind) => (this.#atKind = kind))
      this.#validated = done
      done.catch(() => {
        if (this.#validated === done) this.#validated = undefined
      })
    }
    return this.#validated
  }

  async #checkOnServer(db: Kysely<any>): Promise<AtKind> {
    const p = this.#parts
    try {
      await sql`select now() at time zone ${p.zone}`.execute(db)
    } catch (err) {
      if (err instanceof DatabaseError && err.sqlState === SQLSTATE.invalidParameterValue)
        throw new InvalidTimeZoneError(p.zone, { cause: err })
      throw err
    }
    const cols = sql.join([sql.raw(`"${p.tenant}"`), sql.raw(`"${p.at}"`), ...p.groupBy.map((g) => sql.raw(`"${g}"`))])
    try {
      await sql`select ${cols} from ${sql.raw(p.source)} where ${p.where ? sql`(${p.where})` : sql`true`} limit 0`.execute(db)
    } catch (err) {
      throw new InvalidArgumentError(
        `MonthlyRollup: the source ${p.source} or one of its columns is not usable: ${(err as Error).message}`,
        { cause: err },
      )
    }
    for (const m of p.measures) {
      let rows: unknown[]
      try {
        rows = (await sql`select ${m.expression} as v from ${sql.raw(p.source)} where false`.execute(db)).rows
      } catch (err) {
        if (err instanceof DatabaseError && err.sqlState === SQLSTATE.groupingError) rows = []
        else
          throw new InvalidArgumentError(`MonthlyRollup: measure ${m.name} is not a valid expression: ${(err as Error).message}`, {
            cause: err,
          })
      }
      if (rows.length !== 1)
        throw new InvalidArgumentError(
          `MonthlyRollup: measure ${m.name} is not an aggregate expression (sum(...), count(*), max(...), ...)`,
        )
    }
    const { rows } = await sql<{ type: string | null }>`
      select format_type(a.atttypid, a.atttypmod) as type from pg_attribute a
      where a.attrelid = to_regclass(${p.source}) and a.attname = ${p.at} and not a.attisdropped`.execute(db)
    const kind = AT_KINDS[rows[0]?.type ?? '']
    if (!kind) {
      throw new InvalidArgumentError(
        `MonthlyRollup: the at column ${p.source}.${p.at} is ${rows[0]?.type ?? 'not found'}; use timestamptz, timestamp (wall-clock times in ${p.zone}) or date`,
      )
    }
    return kind
  }
}

function assertTenantId(value: unknown): string | number {
  if ((typeof value === 'string' && value.length > 0 && value.length <= 256) || (typeof value === 'number' && Number.isSafeInteger(value)))
    return value
  throw new InvalidArgumentError(`tenantId must be a non-empty string or a safe integer, got ${JSON.stringify(value)}`)
}

const AT_KINDS: Record<string, AtKind> = {
  'timestamp with time zone': 'timestamptz',
  'timestamp without time zone': 'timestamp',
  date: 'date',
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}
