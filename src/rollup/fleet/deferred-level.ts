import { CompiledQuery, sql, type Kysely } from 'kysely'
import { InvalidArgumentError } from '../../errors.js'
import { advisoryXactLock, int32Hash } from '../../sql/advisory-lock.js'
import { arrayLiteral } from '../../sql/literal.js'
import { compileSql } from '../../sql/statement-template.js'
import type { FleetTable, RollupParts } from '../config/index.js'
import type { RollupContext } from '../buckets/index.js'
import type { FleetPlan } from './fleet-plan.js'
import { recomputeFleetMonths, recomputeTenantLevelBuckets } from './fleet-sql.js'

/** A deferred level and its plan: what `refreshFleet` recomputes. */
export interface DeferredLevel {
  fleet: FleetTable & { pending: string }
  plan: FleetPlan
}

/**
 * What `rollup.refreshFleet` did: the months it recomputed (deferred levels without the tenant),
 * the tenant buckets (deferred per-tenant levels), and how many stay pending (up to 10,000 counted).
 */
export interface RefreshFleetResult {
  months: number
  buckets: number
  remaining: number
}

/** Options of `rollup.refreshFleet`. */
export interface RefreshFleetOptions {
  /**
   * The most pending months recomputed in one call, oldest first (default 120; 1-10,000) — and
   * as many tenant buckets of a deferred per-tenant level.
   */
  limit?: number
}

/**
 * What `readAcross` reads for a deferred level, one statement's snapshot: the level's rows of every
 * month not pending, and the rollup table's rows (every tenant's) of the pending months — the same
 * columns (month, the level's groups, the measures), combined by the outer query by each measure's
 * rule, so the answer equals the level recomputed now.
 *
 * ### Examples
 * ```ts
 * deferredSource(parts, level) // '(select month, "category", "total" from "expenses_fleet" where … union all select … from "expenses_monthly" where …)'
 * ```
 */
export function deferredSource(p: Pick<RollupParts, 'target'>, f: FleetTable): string {
  const names = ['month', ...f.groupBy.map((g) => `"${g}"`), ...p.target.measures.map((m) => `"${m.name}"`)]
  if (f.perTenant) {
    // Per tenant: the level's rows of buckets not pending, the rollup table's of the pending buckets
    // (reached from the few pending rows through the rollup table's key).
    const columns = ['tenant_id', ...names]
    return (
      `(select ${columns.join(', ')} from ${f.qualified} as l where not exists ` +
      `(select from ${f.pending} as p where p.tenant_id = l.tenant_id and p.month = l.month)` +
      ` union all select ${columns.map((c) => `r.${c}`).join(', ')} from (select distinct tenant_id, month from ${f.pending}) as p` +
      ` join ${p.target.qualified} as r on r.tenant_id = p.tenant_id and r.month = p.month)`
    )
  }
  const columns = names.join(', ')
  const pending = `array(select distinct month from ${f.pending})`
  return (
    `(select ${columns} from ${f.qualified} where month <> all(${pending})` +
    ` union all select ${columns} from ${p.target.qualified} where month = any(${pending}))`
  )
}

/**
 * Brings a rollup's deferred levels up to date: in one transaction, up to `limit` pending months
 * (oldest first) are locked exclusively — every write of those months that holds their shared lock
 * has committed, and new ones wait —, taken from the pending table, and recomputed from the rollup
 * table (one statement per level); a deferred per-tenant level's pending buckets likewise, under
 * their bucket locks (taken after the month locks, in tenant and month order, as writers take
 * them). A write that marks a month or bucket after the claim leaves it pending for the next call.
 * Runs as fleet-wide work (under row-level security: every tenant's buckets).
 *
 * ### Examples
 * ```ts
 * await refreshFleet(ctx, levels, lockClass, db) // { months: 2, buckets: 0, remaining: 0 }
 * ```
 */
export async function refreshFleet(
  ctx: RollupContext,
  levels: readonly DeferredLevel[],
  lockClass: number,
  db: Kysely<any>,
  options: RefreshFleetOptions = {},
): Promise<RefreshFleetResult> {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('refreshFleet: options must be an object')
  const limit = options.limit ?? 120
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new InvalidArgumentError(`refreshFleet: limit must be an integer from 1 to 10000, got ${String(options.limit)}`)
  const plain = ctx.scoped(db.withoutPlugins())
  await ctx.validate(plain)
  if (!levels.length) return { months: 0, buckets: 0, remaining: 0 }
  await ctx.fleet?.level?.ready(plain)
  const fleetWide = levels.filter((l) => !l.fleet.perTenant)
  const perTenant = levels.filter((l) => l.fleet.perTenant)
  const run = async (trx: Kysely<any>): Promise<RefreshFleetResult> => {
    const months = fleetWide.length ? await pendingMonths(trx, fleetWide, limit) : []
    const buckets = perTenant.length ? await pendingBuckets(trx, perTenant, limit) : []
    if (months.length || buckets.length) await trx.executeQuery(CompiledQuery.raw('SET LOCAL jit = off'))
    if (months.length)
      await trx.executeQuery(
        CompiledQuery.raw(
          advisoryXactLock(
            lockClass,
            months.map((m) => int32Hash(m)),
          ),
        ),
      )
    for (const [tenant, tenantMonths] of byTenant(buckets))
      await trx.executeQuery(CompiledQuery.raw(ctx.lockStatement(tenant, tenantMonths)))
    if (months.length)
      for (const { fleet, plan } of fleetWide) {
        const { rows } = await sql<{ month: string }>`
          delete from ${sql.raw(fleet.pending)} where month = any(${arrayLiteral(months)}::date[])
          returning to_char(month, 'YYYY-MM-DD') as month`.execute(trx)
        if (rows.length)
          await trx.executeQuery(compileSql(recomputeFleetMonths(ctx.parts, fleet, plan, arrayLiteral(rows.map((r) => r.month).sort()))))
      }
    if (buckets.length) for (const level of perTenant) await recomputeBuckets(ctx, trx, level, buckets)
    return { months: months.length, buckets: buckets.length, remaining: await remainingPending(trx, levels) }
  }
  const result = await (plain.isTransaction ? run(plain) : plain.transaction().execute(run))
  if (result.months || result.buckets) await ctx.wrote(db, [])
  return result
}

/** A tenant bucket of a deferred per-tenant level: the tenant as text, the month as `YYYY-MM-DD`. */
interface PendingBucket {
  tenant: string
  month: string
}

/** The buckets grouped by tenant, in the order given (tenant, then month). */
function byTenant(buckets: readonly PendingBucket[]): Map<string, string[]> {
  const grouped = new Map<string, string[]>()
  for (const b of buckets) grouped.set(b.tenant, [...(grouped.get(b.tenant) ?? []), b.month])
  return grouped
}

/** Claims `buckets` from a per-tenant level's pending table and recomputes its rows of the ones it held. */
async function recomputeBuckets(
  ctx: RollupContext,
  trx: Kysely<any>,
  level: DeferredLevel,
  buckets: readonly PendingBucket[],
): Promise<void> {
  const type = sql.raw(ctx.parts.target.tenantType)
  const { rows } = await sql<PendingBucket>`
    delete from ${sql.raw(level.fleet.pending)} as p
    using unnest(${arrayLiteral(buckets.map((b) => b.tenant))}::${type}[], ${arrayLiteral(buckets.map((b) => b.month))}::date[]) as k(t, m)
    where p.tenant_id = k.t and p.month = k.m
    returning p.tenant_id::text as tenant, to_char(p.month, 'YYYY-MM-DD') as month`.execute(trx)
  const claimed = [...new Map(rows.map((r) => [`${r.tenant}\u0000${r.month}`, r])).values()]
  if (!claimed.length) return
  await trx.executeQuery(
    compileSql(
      recomputeTenantLevelBuckets(
        ctx.parts,
        level.fleet,
        level.plan,
        arrayLiteral(claimed.map((b) => b.tenant)),
        arrayLiteral(claimed.map((b) => b.month)),
      ),
    ),
  )
}

/** Up to `limit` pending buckets of the per-tenant levels, in tenant and month order (the tenant column's own order, as a drain's). */
async function pendingBuckets(trx: Kysely<any>, levels: readonly DeferredLevel[], limit: number): Promise<PendingBucket[]> {
  const union = sql.join(
    levels.map(({ fleet }) => sql`select tenant_id, month from ${sql.raw(fleet.pending)}`),
    sql` union `,
  )
  const { rows } = await sql<PendingBucket>`
    select tenant_id::text as tenant, to_char(month, 'YYYY-MM-DD') as month from (${union}) as p
    order by p.tenant_id, p.month limit ${limit}`.execute(trx)
  return rows
}

/** Up to `limit` pending months of the levels, oldest first, as `YYYY-MM-DD`. */
async function pendingMonths(trx: Kysely<any>, levels: readonly DeferredLevel[], limit: number): Promise<string[]> {
  const union = sql.join(
    levels.map(({ fleet }) => sql`select month from ${sql.raw(fleet.pending)}`),
    sql` union `,
  )
  const { rows } = await sql<{ month: string }>`
    select to_char(month, 'YYYY-MM-DD') as month from (${union}) as p order by 1 limit ${limit}`.execute(trx)
  return rows.map((r) => r.month)
}

/** The months and buckets still pending after a call (counted up to 10,000). */
async function remainingPending(trx: Kysely<any>, levels: readonly DeferredLevel[]): Promise<number> {
  const union = sql.join(
    levels.map(({ fleet }) =>
      fleet.perTenant
        ? sql`select tenant_id::text as t, month from ${sql.raw(fleet.pending)}`
        : sql`select null::text as t, month from ${sql.raw(fleet.pending)}`,
    ),
    sql` union `,
  )
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from (select 1 from (${union}) as p limit 10000) as c`.execute(trx)
  return rows[0]?.n ?? 0
}
