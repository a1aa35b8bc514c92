import { sql, type Kysely } from 'kysely'
import { readRecords } from '../db/migration/bookkeeping.js'

/** What a record in a schema's `pgscale_object_version` describes. */
export type RecordedKind = 'store' | 'rollup'

/** One record of a schema's `pgscale_object_version`, with the relations its object needs and which of them are gone. */
export interface RecordedObject {
  /** The record's key, e.g. `store:public.rag_chunks` (what `pgscale forget` takes). */
  key: string
  kind: RecordedKind
  /** The object's schema, from its key. */
  schema: string
  /** The object's table, from its key. */
  name: string
  /** The relations the object cannot work without, as `to_regclass` reads them: its table, and a tracked rollup's source and fleet table. */
  relations: string[]
  /** Those of `relations` the catalog does not have (empty: the object's tables are there). */
  missing: string[]
  /** The schema of the bookkeeping table the record is in: the object's, or `public` for a record from before (not moved yet). */
  keptIn: string
  /** The object's table is there but is not the one recorded: dropped and created again (or restored from a dump) since. */
  recreated: boolean
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
 * a tracked rollup's table, its source (`source` as `track` recorded it, resolved the way the
 * rollup resolves it) and its fleet level's table when recorded. A key of another kind gives
 * `undefined`: not pgscale's to judge.
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
  const { source, fleet, levels } = (config ?? {}) as { source?: unknown; fleet?: { name?: unknown }; levels?: unknown }
  if (kind === 'rollup' && typeof source === 'string' && source) relations.push(source)
  const recorded = Array.isArray(levels) ? (levels as Array<{ name?: unknown } | null>) : [fleet]
  for (const level of recorded)
    if (kind === 'rollup' && typeof level?.name === 'string' && level.name && !relations.includes(level.name)) relations.push(level.name)
  return { kind, schema, name, relations }
}

/**
 * Every store and rollup recorded in the bookkeeping this role may read — each schema's
 * `pgscale_object_version`, and the old `public` one until its records are moved — each with the
 * relations it needs that no longer exist (a `DROP TABLE`, a dropped schema, a rollup's source
 * dropped with its triggers), and whether its table was re-created since it was recorded (its oid
 * differs from the recorded one; its owner's next `migrate` or `open` re-checks the table and
 * records it again). Reads only. Another team's bookkeeping, in a schema this role may not read,
 * is not listed.
 *
 * ### Examples
 * ```ts
 * const stale = (await recordedObjects(db)).filter((o) => o.missing.length)
 * ```
 */
export async function recordedObjects(db: Kysely<any>): Promise<RecordedObject[]> {
  const records = await readRecords(db, ['store:', 'rollup:'])
  const objects = records.flatMap(({ object, config, keptIn, relid }) => {
    const found = recordRelations(object, config)
    return found ? [{ key: object, ...found, missing: [] as string[], keptIn, recreated: false, relid }] : []
  })
  const names = [...new Set(objects.flatMap((o) => o.relations))]
  if (!names.length) return objects.map(({ relid: _, ...o }) => o)
  const { rows: present } = await sql<{ name: string; relid: string | null }>`
    select r as name, case when strpos(r, '.') > 0 then to_regclass(r)::oid::text end as relid
    from unnest(${names}::text[]) r where ${sql.raw(relationExists('r'))}`.execute(db)
  const exists = new Map(present.map((p) => [p.name, p.relid]))
  return objects.map(({ relid, ...o }) => {
    const now = exists.get(o.relations[0]!)
    return { ...o, missing: o.relations.filter((r) => !exists.has(r)), recreated: relid !== null && now != null && now !== relid }
  })
}
