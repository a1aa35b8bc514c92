import { sql, type Kysely } from 'kysely'
import { DatabaseError, InvalidArgumentError } from '../../errors.js'
import { assertIdentifier } from '../../sql/identifier.js'
import { SQLSTATE } from '../../sql/sqlstate.js'

/** The bookkeeping table's name: one per schema, beside the objects it records (`"rag"."pgscale_object_version"`). */
export const OBJECT_VERSION_TABLE = 'pgscale_object_version'

/** The schema where pgscale versions up to store schema version 5 kept every record of a database (through `search_path`). */
export const LEGACY_BOOKKEEPING_SCHEMA = 'public'

/** The maintenance leases' table, beside the version table in the schema whose tables it guards. */
const LEASE = 'pgscale_lease'

/**
 * The schema of a record's object, from its key (`store:rag.chunks` → `rag`): where its record is kept.
 *
 * ### Examples
 * ```ts
 * objectSchema('rollup:billing.expenses_monthly') // 'billing'
 * ```
 */
export function objectSchema(key: string): string {
  const match = /^[a-z]+:([^.]+)\./.exec(key)
  if (!match) throw new InvalidArgumentError(`${key} is not an object key (kind:schema.name)`)
  return assertIdentifier(match[1], 'schema of an object key')
}

/**
 * The bookkeeping table of `schema`, quoted and qualified: every statement on it names it so,
 * never through `search_path`.
 *
 * ### Examples
 * ```ts
 * objectVersionTable('rag') // '"rag"."pgscale_object_version"'
 * ```
 */
export function objectVersionTable(schema: string): string {
  return `"${assertIdentifier(schema, 'bookkeeping schema')}"."${OBJECT_VERSION_TABLE}"`
}

/** The lease table of `schema`, quoted and qualified (`"rag"."pgscale_lease"`). */
export function leaseTable(schema: string): string {
  return `"${assertIdentifier(schema, 'bookkeeping schema')}"."${LEASE}"`
}

/**
 * The statements that make `schema`'s bookkeeping ready, to run in one transaction (the first
 * takes the schema's bookkeeping lock, so two processes take turns): the version table and the
 * lease table when missing, the `relid` column on a version table from before it, and the move of
 * the schema's records out of `public.pgscale_object_version` (where earlier versions kept every
 * schema's records) — deleted there and inserted here in one statement, an existing record here
 * winning, and `SELECT` on the new table granted to the roles that may read the moved objects'
 * tables (the runtime roles that read the old table). A role that may not delete from the old
 * table moves nothing and reads its records there until the old table's owner migrates.
 * Everything is checked before it is created, so a role without `CREATE` on the schema runs it
 * once the tables are there. Shared by `migrateObject` and the plain-SQL migration scripts.
 *
 * ### Examples
 * ```ts
 * for (const s of bookkeepingStatements('rag')) await sql.raw(s).execute(trx)
 * ```
 */
export function bookkeepingStatements(schema: string): string[] {
  const versions = objectVersionTable(schema)
  const literal = (text: string) => `'${text.replaceAll("'", "''")}'`
  const legacy = `"${LEGACY_BOOKKEEPING_SCHEMA}"."${OBJECT_VERSION_TABLE}"`
  const move =
    schema === LEGACY_BOOKKEEPING_SCHEMA
      ? ''
      : `
  select c.oid into legacy_oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where n.nspname = ${literal(LEGACY_BOOKKEEPING_SCHEMA)} and c.relname = ${literal(OBJECT_VERSION_TABLE)};
  if legacy_oid is not null and has_table_privilege(legacy_oid, 'SELECT, DELETE') then
    with gone as (
      delete from ${legacy} where starts_with(object, ${literal(`store:${schema}.`)}) or starts_with(object, ${literal(`rollup:${schema}.`)})
      returning object, version, config
    ), put as (
      insert into ${versions} (object, version, config, relid)
      select object, version, config, to_regclass(${literal(`"${schema}".`)} || quote_ident(substr(object, strpos(object, '.') + 1))) from gone
      on conflict (object) do nothing
      returning relid
    )
    select coalesce(array_agg(relid) filter (where relid is not null), '{}') into moved from put;
    for reader in
      select distinct case when a.grantee = 0 then 'public' else a.grantee::regrole::text end
      from pg_class c cross join lateral aclexplode(c.relacl) a
      where c.oid = any(moved) and a.privilege_type = 'SELECT' and a.grantee <> c.relowner
    loop
      execute format('grant select on ${versions} to %s', reader);
    end loop;
  end if;`
  return [
    `select pg_advisory_xact_lock(hashtext('pgscale.bookkeeping'), hashtext(${literal(schema)}))`,
    `do $pgscale_bookkeeping$
declare
  moved oid[];
  reader text;
  versions_oid oid;
  legacy_oid oid;
begin
  -- The catalog read with this statement's snapshot, not to_regclass: after waiting for the lock,
  -- a name lookup without a relation lock can still miss the table the lock's holder created.
  select c.oid into versions_oid from pg_class c join pg_namespace n on n.oid = c.relnamespace
  where n.nspname = ${literal(schema)} and c.relname = ${literal(OBJECT_VERSION_TABLE)};
  if versions_oid is null then
    create table ${versions} (object text primary key, version integer not null, config jsonb not null, relid oid);
  elsif not exists (select from pg_attribute where attrelid = versions_oid and attname = 'relid' and not attisdropped) then
    begin
      alter table ${versions} add column relid oid;
    exception when insufficient_privilege then null; -- not its owner: records stay without it
    end;
  end if;
  if not exists (select from pg_class c join pg_namespace n on n.oid = c.relnamespace
                 where n.nspname = ${literal(schema)} and c.relname = ${literal(LEASE)}) then
    create table ${leaseTable(schema)} (resource text primary key, holder text not null, expires_at timestamptz not null);
  end if;${move}
end $pgscale_bookkeeping$`,
  ]
}

/**
 * Makes `schema`'s bookkeeping ready ({@link bookkeepingStatements}) inside the caller's
 * transaction `trx`.
 *
 * ### Examples
 * ```ts
 * await db.transaction((trx) => prepareBookkeeping(trx, 'rag'))
 * ```
 */
export async function prepareBookkeeping(trx: Kysely<any>, schema: string): Promise<void> {
  for (const statement of bookkeepingStatements(schema)) await sql.raw(statement).execute(trx)
}

/** One record as read from a bookkeeping table. */
export interface BookkeepingRecord {
  object: string
  version: number
  config: Record<string, unknown>
  /** The oid of the object's table when it was recorded, as text (null: recorded before pgscale kept it). */
  relid: string | null
  /** The schema of the bookkeeping table the record is in. */
  keptIn: string
}

/**
 * The bookkeeping tables where `key`'s record may be, in the order to look: its schema's, then
 * (until moved) the old `public` one. Only those that exist, each with whether it has `relid`.
 *
 * ### Examples
 * ```ts
 * await recordTables(db, 'store:rag.chunks') // [{ schema: 'rag', relid: true }] after the move
 * ```
 */
export async function recordTables(db: Kysely<any>, key: string): Promise<Array<{ schema: string; relid: boolean }>> {
  const schema = objectSchema(key)
  const candidates = [...new Set([schema, LEGACY_BOOKKEEPING_SCHEMA])]
  const { rows } = await sql<{ schema: string; relid: boolean }>`
    select s as schema, exists (select from pg_attribute a where a.attrelid = t.oid and a.attname = 'relid' and not a.attisdropped) as relid
    from unnest(${candidates}::text[]) with ordinality as c(s, i)
      cross join lateral (select to_regclass(format('%I.%I', s, ${OBJECT_VERSION_TABLE}::text)) as oid) t
    where t.oid is not null order by i`.execute(db)
  return rows
}

/**
 * `key`'s record: from its schema's bookkeeping table, else (until moved) from the old `public`
 * one; undefined when neither has it. A table this role may not read is
 * `DatabaseError` 42501 for its own schema's, and skipped for the old one.
 *
 * ### Examples
 * ```ts
 * (await readRecord(db, 'store:rag.chunks'))?.version // 5
 * ```
 */
export async function readRecord(db: Kysely<any>, key: string): Promise<BookkeepingRecord | undefined> {
  const own = objectSchema(key)
  for (const table of await recordTables(db, key)) {
    try {
      const { rows } = await sql<BookkeepingRecord>`
        select object, version, config, ${sql.raw(table.relid ? 'relid::text' : 'null::text')} as relid, ${table.schema}::text as "keptIn"
        from ${sql.raw(objectVersionTable(table.schema))} where object = ${key}`.execute(db)
      if (rows[0]) return rows[0]
    } catch (err) {
      if (table.schema !== own && err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege) continue
      throw err
    }
  }
  return undefined
}

/**
 * Every record this role may read, from every schema's bookkeeping table (and the old `public`
 * one), whose key starts with one of `kinds` (`store:`, `rollup:`), ordered by key. A record
 * in both its schema's table and the old one is read from its schema's. Tables of schemas this
 * role may not use or read are not read: another team's bookkeeping stays theirs.
 *
 * ### Examples
 * ```ts
 * for (const r of await readRecords(db, ['store:'])) console.log(r.object, r.keptIn)
 * ```
 */
export async function readRecords(db: Kysely<any>, kinds: readonly string[]): Promise<BookkeepingRecord[]> {
  const { rows: tables } = await sql<{ schema: string; relid: boolean }>`
    select n.nspname as schema,
      exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'relid' and not a.attisdropped) as relid
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relname = ${OBJECT_VERSION_TABLE} and c.relkind in ('r', 'p')
      and has_schema_privilege(n.oid, 'USAGE') and has_table_privilege(c.oid, 'SELECT')
    order by n.nspname`.execute(db)
  if (!tables.length || !kinds.length) return []
  const reads = tables.map(
    (t) => sql`select object, version, config, ${sql.raw(t.relid ? 'relid::text' : 'null::text')} as relid, ${t.schema}::text as "keptIn"
      from ${sql.id(t.schema, OBJECT_VERSION_TABLE)}
      where ${sql.join(
        kinds.map((k) => sql`starts_with(object, ${k})`),
        sql` or `,
      )}`,
  )
  const { rows } = await sql<BookkeepingRecord>`${sql.join(reads, sql` union all `)}`.execute(db)
  const byKey = new Map<string, BookkeepingRecord>()
  for (const row of rows) {
    const held = byKey.get(row.object)
    if (!held || (held.keptIn !== objectSchemaOrNull(row.object) && row.keptIn === objectSchemaOrNull(row.object)))
      byKey.set(row.object, row)
  }
  return [...byKey.values()].sort((a, b) => (a.object < b.object ? -1 : a.object > b.object ? 1 : 0))
}

function objectSchemaOrNull(key: string): string | null {
  return /^[a-z]+:([^.]+)\./.exec(key)?.[1] ?? null
}

/**
 * Deletes `key`'s record wherever it is kept (its schema's table, the old `public` one), in the
 * caller's transaction: a dropped object's record goes with it.
 *
 * ### Examples
 * ```ts
 * await deleteRecord(trx, 'store:rag.chunks')
 * ```
 */
export async function deleteRecord(db: Kysely<any>, key: string): Promise<void> {
  for (const { schema } of await recordTables(db, key)) {
    if (schema !== objectSchema(key)) {
      const { rows } = await sql<{ may: boolean }>`
        select has_table_privilege(${objectVersionTable(schema)}, 'DELETE') as may`.execute(db)
      if (!rows[0]?.may) continue
    }
    await sql`delete from ${sql.raw(objectVersionTable(schema))} where object = ${key}`.execute(db)
  }
}
