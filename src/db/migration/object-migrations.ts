import { sql, type Kysely } from 'kysely'
import { DatabaseError, MigrationRequiredError, SchemaMismatchError } from '../../errors.js'
import type { Database, DatabaseTransaction } from '../database.js'
import { SQLSTATE } from '../../sql/sqlstate.js'
import {
  type BookkeepingRecord,
  objectSchema,
  objectVersionTable,
  OBJECT_VERSION_TABLE,
  prepareBookkeeping,
  readRecord,
  recordTables,
} from './bookkeeping.js'

/** One versioned step of a parameterised object's schema (a store table, a rollup table). */
export interface ObjectMigrationStep {
  /** Runs in the migration's transaction, after the object's advisory lock is held. */
  up(trx: Kysely<any>): Promise<void>
}

/** The bookkeeping table's name: one per schema, one row per object of that schema (e.g. `store:public.rag_chunks`). */
export { OBJECT_VERSION_TABLE }

/**
 * Brings one parameterised object to its latest version, idempotently and safely when two
 * processes do it at once: the steps run in one transaction under an advisory lock on the object
 * key; the version and the object's configuration (`config`) are recorded. When a different
 * configuration was recorded before (say other dimensions), it throws {@link SchemaMismatchError}
 * naming both, changing nothing. Kysely's Migrator is for static migrations; these are functions
 * of a configuration, many per database, so each object keeps its own version.
 *
 * ### Examples
 * ```ts
 * await migrateObject(db, 'store:public.rag_chunks', { dimensions: 384 }, storeSteps(config))
 * ```
 */
export async function migrateObject(
  db: Database,
  key: string,
  config: Readonly<Record<string, unknown>>,
  steps: readonly ObjectMigrationStep[],
  options: {
    /** The relation the steps create; when it was dropped behind our back, the steps run again. */
    relation?: string
    compare?: (recorded: Record<string, unknown>, wanted: Readonly<Record<string, unknown>>) => string | undefined
    /**
     * Values of configuration keys added after objects were recorded without them: a missing
     * recorded key is compared as its old default, so adding a key never makes existing objects fail.
     */
    recordedDefaults?: Readonly<Record<string, unknown>>
    /** `false`: never run DDL; an object that is not at its version is a {@link MigrationRequiredError}. Default true. */
    migrate?: boolean
    /** What the object's owner runs to migrate it, for the error a role without DDL rights gets. */
    command?: string
  } = {},
): Promise<{ from: number; to: number }> {
  const compare = options.compare ?? defaultCompare
  const withDefaults = (recorded: Record<string, unknown>) => ({ ...options.recordedDefaults, ...recorded })
  const command = options.command ?? `pgscale migrate for ${key}`
  // The common case reads only: an object already at its version needs no DDL, so a role with
  // DML rights alone (the app's runtime role) can open it.
  const relation = options.relation ?? keyRelation(key)
  const current = await readObjectVersion(db, key, relation)
  if (current.state === 'unreadable') {
    const table = objectVersionTable(objectSchema(key))
    throw new MigrationRequiredError(key, `GRANT SELECT ON ${table} TO <this role>`, `${key}: this role may not read ${table}`, {
      cause: current.cause,
    })
  }
  // Its owner brings a record up to date when its table was re-created (the steps again, all
  // idempotent) or it is still in the old public table (moved); anyone else opens it as it is.
  const refresh = current.state === 'present' && current.owned && options.migrate !== false && (current.recreated || current.moved)
  if (current.state === 'present') {
    const mismatch = compare(withDefaults(current.config), config)
    if (mismatch) throw new SchemaMismatchError(`${key} exists with a different configuration: ${mismatch}`)
    if (current.version === steps.length && !refresh) return { from: current.version, to: current.version }
  }
  if (options.migrate === false) {
    const why = current.state === 'present' ? `is at version ${current.version} of ${steps.length}` : 'does not exist'
    throw new MigrationRequiredError(key, command, `${key} ${why} and this store opens with migrate: false`)
  }
  try {
    const rerun = current.state === 'present' && current.recreated
    return await runObjectMigration(db, key, config, steps, { relation, rerun, compare, withDefaults })
  } catch (err) {
    const denied = err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege
    // Only re-recording (the object is at its version): a table's owner without CREATE on its
    // schema opens it as before, its record where it was.
    if (denied && current.state === 'present' && current.version === steps.length) return { from: current.version, to: current.version }
    if (denied)
      throw new MigrationRequiredError(key, command, `${key} needs DDL this role may not run (${err.message}); nothing was changed`, {
        cause: err,
      })
    throw err
  }
}

type ObjectVersion =
  | { state: 'present'; version: number; config: Record<string, unknown>; recreated: boolean; moved: boolean; owned: boolean }
  | { state: 'missing' }
  | { state: 'unreadable'; cause: unknown }

/** The relation a key names when the caller gives none (`rollup:s.t` → `"s"."t"`). */
function keyRelation(key: string): string {
  return `"${objectSchema(key)}"."${key.slice(key.indexOf('.') + 1)}"`
}

/**
 * The recorded version of `key`, read only (no DDL): missing when unrecorded or its relation is
 * gone; `recreated` when the relation is not the one recorded (dropped and created again),
 * `moved` when the record is still in the old `public` table, `owned` when this role owns the relation.
 */
async function readObjectVersion(db: Database, key: string, relation: string): Promise<ObjectVersion> {
  let record: BookkeepingRecord | undefined
  try {
    record = await readRecord(db, key)
  } catch (err) {
    if (err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege) return { state: 'unreadable', cause: err }
    throw err
  }
  if (!record) return { state: 'missing' }
  const { rows } = await sql<{ relid: string | null; owned: boolean | null }>`
    select to_regclass(${relation})::oid::text as relid,
      (select pg_has_role(c.relowner, 'USAGE') from pg_class c where c.oid = to_regclass(${relation})) as owned`.execute(db)
  const relid = rows[0]?.relid ?? null
  if (relid === null) return { state: 'missing' }
  return {
    state: 'present',
    version: record.version,
    config: record.config,
    recreated: record.relid !== null && record.relid !== relid,
    moved: record.keptIn !== objectSchema(key),
    owned: rows[0]?.owned === true,
  }
}

async function runObjectMigration(
  db: Database,
  key: string,
  config: Readonly<Record<string, unknown>>,
  steps: readonly ObjectMigrationStep[],
  options: {
    relation: string
    /** Run every step again (idempotent): the relation was re-created since it was recorded. */
    rerun: boolean
    compare: (recorded: Record<string, unknown>, wanted: Readonly<Record<string, unknown>>) => string | undefined
    withDefaults: (recorded: Record<string, unknown>) => Record<string, unknown>
  },
): Promise<{ from: number; to: number }> {
  const { compare, withDefaults } = options
  const schema = objectSchema(key)
  const versions = sql.raw(objectVersionTable(schema))
  return db.transaction(async (trx: DatabaseTransaction) => {
    // The schema's version and lease tables, and its records moved out of the old public table.
    await prepareBookkeeping(trx, schema)
    await sql`select pg_advisory_xact_lock(hashtext('pgscale.object'), hashtext(${key}))`.execute(trx)
    const { rows } = await sql<{ version: number; config: Record<string, unknown>; present: boolean }>`
      select version, config, to_regclass(${options.relation}) is not null as present from ${versions} where object = ${key}`.execute(trx)
    const recorded = rows[0]?.present ? rows[0] : undefined
    if (recorded) {
      const mismatch = compare(withDefaults(recorded.config), config)
      if (mismatch) throw new SchemaMismatchError(`${key} exists with a different configuration: ${mismatch}`)
    }
    const from = options.rerun ? 0 : (recorded?.version ?? 0)
    for (let version = from + 1; version <= steps.length; version++) await steps[version - 1]!.up(trx)
    const withRelid = (await recordTables(trx, key))[0]?.relid === true
    await sql`insert into ${versions} (object, version, config${sql.raw(withRelid ? ', relid' : '')})
      values (${key}, ${steps.length}, ${JSON.stringify(config)}::jsonb${withRelid ? sql`, to_regclass(${options.relation})` : sql``})
      on conflict (object) do update set version = excluded.version, config = excluded.config${sql.raw(withRelid ? ', relid = excluded.relid' : '')}`.execute(
      trx,
    )
    return { from: recorded?.version ?? 0, to: steps.length }
  })
}

function defaultCompare(recorded: Record<string, unknown>, wanted: Readonly<Record<string, unknown>>): string | undefined {
  const diffs = Object.keys(wanted)
    .filter((k) => JSON.stringify(recorded[k]) !== JSON.stringify(wanted[k]))
    .map((k) => `${k} is ${JSON.stringify(recorded[k])}, configured ${JSON.stringify(wanted[k])}`)
  return diffs.length ? diffs.join('; ') : undefined
}
