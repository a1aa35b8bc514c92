import { sql, type Kysely } from 'kysely'
import { shortHash } from '../../sql/identifier.js'
import { dirtyKeyNames, type RollupParts } from '../config/index.js'
import { logPlacement, type LogPlacement } from './log-placement.js'
import { trackingDdl } from './tracking-ddl.js'

const COMMENT_PREFIX = 'pgscale tracking '

/**
 * A fingerprint of a rollup's tracking DDL (the log, the function, the triggers): written as the
 * trigger function's comment by `track`, so a later `track` of the same definition finds it done
 * by reading the catalog, with no DDL — what lets the app's runtime role call it.
 *
 * ### Examples
 * ```ts
 * trackingComment(parts) // 'pgscale tracking 3fa1c09e2b7d4410'
 * ```
 */
export function trackingComment(parts: RollupParts, placement: LogPlacement = 'local'): string {
  return `${COMMENT_PREFIX}${shortHash(trackingDdl(parts, placement).join('\n'), 16)}`
}

/** The statement that records {@link trackingComment} on the trigger function. */
export function trackingCommentStatement(parts: RollupParts, placement: LogPlacement = 'local'): string {
  return `comment on function ${dirtyKeyNames(parts).fn}() is '${trackingComment(parts, placement)}'`
}

/**
 * Whether the source is tracked, read from the catalog only (`placement` as `logPlacement` says
 * when not given): `current` (the log, the function with
 * this definition's fingerprint and all four triggers are there), `stale` (tracked by another
 * definition, or partly), or `none` (no trigger of this rollup on the source).
 *
 * ### Examples
 * ```ts
 * if ((await trackingState(db, parts)) === 'current') return // nothing to create
 * ```
 */
export async function trackingState(db: Kysely<any>, parts: RollupParts, placement?: LogPlacement): Promise<'current' | 'stale' | 'none'> {
  const n = dirtyKeyNames(parts)
  const where = placement ?? (await logPlacement(db, parts))
  const { rows } = await sql<{ log: boolean; comment: string | null; triggers: number }>`
    select to_regclass(${n.log}) is not null as log,
      obj_description(to_regprocedure(${`${n.fn}()`}), 'pg_proc') as comment,
      (select count(*)::int from pg_trigger where tgrelid = to_regclass(${parts.source})
         and tgname = any(${[...Object.values(n.triggers)]}::text[])) as triggers`.execute(db)
  const state = rows[0]!
  if (state.triggers === 0) return 'none'
  return state.log && state.triggers === 4 && state.comment === trackingComment(parts, where) ? 'current' : 'stale'
}
