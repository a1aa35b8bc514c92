import { sql, type Kysely } from 'kysely'
import { rowSecurityDdl } from '../../db/security/row-security.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import { fitIdentifier } from '../../sql/identifier.js'
import { DEFAULT_SPACE, spaceTables, type EmbeddingSpace } from './space-config.js'

/** The SQLSTATE the space guard raises: a write to a space the tenant neither searches nor migrates to. */
export const SPACE_GUARD_SQLSTATE = 'PGS01'

/** The setting pgscale's own maintenance of a space carries (the switch's sync, releasing a tenant's old rows): the guard lets it through. */
export const SPACE_MAINTENANCE_SETTING = 'pgscale.space_maintenance'

/**
 * The bookkeeping of a store's embedding spaces, as statements the owner runs once (idempotent):
 * the spaces table, the tenants' state table (tenant-led, under the store's isolation) and the
 * guard function. The guard runs before every row written to a space's table — by pgscale, the
 * app's own SQL or another process — and lets the write through only when the row's tenant
 * searches that space or is migrating to it; it reads the tenant's state row `FOR KEY SHARE`, so
 * a switch (which locks the row `FOR UPDATE`) waits for writes in flight and the writes after it
 * see the new state. A tenant without a state row searches the `default` space. While the tenant
 * migrates, or keeps a previous space to roll back to, the guard also logs each key written in the
 * change log (`<table>_space_changes`): what the switch and the rollback compare under their lock.
 *
 * ### Examples
 * ```ts
 * for (const s of spaceCatalogDdl(config)) await sql.raw(s).execute(owner)
 * ```
 */
export function spaceCatalogDdl(config: ResolvedStoreConfig): string[] {
  const t = spaceTables(config)
  return [
    `create table if not exists ${t.spaces} (
      name text collate "C" primary key,
      dimensions integer not null,
      distance text not null,
      vector_type text not null,
      model text,
      table_name text not null,
      created_at timestamptz not null default now())`,
    `create table if not exists ${t.tenants} (
      tenant_id text collate "C" primary key,
      active text collate "C" not null default '${DEFAULT_SPACE}',
      target text collate "C",
      previous text collate "C",
      state text not null default 'active',
      embedded bigint not null default 0,
      embed_calls bigint not null default 0,
      started_at timestamptz,
      updated_at timestamptz not null default now(),
      switched_at timestamptz)`,
    ...(config.isolation === 'rls' ? rowSecurityDdl(t.tenants) : []),
    // Before the log (whose presence says this column is there): whether the log holds every key
    // written since the tenant's spaces were last made equal — the switch or rollback then
    // compares only those (false for a migration begun before the store had the log).
    `alter table ${t.tenants} add column if not exists changes_logged boolean not null default false`,
    // Before the guard that writes it: where this table exists, the guard logs (hasSpaceChangeLog).
    `create table if not exists ${t.changes} (
      tenant_id text collate "C" not null,
      document_id text collate "C" not null,
      chunk_index integer not null,
      logged_at timestamptz not null default now())`,
    `create index if not exists ${fitIdentifier(config.table, 'space_changes_key')} on ${t.changes} (tenant_id, document_id, chunk_index)`,
    ...(config.isolation === 'rls' ? rowSecurityDdl(t.changes) : []),
    `create or replace function ${t.guard}() returns trigger language plpgsql as $guard$
declare
  tenant text := case when tg_op = 'DELETE' then old.tenant_id else new.tenant_id end;
  searched text;
  migrating text;
  kept text;
begin
  if current_setting('${SPACE_MAINTENANCE_SETTING}', true) = 'on' then
    return case when tg_op = 'DELETE' then old else new end;
  end if;
  select s.active, s.target, s.previous into searched, migrating, kept from ${t.tenants} s where s.tenant_id = tenant for key share;
  if coalesce(searched, '${DEFAULT_SPACE}') = tg_argv[0] or migrating = tg_argv[0] then
    -- While the tenant migrates, every key written (in either space) is logged: the switch looks
    -- only at these under its lock; and while it keeps a previous space, for the rollback. An
    -- update that moves a row logs both keys.
    if migrating is not null or kept is not null then
      if tg_op <> 'DELETE' then
        insert into ${t.changes} (tenant_id, document_id, chunk_index) values (new.tenant_id, new.document_id, new.chunk_index);
      end if;
      if tg_op = 'DELETE' then
        insert into ${t.changes} (tenant_id, document_id, chunk_index) values (old.tenant_id, old.document_id, old.chunk_index);
      elsif tg_op = 'UPDATE' then
        if (old.tenant_id, old.document_id, old.chunk_index) is distinct from (new.tenant_id, new.document_id, new.chunk_index) then
          insert into ${t.changes} (tenant_id, document_id, chunk_index) values (old.tenant_id, old.document_id, old.chunk_index);
        end if;
      end if;
    end if;
    return case when tg_op = 'DELETE' then old else new end;
  end if;
  raise exception using errcode = '${SPACE_GUARD_SQLSTATE}',
    message = format('tenant %s searches embedding space "%s", not "%s": write it with that space''s model, through store.activeTenant(%L)', tenant, coalesce(searched, '${DEFAULT_SPACE}'), tg_argv[0], tenant);
end
$guard$`,
  ]
}

/**
 * The statements that make `table` (a space's chunks table) call the guard on every row written.
 *
 * ### Examples
 * ```ts
 * for (const s of spaceGuardTrigger(config, '"rag_chunks__v2"', 'v2')) await sql.raw(s).execute(owner)
 * ```
 */
export function spaceGuardTrigger(config: ResolvedStoreConfig, table: string, space: string): string[] {
  const t = spaceTables(config)
  return [
    `drop trigger if exists pgscale_space_guard on ${table}`,
    `create trigger pgscale_space_guard before insert or update or delete on ${table} for each row execute function ${t.guard}('${space}')`,
  ]
}

/** The grants a runtime role needs on the spaces bookkeeping (reads, the guard's row lock and its change log). */
export function spaceCatalogGrants(config: ResolvedStoreConfig, grantee: string): string[] {
  const t = spaceTables(config)
  return [
    `grant select on ${t.spaces} to ${grantee}`,
    `grant select, insert, update, delete on ${t.tenants} to ${grantee}`,
    `grant select, insert, delete on ${t.changes} to ${grantee}`,
  ]
}

/**
 * Whether the store's guard logs the keys written while a tenant migrates (its change log exists:
 * bookkeeping created before the log has none, and its switch compares the tenant's rows whole).
 */
export async function hasSpaceChangeLog(db: Kysely<any>, config: ResolvedStoreConfig): Promise<boolean> {
  const { rows } = await sql<{ present: boolean }>`select to_regclass(${spaceTables(config).changes}) is not null as present`.execute(db)
  return rows[0]?.present === true
}

/** Whether the store has its spaces bookkeeping (a store that never added a space has none, and no guard). */
export async function hasSpaceCatalog(db: Kysely<any>, config: ResolvedStoreConfig): Promise<boolean> {
  const { rows } = await sql<{ present: boolean }>`select to_regclass(${spaceTables(config).spaces}) is not null as present`.execute(db)
  return rows[0]?.present === true
}

/**
 * The spaces recorded for a store (the `default` one first), or just `default` without bookkeeping.
 *
 * ### Examples
 * ```ts
 * (await listSpaces(db, config)).map((s) => s.name) // ['default', 'v2']
 * ```
 */
export async function listSpaces(db: Kysely<any>, config: ResolvedStoreConfig): Promise<EmbeddingSpace[]> {
  const base: EmbeddingSpace = {
    name: DEFAULT_SPACE,
    dimensions: config.dimensions,
    distance: config.distance,
    vectorType: config.vectorType,
    model: null,
    table: config.table,
  }
  if (!(await hasSpaceCatalog(db, config))) return [base]
  const { rows } = await sql<{
    name: string
    dimensions: number
    distance: EmbeddingSpace['distance']
    vector_type: EmbeddingSpace['vectorType']
    model: string | null
    table_name: string
  }>`
    select name, dimensions, distance, vector_type, model, table_name from ${sql.raw(spaceTables(config).spaces)} order by created_at, name`.execute(
    db,
  )
  return [
    base,
    ...rows.map((r) => ({
      name: r.name,
      dimensions: r.dimensions,
      distance: r.distance,
      vectorType: r.vector_type,
      model: r.model,
      table: r.table_name,
    })),
  ]
}
