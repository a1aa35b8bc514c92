import { sqlTextConstant } from '../../filter/metadata-field.js'
import { rowSecurityDdl } from '../../db/security/row-security.js'
import { dirtyKeyNames, type AtKind, type RollupParts } from '../config/index.js'
import type { LogPlacement } from './log-placement.js'

/**
 * The local month (a `date`) of the `at` value `column` in `zone`, in SQL text (the zone rendered
 * by a proven-safe constant): what the triggers and `markDirty` mark.
 *
 * ### Examples
 * ```ts
 * monthOfColumn('timestamptz', '"paid_at"', 'Europe/Madrid') // "date_trunc('month', \"paid_at\" at time zone E'Europe/Madrid')::date"
 * ```
 */
export function monthOfColumn(kind: AtKind, column: string, zone: string): string {
  if (kind === 'timestamptz') return `date_trunc('month', ${column} at time zone ${sqlTextConstant(zone)})::date`
  return `date_trunc('month', ${column})::date`
}

/** The PL/pgSQL statements that append `select` (rows of tenant, month) to the log, where the log is. */
function markStatement(parts: RollupParts, placement: LogPlacement, select: string): string {
  const n = dirtyKeyNames(parts)
  const insert = `(tenant_id, month) select distinct k.t, k.m from (${select}) as k(t, m)`
  if (placement === 'local') return `insert into ${n.log} ${insert};`
  // On Citus the trigger runs on one of the source's shards, where the log's name is the
  // distributed table (a nested distributed insert Citus refuses): it writes the log's colocated
  // shard — same hash range, same node — found from this shard's id (Citus names a shard
  // `<table>_<shardid>`). Nothing else is read or written outside this shard's node.
  return `execute 'insert into ' || pgscale_log_shard || $pgscale_mark$ ${insert}$pgscale_mark$;`
}

/** The trigger function's body: marks per event; TRUNCATE marks every bucket the rollup holds. */
function triggerBody(parts: RollupParts, placement: LogPlacement): string {
  const tenant = `"${parts.tenant}"`
  const at = `"${parts.at}"`
  const keysOf = (rows: string) =>
    `select ${tenant}::${parts.target.tenantType}, ${monthOfColumn(parts.atKind, at, parts.zone)} from ${rows} where ${at} is not null and ${tenant} is not null`
  const everyBucket = `select tenant_id, month from ${parts.target.qualified}`
  if (placement === 'local') {
    const mark = (select: string) => markStatement(parts, 'local', select)
    return `
begin
  if tg_op = 'INSERT' then
    ${mark(keysOf('pgscale_new'))}
  elsif tg_op = 'UPDATE' then
    ${mark(`${keysOf('pgscale_old')} union all ${keysOf('pgscale_new')}`)}
  elsif tg_op = 'DELETE' then
    ${mark(keysOf('pgscale_old'))}
  else
    ${mark(everyBucket)}
  end if;
  return null;
end`
  }
  const mark = (select: string) => markStatement(parts, 'citus', select)
  const log = dirtyKeyNames(parts).log
  // A TRUNCATE of a distributed source fires on the coordinator, not on the shards: there the
  // log's name is the distributed table, and the insert a colocated INSERT … SELECT Citus runs on
  // each shard.
  return `
declare pgscale_log_shard text;
begin
  if tg_op = 'TRUNCATE' then
    ${markStatement(parts, 'local', everyBucket)}
    return null;
  end if;
  select shard_name(d.logicalrelid, d.shardid) into pgscale_log_shard
    from pg_dist_shard s join pg_dist_shard d on d.logicalrelid = ${sqlTextConstant(log)}::regclass and d.shardminvalue = s.shardminvalue
    where s.shardid = substring(tg_table_name from '_([0-9]+)$')::bigint;
  if pgscale_log_shard is null then
    raise exception 'pgscale tracking: % fired on %, which is not a shard of a distributed table', tg_op, tg_table_name;
  end if;
  if tg_op = 'INSERT' then
    ${mark(keysOf('pgscale_new'))}
  elsif tg_op = 'UPDATE' then
    ${mark(`${keysOf('pgscale_old')} union all ${keysOf('pgscale_new')}`)}
  else
    ${mark(keysOf('pgscale_old'))}
  end if;
  return null;
end`
}

/**
 * The DDL that makes every write to the source mark its `(tenant, local month)` keys dirty in the
 * writer's own transaction: the log (no key, no unique constraint: writers of the same key never
 * wait on each other; a rolled-back write leaves nothing), its indexes, one plpgsql function and a
 * statement-level trigger per event with transition tables — INSERT (and COPY) marks the new rows'
 * keys, UPDATE the old and the new (a row that moves month or tenant), DELETE the old, TRUNCATE
 * every bucket the rollup holds. Rows the rollup's `where` leaves out are marked too (a
 * conservative mark costs one refresh). The function keeps the `search_path` of the session that
 * tracked (`set search_path from current`): the log and the rollup table resolve as they did for
 * the rollup, whatever the writer's path, and runs as its owner (`security definer`): writers need
 * no right on the log, and a TRUNCATE's marks see every bucket under row-level security.
 * Idempotent (`if not exists`, `create or replace`).
 *
 * `placement: 'citus'` (a source Citus distributes by the tenant): the log is distributed colocated
 * with the source, the triggers are created with `citus.enable_unsafe_triggers` (Citus runs them on
 * every shard) and each shard's trigger marks the log's colocated shard; the transaction runs its
 * shard commands one connection at a time (`multi_shard_modify_mode` sequential), as Citus requires
 * for DDL after a distribution in one transaction.
 *
 * ### Examples
 * ```ts
 * for (const statement of trackingDdl({ ...parts, atKind: 'timestamptz' })) await sql.raw(statement).execute(db)
 * ```
 */
export function trackingDdl(parts: RollupParts, placement: LogPlacement = 'local'): string[] {
  const n = dirtyKeyNames(parts)
  const source = parts.source
  const citus = placement === 'citus'
  return [
    ...(citus ? [`set local citus.multi_shard_modify_mode to 'sequential'`] : []),
    `create table if not exists ${n.log} (tenant_id ${parts.target.tenantType} not null, month date not null, marked_at timestamptz not null default now())`,
    `create index if not exists "${n.logIndex}" on ${n.log} (tenant_id, month)`,
    `create index if not exists "${n.logIndex}_at" on ${n.log} (marked_at)`,
    ...(citus
      ? [
          `select create_distributed_table(${sqlTextConstant(n.log)}, 'tenant_id', colocate_with => ${sqlTextConstant(source)}) ` +
            `where not exists (select 1 from pg_dist_partition where logicalrelid = to_regclass(${sqlTextConstant(n.log)}))`,
        ]
      : []),
    `create or replace function ${n.fn}() returns trigger language plpgsql security definer set search_path from current as $pgscale_track$${triggerBody(parts, placement)}$pgscale_track$`,
    ...(citus ? [`set local citus.enable_unsafe_triggers = on`] : []),
    `create or replace trigger "${n.triggers.insert}" after insert on ${source} referencing new table as pgscale_new for each statement execute function ${n.fn}()`,
    `create or replace trigger "${n.triggers.update}" after update on ${source} referencing old table as pgscale_old new table as pgscale_new for each statement execute function ${n.fn}()`,
    `create or replace trigger "${n.triggers.delete}" after delete on ${source} referencing old table as pgscale_old for each statement execute function ${n.fn}()`,
    `create or replace trigger "${n.triggers.truncate}" after truncate on ${source} for each statement execute function ${n.fn}()`,
    // Under row-level security the log is scoped like the rollup table: the triggers append as the
    // log's owner (security definer), `markDirty` only for the tenant its statement sets.
    ...(parts.target.isolation === 'rls'
      ? rowSecurityDdl(n.log, { textTenant: /^(text|varchar|character varying)/i.test(parts.target.tenantType) })
      : []),
  ]
}

/**
 * The DDL that stops tracking: the triggers and the function go; the log stays, with the keys
 * still pending (a later `track` or `refreshDirty` drains them). On Citus, dropping a trigger of a
 * distributed table needs `citus.enable_unsafe_triggers` as creating one did, and the function's
 * drop after the triggers' one connection per node (sequential mode).
 *
 * ### Examples
 * ```ts
 * for (const statement of untrackingDdl(parts)) await sql.raw(statement).execute(db)
 * ```
 */
export function untrackingDdl(parts: RollupParts, placement: LogPlacement = 'local'): string[] {
  const n = dirtyKeyNames(parts)
  return [
    ...(placement === 'citus'
      ? [`set local citus.multi_shard_modify_mode to 'sequential'`, `set local citus.enable_unsafe_triggers = on`]
      : []),
    ...Object.values(n.triggers).map((t) => `drop trigger if exists "${t}" on ${parts.source}`),
    `drop function if exists ${n.fn}()`,
  ]
}
