import { sql, type Kysely, type RawBuilder } from 'kysely'
import {
  deleteRecord,
  objectSchema,
  objectVersionTable,
  prepareBookkeeping,
  readRecords,
  recordTables,
} from '../../db/migration/bookkeeping.js'
import { assertQualifiedName } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import { inlineParameters, isInlineValue } from '../../sql/literal.js'
import { compileSql } from '../../sql/statement-template.js'
import type { RollupParts } from '../config/index.js'

/** A tracked rollup's definition as `track` records it: enough to rebuild the `MonthlyRollup` (the ops CLI's `drain`). */
export interface RecordedRollup {
  source: string
  target: {
    name: string
    groupBy: Array<{ name: string; type: string }>
    measures: Array<{ name: string; type: string }>
    tenantType: string
    /** Not recorded: filled by `recordedRollups` from the catalog (row-level security on the table). */
    isolation?: 'none' | 'rls'
  }
  at: string
  tenant: string
  groupBy: string[]
  /** Each measure's aggregate as SQL text (values inlined by the proven-safe literal renderer). */
  measures: Array<{ name: string; sql: string }>
  where: string | null
  zone: string
  /**
   * The fleet level (`fleetTable`) when the rollup declares one: its table as given and the groups
   * it keeps. Absent in records written before fleet levels were recorded (and for rollups without
   * one): `recordedRollups` then finds a level from its table's marker comment.
   */
  fleet?: RecordedLevel
  /**
   * Every level the rollup declares, in order, when it declares more than one (`fleet` is then the
   * first): read before `fleet` by `MonthlyRollup.fromRecord`.
   */
  levels?: RecordedLevel[]
}

/** A recorded level (`fleetTable`): its table as given, the groups it keeps, and `perTenant` when it keeps the tenant. */
export interface RecordedLevel {
  /** The level's table as given (`expenses_fleet` or `schema.expenses_fleet`). */
  name: string
  /** The groups it keeps. */
  groupBy: string[]
  /** Present when it keeps the tenant (`fleetTable(…, { perTenant: true })`). */
  perTenant?: true
  /** Present when it is kept by the drain (`fleetTable(…, { deferred: true })`). */
  deferred?: true
}

const KIND = 'rollup:'

/** The rollup's key in its schema's `pgscale_object_version`: `rollup:public.expenses_monthly`. */
export function rollupKey(parts: Pick<RollupParts, 'target'>): string {
  const { schema, name } = assertQualifiedName(parts.target.name, 'rollup table name')
  return `${KIND}${schema ?? 'public'}.${name}`
}

/** A fragment as text with its values inlined, or undefined when a value cannot be (a Date, a buffer). */
function fragmentText(fragment: RawBuilder<unknown>): string | undefined {
  const { sql: text, parameters } = compileSql(fragment)
  if (!parameters.every(isInlineValue)) return undefined
  return parameters.length ? inlineParameters(text, parameters) : text
}

/**
 * Records the rollup's definition in the `pgscale_object_version` of its table's schema (in
 * `track`'s transaction, after that schema's bookkeeping is made ready), so tools
 * that were not given the app's code — `pgscale drain`, `pgscale doctor` — find every tracked
 * rollup. A definition whose fragments hold values that cannot be rendered as SQL text is not
 * recorded (those tools then need it in their config module).
 *
 * ### Examples
 * ```ts
 * await recordRollup(trx, parts)
 * ```
 */
export async function recordRollup(trx: Kysely<any>, parts: RollupParts): Promise<void> {
  const record = rollupRecord(parts)
  if (!record) return
  const key = rollupKey(parts)
  const schema = objectSchema(key)
  await prepareBookkeeping(trx, schema)
  const relid = (await recordTables(trx, key))[0]?.relid === true
  await sql`insert into ${sql.raw(objectVersionTable(schema))} (object, version, config${sql.raw(relid ? ', relid' : '')})
    values (${key}, 1, ${JSON.stringify(record)}::jsonb${relid ? sql`, to_regclass(${parts.target.qualified})` : sql``})
    on conflict (object) do update set version = excluded.version, config = excluded.config${sql.raw(relid ? ', relid = excluded.relid' : '')}`.execute(
    trx,
  )
}

/**
 * The record of a rollup's definition, or undefined when a fragment holds a value that cannot be
 * rendered as SQL text.
 *
 * ### Examples
 * ```ts
 * rollupRecord(parts)?.measures // [{ name: 'total', sql: 'sum(amount)' }, …]
 * ```
 */
export function rollupRecord(parts: RollupParts): RecordedRollup | undefined {
  const measures = parts.measures.map((m) => ({ name: m.name, sql: fragmentText(m.expression) }))
  const where = parts.where ? fragmentText(parts.where) : null
  if (measures.some((m) => m.sql === undefined) || where === undefined) return undefined
  return {
    source: parts.source.replaceAll('"', ''),
    target: {
      name: parts.target.name,
      groupBy: [...parts.target.groupBy],
      measures: [...parts.target.measures],
      tenantType: parts.target.tenantType,
    },
    at: parts.at,
    tenant: parts.tenant,
    groupBy: [...parts.groupBy],
    measures: measures as RecordedRollup['measures'],
    where,
    zone: parts.zone,
    ...recordedLevels(parts),
  }
}

/** `fleet` (the first level) and, with more than one, `levels`: what the record keeps of the rollup's levels. */
function recordedLevels(parts: Pick<RollupParts, 'fleet' | 'levels'>): Pick<RecordedRollup, 'fleet' | 'levels'> {
  const levels = (parts.levels ?? (parts.fleet ? [parts.fleet] : [])).map((l): RecordedLevel => ({
    name: l.name,
    groupBy: [...l.groupBy],
    ...(l.perTenant ? { perTenant: true as const } : {}),
    ...(l.deferred ? { deferred: true as const } : {}),
  }))
  if (!levels.length) return {}
  return levels.length > 1 ? { fleet: levels[0]!, levels } : { fleet: levels[0]! }
}

/** Removes the rollup's record wherever it is kept (in `untrack`'s transaction). */
export async function forgetRollup(trx: Kysely<any>, parts: Pick<RollupParts, 'target'>): Promise<void> {
  await deleteRecord(trx, rollupKey(parts))
}

/**
 * Every rollup `track` recorded in this database that this role may read (each schema's
 * bookkeeping, and the old `public` table until moved), by key, with its table's isolation as the
 * catalog has it (row-level security on: `rls`; not a recorded key, as for stores). A record
 * without `fleet` (written before fleet levels were recorded, or by a `track` that ran before the
 * level was declared) gets the level the catalog has for its table (a table commented as its fleet
 * level), if any: a rollup rebuilt from it then keeps that level instead of refusing to write beside it.
 *
 * ### Examples
 * ```ts
 * for (const r of await recordedRollups(db)) console.log(r.target.name, r.target.isolation, r.fleet?.name)
 * ```
 */
export async function recordedRollups(db: Kysely<any>): Promise<RecordedRollup[]> {
  const records = (await readRecords(db, [KIND])).map((r) => r.config as unknown as RecordedRollup)
  const tables = records.map((r) => {
    const { schema, name } = assertQualifiedName(r.target?.name, 'rollup table name')
    return quoteQualified(schema, name)
  })
  if (!tables.length) return records
  const { rows: secured } = await sql<{ table: string }>`
    select t as table from unnest(${tables}::text[]) t where (select c.relrowsecurity from pg_class c where c.oid = to_regclass(t))`.execute(
    db,
  )
  const rls = new Set(secured.map((r) => r.table))
  records.forEach((r, i) => (r.target.isolation = rls.has(tables[i]!) ? 'rls' : 'none'))
  await catalogFleets(
    db,
    records.flatMap((r, i) => (r.fleet ? [] : [{ record: r, table: tables[i]! }])),
  )
  return records
}

/** Fills `fleet` of records without one from the table the catalog marks as their rollup table's level, if any. */
async function catalogFleets(db: Kysely<any>, bare: Array<{ record: RecordedRollup; table: string }>): Promise<void> {
  if (!bare.length) return
  const markers = bare.map((b) => `pgscale.fleet:${b.table}`)
  const deferredMarkers = bare.map((b) => `pgscale.fleet.deferred:${b.table}`)
  // Each marked table with the columns it has: its kept groups are those of the rollup table's groups.
  const { rows } = await sql<{ marker: string; schema: string; name: string; columns: string[] }>`
    select d.description as marker, n.nspname as schema, c.relname as name,
      array(select a.attname::text from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped order by a.attnum) as columns
    from pg_description d join pg_class c on c.oid = d.objoid join pg_namespace n on n.oid = c.relnamespace
    where d.classoid = 'pg_class'::regclass and d.objsubid = 0 and d.description = any(${[...markers, ...deferredMarkers]}::text[])`.execute(
    db,
  )
  const found = new Map(rows.map((r) => [r.marker, r]))
  bare.forEach(({ record }, i) => {
    const deferred = !found.has(markers[i]!) && found.has(deferredMarkers[i]!)
    const level = found.get(markers[i]!) ?? found.get(deferredMarkers[i]!)
    if (!level) return
    const groupBy = record.target.groupBy.map((g) => g.name).filter((g) => level.columns.includes(g))
    record.fleet = {
      name: level.schema === 'public' ? level.name : `${level.schema}.${level.name}`,
      groupBy,
      ...(deferred ? { deferred: true as const } : {}),
    }
  })
}
