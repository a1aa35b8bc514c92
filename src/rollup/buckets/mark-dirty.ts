import { sql, type Kysely } from 'kysely'
import { InvalidArgumentError, MigrationRequiredError } from '../../errors.js'
import { assertTenantId, dirtyKeyNames, type MarkDirtyOptions } from '../config/index.js'
import { monthOfColumn, rollupKey } from '../schema/index.js'
import type { RollupContext } from './rollup-context.js'

/** At most this many moments per call: one statement, one array parameter. */
const MAX_MOMENTS = 100_000

/** The moments as text the server casts to the source's `at` type; anything else is refused, typed. */
function momentsText(at: unknown): string[] {
  if (!Array.isArray(at) || at.length > MAX_MOMENTS)
    throw new InvalidArgumentError(`markDirty: at must be an array of up to ${MAX_MOMENTS} moments (Date or ISO-8601 string)`)
  return at.map((moment: unknown, i) => {
    if (moment instanceof Date && !Number.isNaN(moment.getTime())) return moment.toISOString()
    if (typeof moment === 'string' && !Number.isNaN(Date.parse(moment))) return moment
    throw new InvalidArgumentError(`markDirty: at[${i}] is not a Date or an ISO-8601 string: ${JSON.stringify(moment)}`)
  })
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
  const tenantId = assertTenantId(options?.tenantId)
  const moments = momentsText(options.at)
  if (moments.length === 0) return { months: 0 }
  const plain = ctx.scoped(db.withoutPlugins(), tenantId)
  const atKind = await ctx.validate(plain)
  const { log } = dirtyKeyNames(ctx.parts)
  const month = monthOfColumn(atKind, `m.at::${atKind}`, ctx.parts.zone)
  // A plain INSERT … SELECT of constants: on Citus, routed to the tenant's shard of the log.
  const statement = sql`
    insert into ${sql.raw(log)} (tenant_id, month)
    select distinct ${tenantId}::${sql.raw(ctx.parts.target.tenantType)}, ${sql.raw(month)}
      from unnest(${moments}::text[]) as m(at)`
  try {
    const result = await statement.execute(plain)
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
