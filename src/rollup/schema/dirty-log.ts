import { sql, type Kysely, type RawBuilder } from 'kysely'
import { hasCitusExtension } from '../../db/database.js'
import { SchemaMismatchError } from '../../errors.js'
import { sqlTextConstant } from '../../filter/metadata-field.js'
import { rowSecurityDdl } from '../../db/security/row-security.js'
import { arrayLiteral } from '../../sql/literal.js'
import { dirtyKeyNames, type AtKind, type RollupParts } from '../config/index.js'

/** The local month (a `date`) of the `at` value `column` in `zone`, in SQL text (the zone rendered by a proven-safe constant). */
function monthOfColumn(kind: AtKind, column: string, zone: string): string {
  if (kind === 'timestamptz') return `date_trunc('month', ${column} at time zone ${sqlTextConstant(zone)})::date`
  return `date_trunc('month', ${column})::date`
}

/**
 * The DDL that makes every write to the source mark its `(tenant, local month)` keys dirty in the
 * writer's own transaction: the log (no key, no unique constraint: writers of the same key never
 * wait on each other; a rolled-back write leaves nothing), its index, one plpgsql function and a
 * statement-level trigger per event with transition tables — INSERT (and COPY) marks the new rows'
 * keys, UPDATE the old and the new (a row that moves month or tenant), DELETE the old, TRUNCATE
 * every bucket the rollup holds. Rows the rollup's `where` leaves out are marked too (a
 * conservative mark costs one refresh). The function keeps the `search_path` of the session that
 * tracked (`set search_path from current`): the log and the rollup table resolve as they did for
 * the rollup, whatever the writer's path, and runs as its owner (`security definer`): writers need
 * no right on the log, and a TRUNCATE's marks see every bucket under row-level security.
 * Idempotent (`if not exists`, `create or replace`).
 *
 * ### Examples
 * ```ts
 * for (const statement of trackingDdl({ ...parts, atKind: 'timestamptz' })) await sql.raw(statement).execute(db)
 * ```
 */
export function trackingDdl(parts: RollupParts): string[] {
  const n = dirtyKeyNames(parts)
  const tenant = `"${parts.tenant}"`
  const at = `"${parts.at}"`
  const keysOf = (rows: string) =>
    `select ${tenant}::${parts.target.tenantType}, ${monthOfColumn(parts.atKind, at, parts.zone)} from ${rows} where ${at} is not null and ${tenant} is not null`
  const mark = (select: string) => `insert into ${n.log} (tenant_id, month) select distinct k.t, k.m from (${select}) as k(t, m);`
  const body = `
begin
  if tg_op = 'INSERT' then
    ${mark(keysOf('pgscale_new'))}
  elsif tg_op = 'UPDATE' then
    ${mark(`${keysOf('pgscale_old')} union all ${keysOf('pgscale_new')}`)}
  elsif tg_op = 'DELETE' then
    ${mark(keysOf('pgscale_old'))}
  else
    ${mark(`select tenant_id, month from ${parts.target.qualified}`)}
  end if;
  return null;
end`
  const source = parts.source
  return [
    `create table if not exists ${n.log} (tenant_id ${parts.target.tenantType} not null, month date not null, marked_at timestamptz not null default now())`,
    `create index if not exists "${n.logIndex}" on ${n.log} (tenant_id, month)`,
    `create index if not exists "${n.logIndex}_at" on ${n.log} (marked_at)`,
    `create or replace function ${n.fn}() returns trigger language plpgsql security definer set search_path from current as $pgscale_track$${body}$pgscale_track$`,
    `create or replace trigger "${n.triggers.insert}" after insert on ${source} referencing new table as pgscale_new for each statement execute function ${n.fn}()`,
    `create or replace trigger "${n.triggers.update}" after update on ${source} referencing old table as pgscale_old new table as pgscale_new for each statement execute function ${n.fn}()`,
    `create or replace trigger "${n.triggers.delete}" after delete on ${source} referencing old table as pgscale_old for each statement execute function ${n.fn}()`,
    `create or replace trigger "${n.triggers.truncate}" after truncate on ${source} for each statement execute function ${n.fn}()`,
    // Under row-level security any write may append to the log (the triggers run as its owner
    // anyway); reading and claiming keys is scoped like the rollup table.
    ...(parts.target.isolation === 'rls'
      ? rowSecurityDdl(n.log, { insert: 'any', textTenant: /^(text|varchar|character varying)/i.test(parts.target.tenantType) })
      : []),
  ]
}

/**
 * The DDL that stops tracking: the triggers and the function go; the log stays, with the keys
 * still pending (a later `track` or `refreshDirty` drains them).
 *
 * ### Examples
 * ```ts
 * for (const statement of untrackingDdl(parts)) await sql.raw(statement).execute(db)
 * ```
 */
export function untrackingDdl(parts: RollupParts): string[] {
  const n = dirtyKeyNames(parts)
  return [...Object.values(n.triggers).map((t) => `drop trigger if exists "${t}" on ${parts.source}`), `drop function if exists ${n.fn}()`]
}

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
 * Claims and removes up to `limit` rows of the log — rows another drainer holds are skipped
 * (`FOR UPDATE SKIP LOCKED`) — in the caller's transaction, and returns their distinct keys,
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
      delete from ${log} where ctid = any(array(
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
  const tenants = sql`${arrayLiteral(keys.map((k) => String(k.tenantId)))}::${sql.raw(parts.target.tenantType)}[]`
  const months = sql`${arrayLiteral(keys.map((k) => k.month))}::date[]`
  const result = await sql`
    delete from ${log} where ctid = any(array(
      select l.ctid from ${log} l join unnest(${tenants}, ${months}) as k(tenant_id, month)
        on l.tenant_id = k.tenant_id and l.month = k.month
      for update of l skip locked))`.execute(trx)
  return Number(result.numAffectedRows ?? 0n)
}

/**
 * Refuses to track a source Citus distributes: Citus runs no triggers on distributed tables (only
 * with `citus.enable_unsafe_triggers`, and then on the shards, where the coordinator's log is out
 * of reach), so tracking would fail or miss writes. A typed error before anything is created.
 *
 * ### Examples
 * ```ts
 * await assertTrackable(db, parts) // throws SchemaMismatchError on a distributed source
 * ```
 */
export async function assertTrackable(db: Kysely<any>, parts: RollupParts): Promise<void> {
  if (!(await hasCitusExtension(db))) return
  const { rows } = await sql<{ distributed: boolean }>`
    select exists (select 1 from pg_dist_partition where logicalrelid = to_regclass(${parts.source})) as distributed`.execute(db)
  if (rows[0]?.distributed)
    throw new SchemaMismatchError(
      `rollup.track: ${parts.source} is distributed by Citus, which runs no triggers on distributed tables (with citus.enable_unsafe_triggers ` +
        `they would run on the shards, where the dirty-key log is out of reach): keep ${parts.source}'s rollup fresh with refreshAt after writes and rebuild`,
    )
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
