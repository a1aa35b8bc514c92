import { sql, type Kysely } from 'kysely'
import { DatabaseError, ExtensionMissingError } from '../../errors.js'
import { SQLSTATE } from '../../sql/sqlstate.js'
import type { SketchKind } from '../config/index.js'

const PACKAGES: Record<SketchKind, string> = { hll: 'hll', tdigest: 'tdigest' }

/**
 * Creates the extensions the sketch columns need (`create extension if not exists`); when the
 * server does not have one, an {@link ExtensionMissingError} that names Debian's package. Two
 * callers at once both succeed (the loser's unique violation means the other created it).
 *
 * ### Examples
 * ```ts
 * await ensureSketchExtensions(db, ['hll'])
 * ```
 */
export async function ensureSketchExtensions(db: Kysely<any>, kinds: readonly SketchKind[]): Promise<void> {
  for (const kind of new Set(kinds)) {
    const { rows } = await sql<{ available: boolean; installed: boolean; major: string }>`
      select exists (select 1 from pg_available_extensions where name = ${kind}) as available,
        exists (select 1 from pg_extension where extname = ${kind}) as installed,
        current_setting('server_version_num')::int / 10000 as major`.execute(db)
    const state = rows[0]!
    if (state.installed) continue
    if (!state.available)
      throw new ExtensionMissingError(
        `the ${kind} extension is not on this server (its ${kind} measures need it): install Debian's postgresql-${state.major}-${PACKAGES[kind]} (npm run db:install does), or build it for this server`,
      )
    try {
      await sql.raw(`create extension if not exists ${kind}`).execute(db)
    } catch (err) {
      // Two processes creating it at once: the loser sees a unique violation; the extension exists.
      if (err instanceof DatabaseError && (err.sqlState === SQLSTATE.uniqueViolation || err.sqlState === SQLSTATE.duplicateObject)) continue
      throw new ExtensionMissingError(
        `could not create the ${kind} extension (${(err as Error).message}): run CREATE EXTENSION ${kind} as its owner`,
        {
          cause: err,
        },
      )
    }
  }
}
