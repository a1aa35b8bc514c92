import { sql, type Kysely } from 'kysely'
import { MigrationRequiredError, toPgScaleError } from '../../errors.js'
import { dirtyKeyNames } from '../config/index.js'
import { rollupKey } from '../schema/index.js'
import type { RollupContext } from './rollup-context.js'

/**
 * `work`, with any server error it fails with — through pgscale's `Database`, the app's own Kysely
 * or a pool — as a `PgScaleError` (a `DatabaseError` with the SQLSTATE, the driver's error as
 * `cause`); pgscale's own errors and others unchanged. Every public rollup method returns through it.
 *
 * ### Examples
 * ```ts
 * return typedErrors(refreshAt(ctx, appKysely, options)) // a unique violation: DatabaseError, sqlState '23505'
 * ```
 */
export async function typedErrors<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    throw toPgScaleError(err)
  }
}

/** Rollups whose dirty-key log was seen (checked once per rollup object, the first time it is there). */
const tracked = new WeakMap<RollupContext, Promise<void>>()

/**
 * Refuses a call that needs tracking (a fresh read, `refreshDirty`, `drain`) on a rollup whose
 * dirty-key log does not exist, with a `MigrationRequiredError` naming `rollup.track(db)` — instead
 * of the server's `relation "…_dirty" does not exist` after other statements. One catalog read,
 * the first time per rollup object; remembered once it succeeds.
 *
 * ### Examples
 * ```ts
 * await requireTracking(ctx, db, 'refreshDirty')
 * ```
 */
export function requireTracking(ctx: RollupContext, db: Kysely<any>, what: string): Promise<void> {
  let seen = tracked.get(ctx)
  if (!seen) {
    const log = dirtyKeyNames(ctx.parts).log
    seen = sql<{ present: boolean }>`select to_regclass(${log}) is not null as present`.execute(db).then(({ rows }) => {
      if (rows[0]?.present) return
      throw new MigrationRequiredError(
        rollupKey(ctx.parts),
        'rollup.track(db)',
        `${what}: ${log} does not exist (the rollup is not tracked)`,
      )
    })
    tracked.set(ctx, seen)
    seen.catch(() => {
      if (tracked.get(ctx) === seen) tracked.delete(ctx)
    })
  }
  return seen
}
