import { sql, type Kysely, type RawBuilder } from 'kysely'
import { InvalidArgumentError } from '../../errors.js'
import { assertTenantId, keptGroups, monthOf, type ReadOptions, type RollupRow } from '../config/index.js'
import { assertPercentiles, freshRollupRows, measureOutput } from '../sql/index.js'
import type { RollupContext } from './rollup-context.js'
import { requireTracking } from './typed-errors.js'
import { ReplicaSet } from '../../replicas/index.js'

/**
 * A tenant's rows from month `from` to month `to`, as `{ month: 'YYYY-MM', ...groups, ...measures }`.
 *
 * ### Examples
 * ```ts
 * await read(ctx, db, { tenantId: 42, from: '2025-01', to: '2025-12', groupBy: [] })
 * ```
 */
export async function read(ctx: RollupContext, db: Kysely<any> | ReplicaSet, options: ReadOptions): Promise<RollupRow[]> {
  // Every option checked before anything is sent (a replica's position included).
  checkRead(ctx, options)
  assertPercentiles(options.percentiles, ctx.parts.target.measures)
  // With replicas: a replica that has replayed the tenant's noted writes (and the token), else the primary.
  if (db instanceof ReplicaSet) return db.read(String(options.tenantId), options, (node) => read(ctx, node, options))
  const plain = db.withoutPlugins()
  if (options.fresh) {
    await ctx.validate(plain)
    await requireTracking(ctx, plain, 'read({ fresh: true })')
  }
  return (await readQuery(ctx, options).execute(ctx.scoped(plain, options.tenantId))).rows
}

/**
 * The statement {@link read} runs, without running it.
 *
 * ### Examples
 * ```ts
 * const plan = await explain(db, readQuery(ctx, { tenantId: 42, from: '2025-01', to: '2025-12' }))
 * ```
 */
export function readQuery(ctx: RollupContext, options: ReadOptions): RawBuilder<RollupRow> {
  const { tenantId, from, to, keep, allGroups } = checkRead(ctx, options)
  const { target } = ctx.parts
  let t = sql.raw(target.qualified)
  if (options.fresh) {
    if (!ctx.atKind)
      throw new InvalidArgumentError(
        "readQuery({ fresh: true }) needs the at column's type from the server: call read, refreshAt or track once first",
      )
    t = sql`${freshRollupRows({ ...ctx.parts, atKind: ctx.atKind }, tenantId, from, to)} as r`
  }
  const percentiles = assertPercentiles(options.percentiles, target.measures)
  const tenant = sql`${tenantId}::${sql.raw(target.tenantType)}`
  const keptCols = keep.map((g) => sql.raw(`"${g}"`))
  // Folding groups or months combines the measures: sums add, sketches unite.
  const combined = keep.length !== allGroups.length || options.combineMonths === true
  const measures = target.measures.flatMap((m) => {
    const out = measureOutput({ ...m, expression: ctx.parts.measures.find((x) => x.name === m.name)!.expression }, combined, percentiles)
    return out ? [out] : []
  })
  const range = sql`tenant_id = ${tenant} and month >= ${from}::date and month <= ${to}::date`
  if (options.combineMonths) {
    const label = `${from.slice(0, 7)}..${to.slice(0, 7)}`
    return sql<RollupRow>`select ${sql.join([sql`${label}::text as month`, ...keptCols, ...measures])} from ${t}
      where ${range}
      ${keptCols.length ? sql`group by ${sql.join(keptCols)} order by ${sql.join(keptCols)}` : sql`having count(*) > 0`}`
  }
  const monthCol = sql`to_char(month, 'YYYY-MM') as month`
  const order = sql.join([sql`month`, ...keptCols])
  if (!combined) return sql<RollupRow>`select ${sql.join([monthCol, ...keptCols, ...measures])} from ${t} where ${range} order by ${order}`
  return sql<RollupRow>`select ${sql.join([monthCol, ...keptCols, ...measures])} from ${t} where ${range}
    group by ${order} order by ${order}`
}

/** The read's tenant, month range and kept groups, checked. */
function checkRead(ctx: RollupContext, options: ReadOptions) {
  const tenantId = assertTenantId(options?.tenantId, ctx.parts.target.tenantType)
  const from = monthOf(options.from, ctx.parts.zone, 'from')
  const to = monthOf(options.to, ctx.parts.zone, 'to')
  if (from > to) throw new InvalidArgumentError(`read: from (${from.slice(0, 7)}) is after to (${to.slice(0, 7)})`)
  const { target } = ctx.parts
  const allGroups = target.groupBy.map((g) => g.name)
  const keep = keptGroups(options.groupBy, allGroups, 'read')
  if (options.fresh !== undefined && typeof options.fresh !== 'boolean') throw new InvalidArgumentError('read: fresh must be a boolean')
  if (options.combineMonths !== undefined && typeof options.combineMonths !== 'boolean')
    throw new InvalidArgumentError('read: combineMonths must be a boolean')
  return { tenantId, from, to, keep, allGroups }
}
