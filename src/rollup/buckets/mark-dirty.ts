import { sql, type Kysely } from 'kysely'
import { InvalidArgumentError, MigrationRequiredError } from '../../errors.js'
import { assertTenantId, dirtyKeyNames, monthInput, type MarkDirtyOptions } from '../config/index.js'
import { rollupKey } from '../schema/index.js'
import type { RollupContext } from './rollup-context.js'

/** At most this many moments per call: one statement, one array parameter. */
const MAX_MOMENTS = 100_000

/**
 * The distinct local months (`YYYY-MM-01`) of the moments, by the rollup's month grammar without
 * bare `'YYYY-MM'` (a row's moment, not a month); anything else is refused, typed, before sending.
 */
function monthsOf(at: unknown, zone: string): string[] {
  if (!Array.isArray(at) || at.length > MAX_MOMENTS)
    throw new InvalidArgumentError(`markDirty: at must be an array of up to ${MAX_MOMENTS} moments (Date, ISO 8601 string or epoch ms)`)
  return [...new Set(at.map((moment: unknown, i) => monthInput(moment, zone, `markDirty: at[${i}]`, { months: false })))].sort()
}

/** Is `err` PostgreSQL's "relation does not exist" (from pgscale's pools or the app's own driver)? */
function isMissingRelation(err: unknown): boolean {
  const e = err as { sqlState?: unknown; code?: unknown }
  return e?.sqlState === '42P01' || e?.code === '42P01'
}

/**
 * Marks one tenant's buckets holding `at` dirty in the log, in `db` (the writer's own transaction,
 * so the mark commits or rolls back with its write): for writes the triggers do not see — a load
 * with `session_replication_role = replica`, a logical-replication apply. One statement, routed to
 * the tenant's shard on Citus. The rollup must be tracked (the log exists).
 *
 * ### Examples
 * ```ts
 * await markDirty(ctx, trx, { tenantId: 42, at: [new Date('2025-03-14T10:00:00Z')] })
 * ```
 */
export async function markDirty(ctx: RollupContext, db: Kysely<any>, options: MarkDirtyOptions): Promise<{ months: number }> {
  const tenantId = assertTenantId(options?.tenantId, ctx.parts.target.tenantType)
  const months = monthsOf(options.at, ctx.parts.zone)
  if (months.length === 0) return { months: 0 }
  const plain = ctx.scoped(db.withoutPlugins(), tenantId)
  await ctx.validate(plain)
  const { log } = dirtyKeyNames(ctx.parts)
  // A plain INSERT … SELECT of constants: on Citus, routed to the tenant's shard of the log. The
  // months are computed here by the same grammar as every other method (an instant's local month
  // in the zone; a date or wall-clock time's own month), never through the session's TimeZone.
  const statement = sql`
    insert into ${sql.raw(log)} (tenant_id, month)
    select ${tenantId}::${sql.raw(ctx.parts.target.tenantType)}, m
      from unnest(${months}::date[]) as u(m)`
  try {
    const result = await statement.execute(plain)
    await ctx.wrote(db, [tenantId])
    return { months: Number(result.numAffectedRows ?? 0n) }
  } catch (err) {
    if (!isMissingRelation(err)) throw err
    throw new MigrationRequiredError(
      rollupKey(ctx.parts),
      'rollup.track(db)',
      `markDirty: ${log} does not exist (the rollup is not tracked)`,
      {
        cause: err,
      },
    )
  }
}
