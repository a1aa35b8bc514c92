import type { Kysely } from 'kysely'
import { Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import { inlineParameters, isInlineValue, type InlineValue } from '../../sql/literal.js'
import { assertTenantId, monthOf, monthsBetween, type RebuildOptions, type RefreshAtOptions } from '../config/index.js'
import type { RollupContext } from './rollup-context.js'

/**
 * Recomputes one bucket — the tenant's local month around `moment` — from its source rows and
 * replaces it, under the bucket's advisory lock: one message where the handle allows (the lock
 * and the refresh as one implicit transaction), else in the caller's transaction or its own.
 *
 * ### Examples
 * ```ts
 * await refreshAt(ctx, db, { tenantId: 42, moment: new Date() })
 * ```
 */
export async function refreshAt(ctx: RollupContext, db: Kysely<any>, options: RefreshAtOptions): Promise<void> {
  const tenantId = assertTenantId(options?.tenantId, ctx.parts.target.tenantType)
  const month = monthOf(options.moment, ctx.parts.zone)
  const plain = ctx.scoped(db.withoutPlugins(), tenantId, { write: true })
  const { refresh } = ctx.statementsFor(await ctx.validate(plain))
  // A fleet level's lock first (before any bucket lock), its part after the tenant statement.
  const fleet = ctx.fleetWrite([month])
  const locks = [...fleet.locks, ctx.lockStatement(tenantId, [month])]
  const statement = refresh({ tenant: tenantId, month })
  // One round trip where the handle allows: the locks and the refresh as one message (one implicit
  // transaction; the refresh's snapshot is taken after the lock is granted, as in three trips).
  const queries = [statement, ...fleet.after]
  if (
    plain instanceof Database &&
    plain.sendsOneMessage &&
    !plain.isTransaction &&
    ctx.inlinable(plain) &&
    queries.every((q) => q.parameters.every(isInlineValue))
  ) {
    const texts = queries.map((q) => inlineParameters(q.sql, q.parameters as InlineValue[]))
    if ((await plain.sendAsOneMessage([...locks, ...texts])) !== undefined) return ctx.wrote(db, [tenantId])
  }
  await ctx.write(plain, locks, statement, fleet.after)
  await ctx.wrote(db, [tenantId])
}

/**
 * Heals every month from `since` to `until` (local months, inclusive) in one set-based statement
 * under the same locks as `refreshAt`.
 *
 * ### Examples
 * ```ts
 * await rebuild(ctx, db, { tenantId: 42, since: '2024-01-01', until: new Date() }) // { months: … }
 * ```
 */
export async function rebuild(ctx: RollupContext, db: Kysely<any>, options: RebuildOptions): Promise<{ months: number }> {
  const tenantId = assertTenantId(options?.tenantId, ctx.parts.target.tenantType)
  const first = monthOf(options.since, ctx.parts.zone, 'since')
  const last = monthOf(options.until, ctx.parts.zone, 'until')
  if (first > last) throw new InvalidArgumentError(`rebuild: since (${first.slice(0, 7)}) is after until (${last.slice(0, 7)})`)
  const months = monthsBetween(first, last)
  if (months.length > 1200) throw new InvalidArgumentError('rebuild: the range spans more than 100 years')
  const plain = ctx.scoped(db.withoutPlugins(), tenantId, { write: true })
  const { rebuild: statement } = ctx.statementsFor(await ctx.validate(plain))
  // JIT off: the planner overestimates the per-month scans and compiling costs more than it saves.
  const fleet = ctx.fleetWrite(months)
  await ctx.write(
    plain,
    [`SET LOCAL jit = off`, ...fleet.locks, ctx.lockStatement(tenantId, months)],
    statement({ tenant: tenantId, months }),
    fleet.after,
  )
  await ctx.wrote(db, [tenantId])
  return { months: months.length }
}
