import { sql, type Kysely } from 'kysely'
import { OBJECT_VERSION_TABLE } from '../db/migration/object-migrations.js'

/** What a record in `pgscale_object_version` describes. */
export type RecordedKind = 'store' | 'rollup'

/** One record of `pgscale_object_version`, with the relations its object needs and which of them are gone. */
export interface RecordedObject {
  /** The record's key, e.g. `store:public.rag_chunks` (what `pgscale forget` takes). */
  key: string
  kind: RecordedKind
  /** The object's schema, from its key. */
  schema: string
  /** The object's table, from its key. */
  name: string
  /** The relations the object cannot work without, as `to_regclass` reads them: its table, and a tracked rollup's source. */
  relations: string[]
  /** Those of `relations` the catalog does not have (empty: the object's tables are there). */
  missing: string[]
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * Whether the relation `r` (a text column) exists, as SQL: a qualified name through `to_regclass`;
 * an unqualified one (a rollup's source, which the app resolved through its own `search_path`) in
 * any schema — so a source outside this connection's `search_path` is never taken for dropped.
 *
 * ### Examples
 * ```ts
 * sql`select r from unnest(${names}::text[]) r where ${sql.raw(relationExists('r'))}`
 * ```
 */
export function relationExists(r: string): string {
  return `(case when strpos(${r}, '.') > 0 then to_regclass(${r}) is not null
    else exists (select from pg_catalog.pg_class c where c.relname = ${r} and c.relkind in ('r', 'p', 'f', 'v', 'm')) end)`
}

/**
 * The relations a record's object needs, from its key and its recorded config: a store's table;
 * a tracked rollup's table and its source (`source` as `track` recorded it, resolved the way the
 * rollup resolves it). A key of another kind gives `undefined`: not pgscale's to judge.
 *
 * ### Examples
 * ```ts
 * recordRelations('rollup:public.expenses_monthly', { source: 'expenses' }) // { kind: 'rollup', …, relations: ['"public"."expenses_monthly"', 'expenses'] }
 * ```
 */
export function recordRelations(
  key: string,
  config: unknown,
): { kind: RecordedKind; schema: string; name: string; relations: string[] } | undefined {
  const match = /^(store|rollup):([^.]+)\.(.+)$/.exec(key)
  if (!match) return undefined
  const [, kind, schema, name] = match as unknown as [string, RecordedKind, string, string]
  const relations = [`${quoted(schema)}.${quoted(name)}`]
  const source = (config as { source?: unknown } | null)?.source
  if (kind === 'rollup' && typeof source === 'string' && source) relations.push(source)
  return { kind, schema, name, relations }
}

/**
 * Every store and rollup recorded in this database's `pgscale_object_version`, each with the
 * relations it needs that no longer exist (a `DROP TABLE`, a dropped schema, a rollup's source
 * dropped with its triggers). Reads only; one statement after the table check. A record whose
 * table was dropped and created again (by `pgscale migrate`, or by hand) has nothing missing: it
 * is opened like any other, and `doctor` reports it when it no longer matches its record.
 *
 * ### Examples
 * ```ts
 * const stale = (await recordedObjects(db)).filter((o) => o.missing.length)
 * ```
 */
export async function recordedObjects(db: Kysely<any>): Promise<RecordedObject[]> {
  const { rows: table } = await sql<{ present: boolean }>`select to_regclass(${OBJECT_VERSION_TABLE}) is not null as present`.execute(db)
  if (!table[0]?.present) return []
  const { rows } = await sql<{ object: string; config: unknown }>`
    select object, config from ${sql.table(OBJECT_VERSION_TABLE)} where object like 'store:%' or object like 'rollup:%' order by object`.execute(
    db,
  )
  const objects = rows.flatMap(({ object, config }) => {
    const found = recordRelations(object, config)
    return found ? [{ key: object, ...found, missing: [] as string[] }] : []
  })
  const names = [...new Set(objects.flatMap((o) => o.relations))]
  if (!names.length) return objects
  const { rows: present } = await sql<{ name: string }>`
    select r as name from unnest(${names}::text[]) r where ${sql.raw(relationExists('r'))}`.execute(db)
  const exists = new Set(present.map((p) => p.name))
  for (const o of objects) o.missing = o.relations.filter((r) => !exists.has(r))
  return objects
}
