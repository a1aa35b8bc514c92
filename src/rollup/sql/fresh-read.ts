import { sql, type RawBuilder } from 'kysely'
import { dirtyKeyNames, type RollupParts } from '../config/index.js'
import { monthBounds, sourceBuckets, targetColumnList } from './rollup-sql.js'

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
  const columns = targetColumnList(p)
  return sql`(
    with dirty as (
      select distinct month from ${log} where tenant_id = ${tenant} and month >= ${from}::date and month <= ${to}::date
    )
    select ${columns} from ${sql.raw(p.target.qualified)}
    where tenant_id = ${tenant} and month >= ${from}::date and month <= ${to}::date and month not in (select month from dirty)
    union all
    select ${tenant}, dirty.month, bucket.* from dirty cross join lateral (
      ${sourceBuckets(p, tenantId, monthBounds(p, sql`dirty.month`), { castToTarget: true })}
    ) as bucket
  )`
}

/**
 * {@link freshRollupRows} for every tenant (or those of `tenants`): the stored rows of clean
 * buckets in `[from, to]`, and each bucket the dirty-key log holds aggregated live from the source
 * — one statement, one snapshot, what an admin view across tenants reads with `fresh: true`.
 *
 * ### Examples
 * ```ts
 * sql`select * from ${freshRowsAcross(parts, '2025-01-01', '2025-12-01')} as r`
 * ```
 */
export function freshRowsAcross(p: RollupParts, from: string, to: string, tenants?: RawBuilder<unknown>): RawBuilder<unknown> {
  const log = sql.raw(dirtyKeyNames(p).log)
  const columns = targetColumnList(p)
  const inTenants = tenants ? sql`and tenant_id = any(${tenants})` : sql``
  return sql`(
    with dirty as (
      select distinct tenant_id, month from ${log} where month >= ${from}::date and month <= ${to}::date ${inTenants}
    )
    select ${columns} from ${sql.raw(p.target.qualified)} r
    where month >= ${from}::date and month <= ${to}::date ${inTenants}
      and not exists (select 1 from dirty d where d.tenant_id = r.tenant_id and d.month = r.month)
    union all
    select dirty.tenant_id, dirty.month, bucket.* from dirty cross join lateral (
      ${sourceBuckets(p, sql`dirty.tenant_id`, monthBounds(p, sql`dirty.month`), { castToTarget: true })}
    ) as bucket
  )`
}
