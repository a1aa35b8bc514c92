import { sql, type RawBuilder } from 'kysely'
import { dirtyKeyNames } from './dirty-keys.js'
import { monthBounds, type RollupParts } from './rollup-sql.js'

const id = (name: string) => sql.raw(`"${name}"`)

/**
 * The rows a fresh read reads, as a subquery shaped like the rollup table (`tenant_id`, `month`,
 * the groups, the measures in their declared types): the stored rows of the tenant's clean months
 * from `from` to `to`, and for each month the dirty-key log holds, the bucket aggregated live from
 * the source (a range scan of its `(tenant, at)` index per dirty month). One statement, one
 * snapshot: a committed write's rows and its log row are both in it, or neither; a drain's refresh
 * and its removal of the log row likewise — so the result equals a from-scratch aggregate of the
 * snapshot, whether or not a drain has run.
 *
 * ### Examples
 * ```ts
 * sql`select * from ${freshRollupRows(parts, 42, '2025-01-01', '2025-12-01')} as r`
 * ```
 */
export function freshRollupRows(p: RollupParts, tenantId: unknown, from: string, to: string): RawBuilder<unknown> {
  const log = sql.raw(dirtyKeyNames(p).log)
  const tenant = sql`${tenantId}::${sql.raw(p.target.tenantType)}`
  const groups = p.groupBy.map(id)
  const groupList = groups.length ? sql.join(groups) : undefined
  const measures = sql.join(
    p.measures.map((m) => sql`(${m.expression})::${sql.raw(p.target.measures.find((t) => t.name === m.name)!.type)} as ${id(m.name)}`),
  )
  const columns = sql.raw(
    ['tenant_id', 'month', ...p.target.groupBy.map((g) => `"${g.name}"`), ...p.target.measures.map((m) => `"${m.name}"`)].join(', '),
  )
  const { lo, hi } = monthBounds(p, sql`dirty.month`)
  return sql`(
    with dirty as (
      select distinct month from ${log} where tenant_id = ${tenant} and month >= ${from}::date and month <= ${to}::date
    )
    select ${columns} from ${sql.raw(p.target.qualified)}
    where tenant_id = ${tenant} and month >= ${from}::date and month <= ${to}::date and month not in (select month from dirty)
    union all
    select ${tenant}, dirty.month, bucket.* from dirty cross join lateral (
      select ${groupList ? sql`${groupList}, ` : sql``}${measures}
      from ${sql.raw(p.source)}
      where ${id(p.tenant)} = ${tenantId} and ${id(p.at)} >= ${lo} and ${id(p.at)} < ${hi} and ${p.where ? sql`(${p.where})` : sql`true`}
      ${groupList ? sql`group by ${groupList}` : sql``}
    ) as bucket
  )`
}
