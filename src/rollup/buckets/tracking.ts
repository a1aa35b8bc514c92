import { CompiledQuery, sql, type Kysely, type Migration } from 'kysely'
import { InvalidArgumentError } from '../../errors.js'
import {
  assertMigrationOptions,
  assertTenantId,
  dirtyKeyNames,
  type DrainOptions,
  type RefreshDirtyOptions,
  type RefreshDirtyResult,
  type RollupMigrationOptions,
} from '../config/index.js'
import { assertMayAlter } from '../../db/security/privileges.js'
import { objectSchema, objectVersionTable } from '../../db/migration/bookkeeping.js'
import {
  claimDirtyKeys,
  claimDistributedKeys,
  coalesceDirtyKeys,
  forgetRollup,
  pendingDirtyRows,
  recordRollup,
  rollupKey,
  tableGrants,
  trackingCommentStatement,
  trackingDdl,
  trackingState,
  untrackingDdl,
} from '../schema/index.js'
import type { RollupContext } from './rollup-context.js'
import { requireTracking, typedErrors } from './typed-errors.js'

/**
 * Creates the dirty-key log and the source's triggers (idempotent; two at once take turns); a
 * source Citus distributes is refused before anything is created.
 *
 * ### Examples
 * ```ts
 * await track(ctx, db)
 * ```
 */
export async function track(ctx: RollupContext, db: Kysely<any>): Promise<void> {
  const plain = db.withoutPlugins()
  const parts = { ...ctx.parts, atKind: await ctx.validate(plain) }
  // Tracked already with this definition: the catalog says so, and nothing needs creating.
  const placement = await ctx.placement(plain, { fresh: true })
  if ((await trackingState(plain, parts, placement)) === 'current') return
  await assertMayAlter(plain, parts.source, 'track', 'creates triggers')
  await ctx.ddl(plain, [...trackingDdl(parts, placement), trackingCommentStatement(parts, placement)], (trx) => recordRollup(trx, parts))
}

/**
 * Drops the triggers and their function; the log keeps its pending keys.
 *
 * ### Examples
 * ```ts
 * await untrack(ctx, db)
 * ```
 */
export async function untrack(ctx: RollupContext, db: Kysely<any>): Promise<void> {
  const plain = db.withoutPlugins()
  const placement = await ctx.placement(plain, { fresh: true })
  if ((await trackingState(plain, ctx.parts, placement)) === 'none') return
  await assertMayAlter(plain, ctx.parts.source, 'untrack', 'drops triggers')
  await ctx.ddl(plain, untrackingDdl(ctx.parts, placement), (trx) => forgetRollup(trx, ctx.parts))
}

/**
 * `track` as a Kysely migration, for apps that run DDL only at deploy time: `up` tracks (and grants
 * the runtime role `SELECT, INSERT, DELETE` on the dirty-key log: writers of the source insert into
 * it, drainers claim and delete; and `SELECT` on the schema's record table, so `pgscale drain` as
 * that role finds the rollup), `down` untracks.
 *
 * ### Examples
 * ```ts
 * const migrations = { '0004-track-expenses': trackingMigration(ctx, { runtimeRole: 'app' }) }
 * ```
 */
export function trackingMigration(ctx: RollupContext, options: RollupMigrationOptions = {}): Migration {
  assertMigrationOptions(options, 'trackingMigration')
  return {
    async up(db: Kysely<any>) {
      await typedErrors(track(ctx, db))
      const { schema } = splitQualified(dirtyKeyNames(ctx.parts).log)
      for (const grant of tableGrants(schema, dirtyKeyNames(ctx.parts).log, options.runtimeRole))
        await typedErrors(sql.raw(grant).execute(db))
      // The record, readable by the role (`pgscale drain` as the runtime role finds the rollup), where `track` keeps one.
      const records = objectVersionTable(objectSchema(rollupKey(ctx.parts)))
      const { rows } = await sql<{ present: boolean }>`select to_regclass(${records}) is not null as present`.execute(db)
      if (options.runtimeRole && rows[0]?.present)
        await typedErrors(sql.raw(`grant select on ${records} to "${options.runtimeRole}"`).execute(db))
    },
    async down(db: Kysely<any>) {
      await typedErrors(untrack(ctx, db))
    },
  }
}

/** The schema of a quoted `"schema"."name"` (undefined for a bare `"name"`). */
function splitQualified(quoted: string): { schema?: string } {
  const parts = quoted.split('"."')
  return parts.length === 2 ? { schema: parts[0]!.replace(/^"/, '') } : {}
}

/**
 * When a fleet-wide drain recomputes a delta-kept level once instead of upserting its rows once per
 * tenant: when the months' rollup rows are at most `rowsPerBucket` per claimed bucket. Measured at
 * 3,000,000 rows (docs/rollup.md): a recomputation ~0.5 µs a rollup row, a tenant's delta ~0.5-1.3
 * ms a claimed bucket in one transaction (the same fleet rows updated again by every tenant). Not
 * part of the package's API: tests set it to walk either path.
 *
 * ### Examples
 * ```ts
 * bulkDrain.rowsPerBucket = 0 // every drain keeps its deltas (a test of that path)
 * ```
 */
export const bulkDrain = { rowsPerBucket: 1000 }

/** Whether a fleet-wide drain of `buckets` claimed buckets in `months` recomputes its delta-kept levels (see {@link bulkDrain}). */
async function drainsInBulk(ctx: RollupContext, trx: Kysely<any>, months: readonly string[], buckets: number): Promise<boolean> {
  const bulk = ctx.fleet?.level?.bulk
  if (!bulk || buckets === 0) return false
  const { rows } = await trx.executeQuery<{ rows: string }>(bulk.rows([...new Set(months)].sort()))
  return buckets * bulkDrain.rowsPerBucket >= Number(rows[0]?.rows ?? 0)
}

/**
 * Claims up to `limit` log rows, refreshes their buckets (one set-based statement per tenant,
 * locks in tenant and month order) and removes what it claimed, in one transaction.
 *
 * ### Examples
 * ```ts
 * await refreshDirty(ctx, db, { limit: 500 }) // { buckets: 12, remaining: 0 }
 * ```
 */
export async function refreshDirty(ctx: RollupContext, db: Kysely<any>, options: RefreshDirtyOptions = {}): Promise<RefreshDirtyResult> {
  const limit = options.limit ?? 1000
  if (!Number.isInteger(limit) || limit < 1 || limit > 1_000_000)
    throw new InvalidArgumentError(`refreshDirty: limit must be an integer from 1 to 1000000, got ${String(options.limit)}`)
  const tenantId = options.tenantId === undefined ? undefined : assertTenantId(options.tenantId, ctx.parts.target.tenantType)
  const plain = ctx.scoped(db.withoutPlugins(), tenantId, { write: true })
  const statements = ctx.statementsFor(await ctx.validate(plain))
  await requireTracking(ctx, plain, 'refreshDirty')
  const distributed = (await ctx.placement(plain)) === 'citus'
  const run = async (trx: Kysely<any>) => {
    const keys = distributed
      ? await claimDistributedKeys(trx, ctx.parts, { limit, tenantId })
      : await claimDirtyKeys(trx, ctx.parts, { limit, tenantId })
    const byTenant = new Map<string, { tenantId: string | number; months: string[] }>()
    for (const k of keys) {
      const group = byTenant.get(String(k.tenantId)) ?? { tenantId: k.tenantId, months: [] }
      group.months.push(k.month)
      byTenant.set(String(k.tenantId), group)
    }
    // A distributed log is coalesced one tenant at a time (each statement routed to its shard).
    if (distributed)
      for (const group of byTenant.values())
        await coalesceDirtyKeys(
          trx,
          ctx.parts,
          group.months.map((month) => ({ tenantId: group.tenantId, month })),
        )
    else await coalesceDirtyKeys(trx, ctx.parts, keys)
    if (keys.length) await trx.executeQuery(CompiledQuery.raw('SET LOCAL jit = off'))
    // A fleet level's locks on every claimed month first (month order, before any bucket lock); its
    // part after every tenant's rebuild, in this transaction.
    const months = keys.map((k) => k.month)
    for (const lock of ctx.fleetLocks(months)) await trx.executeQuery(CompiledQuery.raw(lock))
    // A large fleet-wide drain recomputes a delta-kept level once, after its tenants' statements.
    const bulk = tenantId === undefined && (await drainsInBulk(ctx, trx, months, keys.length))
    const fleet = ctx.fleetWrite(months, bulk ? { bulk: keys } : {})
    const rebuild = bulk ? statements.bulkRebuild! : statements.rebuild
    for (const group of byTenant.values()) {
      await trx.executeQuery(CompiledQuery.raw(ctx.lockStatement(group.tenantId, group.months)))
      await trx.executeQuery(rebuild({ tenant: group.tenantId, months: group.months }))
    }
    for (const query of fleet.after) await trx.executeQuery(query)
    const pending = await pendingDirtyRows(trx, ctx.parts, tenantId)
    written.push(...[...byTenant.values()].map((g) => g.tenantId))
    return pending.capped
      ? { buckets: keys.length, remaining: pending.rows, moreRemaining: true as const }
      : { buckets: keys.length, remaining: pending.rows }
  }
  const written: Array<string | number> = []
  const result = await (plain.isTransaction ? run(plain) : plain.transaction().execute(run))
  await ctx.wrote(db, written)
  return result
}

/**
 * {@link refreshDirty} until the log is empty, then (a fleet-wide drain of a rollup with a deferred
 * level) recomputes the level's pending months, waits `intervalMs` and looks again, until `signal`
 * aborts; resolves to the buckets refreshed.
 *
 * ### Examples
 * ```ts
 * await drain(ctx, db, { intervalMs: 500, signal })
 * ```
 */
export async function drain(ctx: RollupContext, db: Kysely<any>, options: DrainOptions = {}): Promise<{ buckets: number }> {
  const intervalMs = options.intervalMs ?? 1000
  if (!(intervalMs >= 0) || !Number.isFinite(intervalMs)) throw new InvalidArgumentError('drain: intervalMs must be a number ≥ 0')
  let buckets = 0
  const deferred = ctx.fleet?.level?.deferred ? ctx.fleet.level : undefined
  while (!options.signal?.aborted) {
    const done = await refreshDirty(ctx, db, options)
    buckets += done.buckets
    // Nothing left, or nothing this drainer could claim (others hold the rest): the deferred levels
    // brought up to date (fleet-wide drains only), then a wait before looking again.
    if (done.remaining === 0 || done.buckets === 0) {
      if (deferred && options.tenantId === undefined) await deferred.refreshDeferred(ctx, db)
      await sleep(intervalMs, options.signal)
    }
  }
  return { buckets }
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
