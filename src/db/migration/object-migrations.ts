import { sql, type Kysely } from 'kysely'
import { DatabaseError, MigrationRequiredError, SchemaMismatchError } from '../../errors.js'
import type { Database, DatabaseTransaction } from '../database.js'
import { SQLSTATE } from '../../sql/sqlstate.js'
import { ensureLeaseTable } from '../lease-lock.js'

/** One versioned step of a parameterised object's schema (a store table, a rollup table). */
export interface ObjectMigrationStep {
  /** Runs in the migration's transaction, after the object's advisory lock is held. */
  up(trx: Kysely<any>): Promise<void>
}

/** The bookkeeping table: one row per object (e.g. `store:public.rag_chunks`). */
export const OBJECT_VERSION_TABLE = 'pgscale_object_version'

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
  const current = await readObjectVersion(db, key, options.relation)
  if (current.state === 'unreadable')
    throw new MigrationRequiredError(
      key,
      `GRANT SELECT ON ${OBJECT_VERSION_TABLE} TO <this role>`,
      `${key}: this role may not read ${OBJECT_VERSION_TABLE}`,
      {
        cause: current.cause,
      },
    )
  if (current.state === 'present') {
    const mismatch = compare(withDefaults(current.config), config)
    if (mismatch) throw new SchemaMismatchError(`${key} exists with a different configuration: ${mismatch}`)
    if (current.version === steps.length) return { from: current.version, to: current.version }
  }
  if (options.migrate === false) {
    const why = current.state === 'present' ? `is at version ${current.version} of ${steps.length}` : 'does not exist'
    throw new MigrationRequiredError(key, command, `${key} ${why} and this store opens with migrate: false`)
  }
  try {
    return await runObjectMigration(db, key, config, steps, { ...options, compare, withDefaults })
  } catch (err) {
    if (err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege)
      throw new MigrationRequiredError(key, command, `${key} needs DDL this role may not run (${err.message}); nothing was changed`, {
        cause: err,
      })
    throw err
  }
}

type ObjectVersion =
  { state: 'present'; version: number; config: Record<string, unknown> } | { state: 'missing' } | { state: 'unreadable'; cause: unknown }

/** The recorded version of `key`, read only (no DDL): missing when unrecorded or its relation is gone. */
async function readObjectVersion(db: Database, key: string, relation?: string): Promise<ObjectVersion> {
  const { rows: table } = await sql<{ present: boolean }>`select to_regclass(${OBJECT_VERSION_TABLE}) is not null as present`.execute(db)
  if (!table[0]?.present) return { state: 'missing' }
  try {
    const { rows } = await sql<{ version: number; config: Record<string, unknown>; present: boolean }>`
      select version, config, ${relation === undefined ? sql`true` : sql`to_regclass(${relation}) is not null`} as present
      from ${sql.table(OBJECT_VERSION_TABLE)} where object = ${key}`.execute(db)
    const row = rows[0]
    return row && row.present ? { state: 'present', version: row.version, config: row.config } : { state: 'missing' }
  } catch (err) {
    if (err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege) return { state: 'unreadable', cause: err }
    throw err
  }
}

async function runObjectMigration(
  db: Database,
  key: string,
  config: Readonly<Record<string, unknown>>,
  steps: readonly ObjectMigrationStep[],
  options: {
    relation?: string
    compare: (recorded: Record<string, unknown>, wanted: Readonly<Record<string, unknown>>) => string | undefined
    withDefaults: (recorded: Record<string, unknown>) => Record<string, unknown>
  },
): Promise<{ from: number; to: number }> {
  const { compare, withDefaults } = options
  await sql`create table if not exists ${sql.table(OBJECT_VERSION_TABLE)} (
      object text primary key,
      version integer not null,
      config jsonb not null
    )`
    .execute(db)
    .catch(async (err: unknown) => {
      // Two processes creating the table at once: one wins, the other sees 23505/42P07.
      const state = (err as { sqlState?: string }).sqlState
      if (state !== SQLSTATE.uniqueViolation && state !== SQLSTATE.duplicateTable) throw err
    })
  // The maintenance leases of the objects' index builds live beside their versions (lease-lock.ts).
  await ensureLeaseTable(db)
  return db.transaction(async (trx: DatabaseTransaction) => {
    await sql`select pg_advisory_xact_lock(hashtext('pgscale.object'), hashtext(${key}))`.execute(trx)
    const { rows } = await sql<{ version: number; config: Record<string, unknown> }>`
      select version, config from ${sql.table(OBJECT_VERSION_TABLE)} where object = ${key}`.execute(trx)
    let recorded = rows[0]
    if (recorded && options.relation) {
      const { rows: found } = await sql<{ present: boolean }>`select to_regclass(${options.relation}) is not null as present`.execute(trx)
      if (!found[0]?.present) recorded = undefined
    }
    if (recorded) {
      const mismatch = compare(withDefaults(recorded.config), config)
      if (mismatch) throw new SchemaMismatchError(`${key} exists with a different configuration: ${mismatch}`)
    }
    const from = recorded?.version ?? 0
    for (let version = from + 1; version <= steps.length; version++) await steps[version - 1]!.up(trx)
    if (from < steps.length || !recorded) {
      await sql`insert into ${sql.table(OBJECT_VERSION_TABLE)} (object, version, config)
        values (${key}, ${steps.length}, ${JSON.stringify(config)}::jsonb)
        on conflict (object) do update set version = excluded.version, config = excluded.config`.execute(trx)
    }
    return { from, to: steps.length }
  })
}

function defaultCompare(recorded: Record<string, unknown>, wanted: Readonly<Record<string, unknown>>): string | undefined {
  const diffs = Object.keys(wanted)
    .filter((k) => JSON.stringify(recorded[k]) !== JSON.stringify(wanted[k]))
    .map((k) => `${k} is ${JSON.stringify(recorded[k])}, configured ${JSON.stringify(wanted[k])}`)
  return diffs.length ? diffs.join('; ') : undefined
}
