import { Migrator, type Kysely, type Migration } from 'kysely'
import { vectorExtensionMigration } from './vector-extension-migration.js'
import { MigrationError } from '../../errors.js'

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /** Extra migrations run after pgscale's own (e.g. a rollup table's); names must sort after them. */
  migrations?: Record<string, Migration>
  /** Schema of the bookkeeping tables. Default: the search path's first (`public`). */
  migrationTableSchema?: string
}

/** pgscale's own schema changes, in order: a static map, so it works from `dist/`, bundlers and tests alike. */
const builtIn: Record<string, Migration> = { '0001-vector-extension': vectorExtensionMigration }

/** Kysely's bookkeeping table for pgscale's migrations; apart from an app's own `kysely_migration`. */
export const MIGRATION_TABLE = 'pgscale_migration'

/**
 * Brings the database to pgscale's latest schema with Kysely's `Migrator` (locked, so two
 * processes migrating at once is safe); returns the names it applied now.
 *
 * ### Examples
 * ```ts
 * const applied = await migrate(db) // ['0001-vector-extension'] the first time, [] after
 * ```
 */
export async function migrate(db: Kysely<any>, options: MigrateOptions = {}): Promise<string[]> {
  const all = { ...builtIn, ...options.migrations }
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => all },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: `${MIGRATION_TABLE}_lock`,
    migrationTableSchema: options.migrationTableSchema,
  })
  const { error, results = [] } = await migrator.migrateToLatest()
  if (error) throw new MigrationError(results, error)
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName)
}
