import { sql, type Kysely, type RawBuilder } from 'kysely'
import { arrayLiteral } from '../../sql/literal.js'
import { dirtyKeyNames, type RollupParts } from '../config/index.js'

/** The log rows of one tenant (`true` for all). */
function ofTenant(parts: RollupParts, tenantId: string | number | undefined): RawBuilder<unknown> {
  return tenantId === undefined ? sql`true` : sql`tenant_id = ${tenantId}::${sql.raw(parts.target.tenantType)}`
}

/** A claimed dirty key: a tenant's local month (`YYYY-MM-01`). */
export interface DirtyKey {
  tenantId: string | number
  month: string
}

/**
 * Claims and removes up to `limit` rows of the log (of one tenant, or all) — rows another drainer
 * holds are skipped (`FOR UPDATE SKIP LOCKED`) — in the caller's transaction, and returns their distinct keys,
 * ordered by tenant and month (the order every drainer locks buckets in). Rolled back with the
 * transaction: a drainer that dies leaves its keys to the next one.
 *
 * ### Examples
 * ```ts
 * const keys = await claimDirtyKeys(trx, parts, { limit: 1000 })
 * ```
 */
export async function claimDirtyKeys(
  trx: Kysely<any>,
  parts: RollupParts,
  options: { limit: number; tenantId?: string | number },
): Promise<DirtyKey[]> {
  const log = sql.raw(dirtyKeyNames(parts).log)
  const byTenant = ofTenant(parts, options.tenantId)
  const { rows } = await sql<{ tenant_id: string | number; month: string }>`
    with claimed as (
      delete from ${log} where ${byTenant} and ctid = any(array(
        select ctid from ${log} where ${byTenant} limit ${options.limit} for update skip locked))
      returning tenant_id, month
    )
    select distinct tenant_id, to_char(month, 'YYYY-MM-DD') as month from claimed order by tenant_id, month`.execute(trx)
  return rows.map((r) => ({ tenantId: r.tenant_id, month: r.month }))
}

/** The most log rows `refreshDirty` counts for `remaining`: beyond it, `remaining` says "at least" (`moreRemaining`). */
export const PENDING_COUNT_CAP = 10_000

/**
 * How many log rows are pending (of one tenant, or all), as this transaction sees them, counted up
 * to {@link PENDING_COUNT_CAP} (a bounded count stays cheap whatever the backlog): `capped` when
 * there are more.
 *
 * ### Examples
 * ```ts
 * await pendingDirtyRows(db, parts) // { rows: 0, capped: false } once drained
 * ```
 */
export async function pendingDirtyRows(
  db: Kysely<any>,
  parts: RollupParts,
  tenantId?: string | number,
): Promise<{ rows: number; capped: boolean }> {
  const log = sql.raw(dirtyKeyNames(parts).log)
  const byTenant = ofTenant(parts, tenantId)
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from (select 1 from ${log} where ${byTenant} limit ${PENDING_COUNT_CAP + 1}) as pending`.execute(db)
  const n = rows[0]?.n ?? 0
  return { rows: Math.min(n, PENDING_COUNT_CAP), capped: n > PENDING_COUNT_CAP }
}

/**
 * After a claim: removes the log's other rows of the claimed keys that this statement sees (rows
 * another drainer holds are skipped), so a backlog of many writes to few buckets — a drainer that
 * was down for a day — is refreshed once per bucket, not once per write. The caller's refresh reads
 * the source after this statement, so every write behind a removed row is in it; rows committed
 * after this statement began stay in the log. Resolves to how many it removed.
 *
 * ### Examples
 * ```ts
 * const keys = await claimDirtyKeys(trx, parts, { limit: 1000 })
 * await coalesceDirtyKeys(trx, parts, keys)
 * ```
 */
export async function coalesceDirtyKeys(trx: Kysely<any>, parts: RollupParts, keys: readonly DirtyKey[]): Promise<number> {
  if (keys.length === 0) return 0
  const log = sql.raw(dirtyKeyNames(parts).log)
  // One tenant's keys (a distributed log's claims are per tenant): the tenant said outright, so
  // Citus routes the statement to that tenant's shard.
  const oneTenant = keys.every((k) => String(k.tenantId) === String(keys[0]!.tenantId))
  const byTenant = oneTenant ? ofTenant(parts, keys[0]!.tenantId) : sql`true`
  const tenants = sql`${arrayLiteral(keys.map((k) => String(k.tenantId)))}::${sql.raw(parts.target.tenantType)}[]`
  const months = sql`${arrayLiteral(keys.map((k) => k.month))}::date[]`
  const result = await sql`
    delete from ${log} where ${byTenant} and ctid = any(array(
      select l.ctid from ${log} l join unnest(${tenants}, ${months}) as k(tenant_id, month)
        on l.tenant_id = k.tenant_id and l.month = k.month
      where ${oneTenant ? sql`l.tenant_id = ${keys[0]!.tenantId}::${sql.raw(parts.target.tenantType)}` : sql`true`}
      for update of l skip locked))`.execute(trx)
  return Number(result.numAffectedRows ?? 0n)
}

/** The dirty-key log's backlog: rows waiting (counted up to `limit`), and the oldest's age. */
export interface DirtyLogStats {
  /** Rows waiting, counted up to `limit`; `capped` when there are more. */
  rows: number
  capped: boolean
  /** When the oldest waiting key was marked (null when the log is empty or missing). */
  oldestMarkedAt: Date | null
}

/**
 * How far behind the drainers are: the log's rows, counted up to `limit` (a bounded count stays
 * cheap however long the backlog), and the oldest key's mark time. A rollup never tracked has
 * an empty backlog.
 *
 * ### Examples
 * ```ts
 * const { rows, oldestMarkedAt } = await dirtyLogStats(db, parts) // { rows: 12, capped: false, oldestMarkedAt: 2026-12-01T… }
 * ```
 */
export async function dirtyLogStats(db: Kysely<any>, parts: RollupParts, limit = 100_000): Promise<DirtyLogStats> {
  const log = dirtyKeyNames(parts).log
  const { rows: present } = await sql<{ r: boolean }>`select to_regclass(${log}) is not null as r`.execute(db)
  if (!present[0]?.r) return { rows: 0, capped: false, oldestMarkedAt: null }
  const { rows } = await sql<{ n: number; oldest: Date | null }>`
    select (select count(*)::int from (select 1 from ${sql.raw(log)} limit ${limit + 1}) as l) as n,
      (select marked_at from ${sql.raw(log)} order by marked_at limit 1) as oldest`.execute(db)
  const n = rows[0]?.n ?? 0
  return { rows: Math.min(n, limit), capped: n > limit, oldestMarkedAt: rows[0]?.oldest ?? null }
}
