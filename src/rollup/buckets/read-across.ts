import { sql, type Kysely, type RawBuilder } from 'kysely'
import { InvalidArgumentError } from '../../errors.js'
import { arrayLiteral } from '../../sql/literal.js'
import { assertTenantId, keptGroups, monthOf, type ReadAcrossOptions, type RollupAcrossRow } from '../config/index.js'
import { assertPercentiles, freshRowsAcross, measureOutput } from '../sql/index.js'
import type { RollupContext } from './rollup-context.js'
import { requireTracking } from './typed-errors.js'
import { ReplicaSet } from '../../replicas/index.js'

/**
 * An admin view across tenants, from the rollup: every tenant's buckets (or those of `tenants`)
 * from `from` to `to`, the measures combined over tenants (and the groups not kept) by their rules
 * — sums and counts add, min/max, hll sketches unite (never add), t-digests merge; anything else
 * is refused — or per tenant, or the top `n` tenants by a measure. A view without tenant detail
 * (no `perTenant`, `top` or `tenants`, not `fresh`, kept groups the fleet level keeps) reads the
 * rollup's fleet level when it declares one; a view a per-tenant level answers (not `fresh`, kept
 * groups it keeps) reads that level. Its own method, never the
 * tenant-scoped path; under row-level security it runs as pgscale's fleet-wide work. On Citus,
 * `fresh` is refused (typed): drain first. Through a `ReplicaSet`: a replica that has replayed
 * every write of this rollup this process made (refreshes, rebuilds, drains), else the primary;
 * `fresh` reads the primary.
 *
 * ### Examples
 * ```ts
 * await readAcross(ctx, db, { from: '2025-01', to: '2025-12', groupBy: [] })                    // revenue by month, all tenants
 * await readAcross(ctx, db, { from: '2025-10', to: '2025-12', combineMonths: true, top: { by: 'total', n: 20 } })
 * await readAcross(ctx, replicas, { from: '2025-01', to: '2025-12', groupBy: [] })                // a replica past this process's refreshes
 * ```
 */
export async function readAcross(ctx: RollupContext, db: Kysely<any> | ReplicaSet, options: ReadAcrossOptions): Promise<RollupAcrossRow[]> {
  if (db instanceof ReplicaSet) {
    checkAcross(ctx, options) // the options checked before a replica is chosen
    // A replica that has replayed every write of this rollup made in this process (and the token);
    // `fresh` also reads the source, whose writes are the app's: the primary answers it.
    const routing = options.fresh ? { consistency: 'primary' as const } : options
    return db.read(ctx.acrossKey, routing, (node) => readAcross(ctx, node, options))
  }
  const plain = db.withoutPlugins()
  if (options?.fresh) {
    checkAcross(ctx, options) // the options checked before anything is sent
    await ctx.validate(plain)
    await requireTracking(ctx, plain, 'readAcross({ fresh: true })')
    // Citus cannot plan the live aggregate of every tenant's dirty months (a lateral join grouped
    // without the distribution column): refused before anything runs; drain, then read.
    if ((await ctx.placement(plain)) === 'citus')
      throw new InvalidArgumentError(
        'readAcross({ fresh: true }) is not supported on a Citus-distributed source: run refreshDirty (or drain) first, then readAcross without fresh',
      )
  }
  // A view a level answers reads it: the levels' tables checked once (a MigrationRequiredError when missing).
  const level = ctx.fleet?.level
  if (level && fleetSource(ctx, checkAcross(ctx, options)) !== undefined) await level.ready(plain)
  return (await readAcrossQuery(ctx, options).execute(ctx.scoped(plain))).rows
}

/** The table of the level that answers the view (the fleet level, else a per-tenant level; never fresh), else undefined. */
function fleetSource(ctx: RollupContext, o: ReturnType<typeof checkAcross>): string | undefined {
  return ctx.fleet?.level?.across({ keep: o.keep, perTenant: o.perTenant, tenants: o.tenants !== undefined, fresh: o.fresh })
}

/** The statement {@link readAcross} runs. */
export function readAcrossQuery(ctx: RollupContext, options: ReadAcrossOptions): RawBuilder<RollupAcrossRow> {
  const o = checkAcross(ctx, options)
  const { target } = ctx.parts
  const tenants = o.tenants ? sql`${arrayLiteral(o.tenants.map(String))}::${sql.raw(target.tenantType)}[]` : undefined
  const fleet = fleetSource(ctx, o)
  let source = sql`${sql.raw(fleet ?? target.qualified)}`
  if (o.fresh) {
    if (!ctx.atKind)
      throw new InvalidArgumentError("readAcrossQuery({ fresh: true }) needs the at column's type: call readAcross or refreshAt once first")
    source = sql`${freshRowsAcross({ ...ctx.parts, atKind: ctx.atKind }, o.from, o.to, tenants)}`
  }
  const keptCols = o.keep.map((g) => sql.raw(`"${g}"`))
  const measures = target.measures.flatMap((m) => {
    const out = measureOutput({ ...m, expression: ctx.parts.measures.find((x) => x.name === m.name)!.expression }, true, o.percentiles)
    return out ? [out] : []
  })
  const month = o.combineMonths ? sql`${`${o.from.slice(0, 7)}..${o.to.slice(0, 7)}`}::text` : sql`to_char(month, 'YYYY-MM')`
  const groupKeys = [...(o.perTenant ? [sql`tenant_id`] : []), ...(o.combineMonths ? [] : [sql`month`]), ...keptCols]
  const range = sql`month >= ${o.from}::date and month <= ${o.to}::date${tenants ? sql` and tenant_id = any(${tenants})` : sql``}`
  const select = sql.join([sql`${month} as month`, ...(o.perTenant ? [sql`tenant_id`] : []), ...keptCols, ...measures])
  const grouped = sql`select ${select} from ${source} as r where ${range}
    ${groupKeys.length ? sql`group by ${sql.join(groupKeys)}` : sql`having count(*) > 0`}`
  if (!o.top) return sql<RollupAcrossRow>`${grouped} order by ${sql.join([sql`1`, ...(o.perTenant ? [sql`tenant_id`] : []), ...keptCols])}`
  const by = sql.raw(`"${o.top.by}"`)
  const partition = sql.join([sql`month`, ...keptCols])
  const direction = sql.raw(o.top.order === 'asc' ? 'asc' : 'desc')
  return sql<RollupAcrossRow>`select * from (
      select g.*, row_number() over (partition by ${partition} order by ${by} ${direction} nulls last, tenant_id)::int as rank
      from (${grouped}) as g
    ) ranked where rank <= ${o.top.n} order by ${sql.join([sql`month`, ...keptCols, sql`rank`])}`
}

/** The options, checked: months, kept groups, tenants, the top's measure. */
function checkAcross(ctx: RollupContext, options: ReadAcrossOptions) {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('readAcross needs { from, to }')
  const from = monthOf(options.from, ctx.parts.zone, 'from')
  const to = monthOf(options.to, ctx.parts.zone, 'to')
  if (from > to) throw new InvalidArgumentError(`readAcross: from (${from.slice(0, 7)}) is after to (${to.slice(0, 7)})`)
  const { target } = ctx.parts
  const allGroups = target.groupBy.map((g) => g.name)
  const keep = keptGroups(options.groupBy, allGroups, 'readAcross')
  for (const flag of ['fresh', 'combineMonths', 'perTenant'] as const)
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean')
      throw new InvalidArgumentError(`readAcross: ${flag} must be a boolean`)
  if (
    options.tenants !== undefined &&
    (!Array.isArray(options.tenants) || options.tenants.length === 0 || options.tenants.length > 100_000)
  )
    throw new InvalidArgumentError('readAcross: tenants must be a non-empty array of at most 100,000 tenant ids')
  const tenants = options.tenants?.map((t) => assertTenantId(t, target.tenantType))
  const top = options.top
  if (top !== undefined) {
    if (top === null || typeof top !== 'object' || !target.measures.some((m) => m.name === top.by && m.type !== 'tdigest'))
      throw new InvalidArgumentError(
        `readAcross: top.by must name a measure of ${target.name} other than a tdigest, got ${JSON.stringify(top?.by)}`,
      )
    if (!Number.isInteger(top.n) || top.n < 1 || top.n > 100_000)
      throw new InvalidArgumentError('readAcross: top.n must be an integer from 1 to 100,000')
    if (top.order !== undefined && top.order !== 'asc' && top.order !== 'desc')
      throw new InvalidArgumentError("readAcross: top.order must be 'asc' or 'desc'")
  }
  const percentiles = assertPercentiles(options.percentiles, target.measures)
  return {
    from,
    to,
    keep,
    tenants,
    top,
    percentiles,
    fresh: options.fresh === true,
    combineMonths: options.combineMonths === true,
    perTenant: options.perTenant === true || top !== undefined,
  }
}
