import { sql, type RawBuilder } from 'kysely'
import type { RollupParts } from '../config/index.js'

/**
 * The half-open bounds `[lo, hi)` of the local month starting at `month` (a `date` expression), in
 * the `at` column's own type: instants for `timestamptz` (the zone's midnight, DST-correct), the
 * wall-clock midnight for `timestamp`, the date for `date`. Never through the session TimeZone.
 */
export function monthBounds(p: RollupParts, month: RawBuilder<unknown>): { lo: RawBuilder<unknown>; hi: RawBuilder<unknown> } {
  switch (p.atKind) {
    case 'timestamp':
      return { lo: sql`${month}::timestamp`, hi: sql`(${month} + interval '1 month')::timestamp` }
    case 'date':
      return { lo: sql`${month}`, hi: sql`(${month} + interval '1 month')::date` }
    case 'timestamptz':
      return {
        lo: sql`(${month}::timestamp at time zone ${p.zone})`,
        hi: sql`((${month} + interval '1 month')::timestamp at time zone ${p.zone})`,
      }
  }
}

const id = (name: string) => sql.raw(`"${name}"`)

function pieces(p: RollupParts) {
  const groups = p.groupBy.map(id)
  const targetColumns = sql.raw(
    ['tenant_id', 'month', ...p.target.groupBy.map((g) => `"${g.name}"`), ...p.target.measures.map((m) => `"${m.name}"`)].join(', '),
  )
  const measureSelect = sql.join(p.measures.map((m) => sql`${m.expression} as ${id(m.name)}`))
  const where = p.where ? sql`(${p.where})` : sql`true`
  const tenantParam = (value: unknown) => sql`${value}::${sql.raw(p.target.tenantType)}`
  return { groups, targetColumns, measureSelect, where, tenantParam }
}

/**
 * Replaces one bucket in one statement: delete the bucket's rows, then insert it recomputed from
 * the source's rows in `[local month start, next month start)`. The insert waits for the delete
 * (it is gated on the delete's count), and the caller holds the bucket's advisory lock, taken in
 * an earlier statement so this statement's snapshot sees every refresh that committed before.
 */
export function refreshStatement(p: RollupParts, tenantId: unknown, month: unknown): RawBuilder<unknown> {
  const { targetColumns, tenantParam } = pieces(p)
  return sql`
    with removed as (
      delete from ${sql.raw(p.target.qualified)} where tenant_id = ${tenantParam(tenantId)} and month = ${month}::date
      returning 1
    ), fresh as (${bucketAggregate(p, tenantId, month)})
    insert into ${sql.raw(p.target.qualified)} (${targetColumns})
    select ${tenantParam(tenantId)}, ${month}::date, fresh.* from fresh
    where (select count(*) from removed) >= 0`
}

/**
 * Rebuilds the given months (`YYYY-MM-01`, ascending) in one statement: for each local month a
 * range scan of the source's `(tenant, at)` index, aggregated by group (a LATERAL subquery, so the
 * planner walks the months and scans each range once, whatever it estimates), replacing the
 * range's rows. The months come as a bound array, so the planner knows how many there are.
 */
export function rebuildStatement(p: RollupParts, tenantId: unknown, months: unknown): RawBuilder<unknown> {
  const { targetColumns, tenantParam } = pieces(p)
  return sql`
    with months as (
      select m as pgscale_month,
        ${monthBounds(p, sql`m`).lo} as pgscale_lo,
        ${monthBounds(p, sql`m`).hi} as pgscale_hi
      from unnest(${months}::date[]) as u(m)
    ), removed as (
      delete from ${sql.raw(p.target.qualified)}
      where tenant_id = ${tenantParam(tenantId)} and month = any(${months}::date[])
      returning 1
    ), fresh as (
      select months.pgscale_month, bucket.*
      from months cross join lateral (${sourceBuckets(p, tenantId, { lo: sql`months.pgscale_lo`, hi: sql`months.pgscale_hi` })}
      ) as bucket
    )
    insert into ${sql.raw(p.target.qualified)} (${targetColumns})
    select ${tenantParam(tenantId)}, fresh.* from fresh
    where (select count(*) from removed) >= 0`
}

/** The bare aggregate of one bucket, without lock or write: what a refresh is compared with. */
export function bucketAggregate(p: RollupParts, tenantId: unknown, month: unknown): RawBuilder<unknown> {
  return sourceBuckets(p, tenantId, monthBounds(p, sql`${month}::date`))
}

/**
 * The source's rows of the tenant in `[lo, hi)`, aggregated by group — what every refresh,
 * rebuild and fresh read computes a bucket from. A bucket without rows has no row, with groups or
 * without (`having count(*) > 0`: an aggregate without `group by` would return one row of nulls
 * and zeros for an empty month, a tenant with no rows included). With `castToTarget`, each measure is cast to its
 * rollup column's type (for a read that stands in for the stored row).
 */
export function sourceBuckets(
  p: RollupParts,
  tenantId: unknown,
  bounds: { lo: RawBuilder<unknown>; hi: RawBuilder<unknown> },
  options: { castToTarget?: boolean } = {},
): RawBuilder<unknown> {
  const { groups, where } = pieces(p)
  const groupList = groups.length ? sql.join(groups) : undefined
  const measures = options.castToTarget
    ? sql.join(
        p.measures.map((m) => sql`(${m.expression})::${sql.raw(p.target.measures.find((t) => t.name === m.name)!.type)} as ${id(m.name)}`),
      )
    : pieces(p).measureSelect
  return sql`
    select ${groupList ? sql`${groupList}, ` : sql``}${measures}
    from ${sql.raw(p.source)}
    where ${id(p.tenant)} = ${tenantId}
      and ${id(p.at)} >= ${bounds.lo}
      and ${id(p.at)} < ${bounds.hi}
      and ${where}
    ${groupList ? sql`group by ${groupList}` : sql`having count(*) > 0`}`
}

/** The rollup table's columns in order (`tenant_id, month, groups…, measures…`), quoted. */
export function targetColumnList(p: RollupParts): RawBuilder<unknown> {
  return pieces(p).targetColumns
}
