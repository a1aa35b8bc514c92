import { sql, type RawBuilder } from 'kysely'
import type { FleetTable, RollupParts } from '../config/index.js'
import { monthBounds, sourceBuckets, targetColumnList } from '../sql/index.js'
import type { FleetPlan } from './fleet-plan.js'

const id = (name: string) => sql.raw(`"${name}"`)
const BUCKETS = 'pgscale_buckets'

/** The level's columns in the order every statement writes them: (tenant,) month, groups, measures, non-null counts, (buckets). */
function fleetColumns(f: FleetTable, plan: FleetPlan): RawBuilder<unknown> {
  const names = [
    ...(f.perTenant ? ['tenant_id'] : []),
    'month',
    ...f.groupBy,
    ...plan.measures.map((m) => m.name),
    ...plan.measures.flatMap((m) => m.nonNull ?? []),
    ...(f.perTenant ? [] : [BUCKETS]),
  ]
  return sql.raw(names.map((n) => `"${n}"`).join(', '))
}

/** `month, "g1", …` of the fleet's groups, or `month` alone. */
function fleetKey(f: FleetTable, alias?: string): RawBuilder<unknown> {
  const prefix = alias ? `${alias}.` : ''
  return sql.raw([`${prefix}month`, ...f.groupBy.map((g) => `${prefix}"${g}"`)].join(', '))
}

/** The rollup table's month, groups and measures: what a tenant write returns for the delta. */
function returned(p: RollupParts): RawBuilder<unknown> {
  return sql.raw(['month', ...p.target.groupBy.map((g) => `"${g.name}"`), ...p.target.measures.map((m) => `"${m.name}"`)].join(', '))
}

/**
 * The upsert that adds a tenant write's delta to the fleet: the rows it wrote (`written`) minus the
 * rows it replaced (`removed`), summed per fleet bucket, with each measure's count of non-null
 * contributions (a sum of only nulls stays null) and of contributing buckets (a fleet bucket at 0 is
 * deleted by {@link deleteEmptyFleetBuckets}). Two writers of one fleet bucket serialize on its row
 * (`ON CONFLICT DO UPDATE` adds to the latest committed version): no update is lost.
 */
function deltaUpsert(f: FleetTable, plan: FleetPlan): RawBuilder<unknown> {
  const key = fleetKey(f)
  const signed = (sign: '' | '-', from: string) =>
    sql.raw(
      `select month${f.groupBy.map((g) => `, "${g}"`).join('')}, ${plan.measures.map((m) => `${sign}"${m.name}" as "${m.name}"`).join(', ')}, ` +
        `${plan.measures.map((m) => `${sign}("${m.name}" is not null)::int as "${m.nonNull}"`).join(', ')}, ${sign}1 as ${BUCKETS} from ${from}`,
    )
  const sums = sql.raw(
    [...plan.measures.map((m) => `sum("${m.name}")`), ...plan.measures.map((m) => `sum("${m.nonNull}")`), `sum(${BUCKETS})`].join(', '),
  )
  const t = f.qualified
  const sets = sql.raw(
    [
      ...plan.measures.map(
        (m) =>
          `"${m.name}" = case when ${t}."${m.nonNull}" + excluded."${m.nonNull}" > 0 ` +
          `then coalesce(${t}."${m.name}", 0) + coalesce(excluded."${m.name}", 0) end`,
      ),
      ...plan.measures.map((m) => `"${m.nonNull}" = ${t}."${m.nonNull}" + excluded."${m.nonNull}"`),
      `${BUCKETS} = ${t}.${BUCKETS} + excluded.${BUCKETS}`,
    ].join(', '),
  )
  // A fleet bucket whose delta is zero in every column (the tenant's group did not change) is left
  // alone: its update would write the same values, lock the row and dirty a page for nothing.
  const changed = sql.raw(
    [...plan.measures.map((m) => `coalesce(sum("${m.name}"), 0) <> 0 or sum("${m.nonNull}") <> 0`), `sum(${BUCKETS}) <> 0`].join(' or '),
  )
  return sql`insert into ${sql.raw(t)} (${fleetColumns(f, plan)})
    select ${key}, ${sums} from (${signed('', 'written')} union all ${signed('-', 'removed')}) as d
    group by ${key} having ${changed} order by ${key}
    on conflict on constraint ${id(fleetKeyConstraint(f))} do update set ${sets}`
}

/**
 * A deferred per-tenant level's marks: each of the tenant's buckets of `list` (a date array) not
 * already pending inserted into the level's pending table — in the tenant statement, under the
 * buckets' locks, so no other writer of those buckets is open (see deferred-level.ts).
 *
 * ### Examples
 * ```ts
 * markPendingBuckets(level, sql`'7'::bigint`, sql`array['2025-03-01'::date]`)
 * ```
 */
export function markPendingBuckets(
  f: Pick<FleetTable, 'pending'>,
  tenant: RawBuilder<unknown>,
  list: RawBuilder<unknown>,
): RawBuilder<unknown> {
  const pending = sql.raw(f.pending!)
  return sql`insert into ${pending} (tenant_id, month)
    select ${tenant}, m from unnest(${list}) as u(m) where not exists (select from ${pending} as p where p.tenant_id = ${tenant} and p.month = u.m)`
}

/**
 * A write's mark on a deferred level: each of its months (a `{…}` date array as text) not already
 * pending inserted into the level's pending table. Runs in the write's transaction, under the
 * months' shared fleet locks, after its tenant statements. The table has no unique key on purpose:
 * a key would make the second writer of a month wait for the first one's commit; without it, two
 * writers that find no mark at once both insert one (a duplicate `refreshFleet` clears with the
 * rest), and once a month is marked its writers insert nothing. The locks, not the key, make it
 * safe: `refreshFleet` claims a month only under its exclusive lock, when no writer of it is open.
 *
 * ### Examples
 * ```ts
 * markPendingMonths(level, '{2025-03-01}')
 * ```
 */
export function markPendingMonths(f: Pick<FleetTable, 'pending'>, months: string): RawBuilder<unknown> {
  const pending = sql.raw(f.pending!)
  return sql`insert into ${pending} (month)
    select m from unnest(${months}::date[]) as u(m) where not exists (select from ${pending} as p where p.month = u.m)`
}

/**
 * A large drain's marks on a deferred per-tenant level's claimed buckets (its tenants' statements
 * left the level out): `tenants[i]` × `months[i]` (`{…}` array literals of the same length), those
 * not already pending. In the drain's transaction, under its bucket locks.
 *
 * ### Examples
 * ```ts
 * markPendingBucketKeys(parts, level, plan, '{"7","9"}', '{2025-03-01,2025-03-01}')
 * ```
 */
export function markPendingBucketKeys(
  p: RollupParts,
  f: FleetTable,
  _plan: FleetPlan,
  tenants: string,
  months: string,
): RawBuilder<unknown> {
  const pending = sql.raw(f.pending!)
  return sql`insert into ${pending} (tenant_id, month)
    select k.t, k.m from unnest(${tenants}::${sql.raw(p.target.tenantType)}[], ${months}::date[]) as k(t, m)
    where not exists (select from ${pending} as p where p.tenant_id = k.t and p.month = k.m)`
}

/** The name of the fleet table's unique key (month and groups). */
export function fleetKeyConstraint(f: Pick<FleetTable, 'qualified'>): string {
  const table = f.qualified.split('"."').pop()!.replace(/"/g, '')
  return `${table.slice(0, 55)}_key`
}

/** A level a tenant statement writes itself: a delta-kept level without the tenant, or a per-tenant level. */
export interface StatementLevel {
  fleet: FleetTable
  plan: FleetPlan
}

/**
 * The CTEs that write `levels` from the tenant statement's `removed` and `written` rows: a delta
 * level's upsert; a per-tenant level's rows of the tenant and months (`months`: the condition on
 * `month`) deleted, then its rows combined from `written` inserted — the statement rewrote every
 * bucket of those months, so `written` is all of them (an emptied month leaves no row); a deferred
 * per-tenant level's marks on the tenant's buckets of `list` (the months as a date array).
 */
function levelCtes(
  levels: readonly StatementLevel[],
  tenant: RawBuilder<unknown>,
  months: RawBuilder<unknown>,
  list: RawBuilder<unknown>,
): RawBuilder<unknown> {
  return sql.join(
    levels.flatMap(({ fleet: f, plan }, i) => {
      if (plan.mode === 'deferred') return [sql`${sql.raw(`pgscale_level_${i}`)} as (${markPendingBuckets(f, tenant, list)} returning 1)`]
      if (!f.perTenant) return [sql`${sql.raw(`pgscale_level_${i}`)} as (${deltaUpsert(f, plan)} returning 1)`]
      const gone = sql.raw(`pgscale_gone_${i}`)
      return [
        sql`${gone} as (delete from ${sql.raw(f.qualified)} where tenant_id = ${tenant} and ${months} returning 1)`,
        sql`${sql.raw(`pgscale_level_${i}`)} as (insert into ${sql.raw(f.qualified)} (${fleetColumns(f, plan)})
          select ${tenant}, ${fleetKey(f)}, ${combined(plan, { counts: false })} from written
          where (select count(*) from ${gone}) >= 0 group by ${fleetKey(f)} returning 1)`,
      ]
    }),
  )
}

/** The statement's end: every level CTE counted, so each runs to completion before it returns. */
function levelsDone(levels: readonly StatementLevel[]): RawBuilder<unknown> {
  return sql.raw(`select ${levels.map((_, i) => `(select count(*) from pgscale_level_${i})`).join(' + ')} as pgscale_levels`)
}

/**
 * The rollup's refresh of one bucket with its levels written in the same statement: delete the
 * bucket's rows (returning them), insert it recomputed from the source (returning the new rows),
 * then each level's part ({@link levelCtes}). The caller holds the fleet month's lock (when a level
 * without the tenant is kept), then the bucket's.
 *
 * ### Examples
 * ```ts
 * levelsRefreshStatement(parts, [{ fleet, plan }], 42, '2025-03-01')
 * ```
 */
export function levelsRefreshStatement(
  p: RollupParts,
  levels: readonly StatementLevel[],
  tenantId: unknown,
  month: unknown,
): RawBuilder<unknown> {
  const tenant = sql`${tenantId}::${sql.raw(p.target.tenantType)}`
  return sql`
    with removed as (
      delete from ${sql.raw(p.target.qualified)} where tenant_id = ${tenant} and month = ${month}::date
      returning ${returned(p)}
    ), fresh as (${sourceBuckets(p, tenantId, monthBounds(p, sql`${month}::date`))}
    ), written as (
      insert into ${sql.raw(p.target.qualified)} (${targetColumnList(p)})
      select ${tenant}, ${month}::date, fresh.* from fresh
      where (select count(*) from removed) >= 0
      returning ${returned(p)}
    ), ${levelCtes(levels, tenant, sql`month = ${month}::date`, sql`array[${month}::date]`)}
    ${levelsDone(levels)}`
}

/**
 * The rollup's rebuild of months (`YYYY-MM-01`, ascending) with its levels written in the same
 * statement (per-month range scans as `rebuildStatement`). The caller holds the months' fleet locks
 * (when a level without the tenant is kept), then the buckets'.
 *
 * ### Examples
 * ```ts
 * levelsRebuildStatement(parts, [{ fleet, plan }], 42, ['2025-01-01', '2025-02-01'])
 * ```
 */
export function levelsRebuildStatement(
  p: RollupParts,
  levels: readonly StatementLevel[],
  tenantId: unknown,
  months: unknown,
): RawBuilder<unknown> {
  const tenant = sql`${tenantId}::${sql.raw(p.target.tenantType)}`
  const bounds = monthBounds(p, sql`m`)
  return sql`
    with months as (
      select m as pgscale_month, ${bounds.lo} as pgscale_lo, ${bounds.hi} as pgscale_hi from unnest(${months}::date[]) as u(m)
    ), removed as (
      delete from ${sql.raw(p.target.qualified)} where tenant_id = ${tenant} and month = any(${months}::date[])
      returning ${returned(p)}
    ), fresh as (
      select months.pgscale_month, bucket.*
      from months cross join lateral (${sourceBuckets(p, tenantId, { lo: sql`months.pgscale_lo`, hi: sql`months.pgscale_hi` })}) as bucket
    ), written as (
      insert into ${sql.raw(p.target.qualified)} (${targetColumnList(p)})
      select ${tenant}, fresh.* from fresh
      where (select count(*) from removed) >= 0
      returning ${returned(p)}
    ), ${levelCtes(levels, tenant, sql`month = any(${months}::date[])`, sql`${months}::date[]`)}
    ${levelsDone(levels)}`
}

/**
 * Deletes the fleet buckets of `months` (a `{…}` date array as text) no tenant bucket contributes
 * to any more: what a delta-kept level runs after its tenant writes, in their transaction.
 *
 * ### Examples
 * ```ts
 * deleteEmptyFleetBuckets(fleet, '{2025-03-01}')
 * ```
 */
export function deleteEmptyFleetBuckets(f: FleetTable, months: string): RawBuilder<unknown> {
  return sql`delete from ${sql.raw(f.qualified)} where month = any(${months}::date[]) and ${sql.raw(BUCKETS)} = 0`
}

/**
 * How many rollup rows the months (a `{…}` date array as text) hold, read from a delta-kept fleet
 * level's bucket counts (a few rows a month, not the rollup table's): what a drain weighs against
 * the buckets it claimed, to choose deltas or one recomputation.
 *
 * ### Examples
 * ```ts
 * fleetRowCount(fleet, '{2025-03-01}')
 * ```
 */
export function fleetRowCount(f: FleetTable, months: string): RawBuilder<unknown> {
  return sql`select coalesce(sum(${sql.raw(BUCKETS)}), 0)::bigint::text as rows from ${sql.raw(f.qualified)} where month = any(${months}::date[])`
}

/** Each measure combined over the rollup table's rows of a level's bucket; with `counts`, the delta counts after them. */
function combined(plan: FleetPlan, options: { counts: boolean }): RawBuilder<unknown> {
  const of = (m: FleetPlan['measures'][number]) => {
    const c = `"${m.name}"`
    if (m.combiner === 'hll') return `hll_union_agg(${c})`
    if (m.combiner === 'tdigest') return `tdigest(${c})`
    return `${m.combiner}(${c})`
  }
  const counts = options.counts ? [...plan.measures.flatMap((m) => (m.nonNull ? [`count("${m.name}")`] : [])), 'count(*)'] : []
  return sql.raw([...plan.measures.map(of), ...counts].join(', '))
}

/**
 * Replaces the fleet buckets of `months` (a `{…}` date array as text) by the rollup table's rows of
 * those months combined over every tenant, one statement: what a recompute-kept level runs after
 * its tenant writes, in their transaction, under the months' fleet locks (taken before this
 * statement's snapshot, so it sees every write to those months that committed before).
 *
 * ### Examples
 * ```ts
 * recomputeFleetMonths(parts, fleet, plan, '{2025-03-01}')
 * ```
 */
export function recomputeFleetMonths(p: RollupParts, f: FleetTable, plan: FleetPlan, months: string): RawBuilder<unknown> {
  return sql`
    with gone as (delete from ${sql.raw(f.qualified)} where month = any(${months}::date[]) returning 1)
    insert into ${sql.raw(f.qualified)} (${fleetColumns(f, plan)})
    select ${fleetKey(f)}, ${combined(plan, { counts: true })} from ${sql.raw(p.target.qualified)}
    where month = any(${months}::date[]) and (select count(*) from gone) >= 0
    group by ${fleetKey(f)}`
}

/**
 * Replaces a per-tenant level's rows of the claimed buckets — `tenants[i]` × `months[i]` (`{…}`
 * array literals of the same length) — by the rollup table's rows of those buckets combined over
 * the dropped groups, one statement: what a large drain runs after its tenants' statements (which
 * then leave the level out), in their transaction and under their bucket locks. An emptied bucket
 * leaves no row.
 *
 * ### Examples
 * ```ts
 * recomputeTenantLevelBuckets(parts, level, plan, '{"7","9"}', '{2025-03-01,2025-03-01}')
 * ```
 */
export function recomputeTenantLevelBuckets(
  p: RollupParts,
  f: FleetTable,
  plan: FleetPlan,
  tenants: string,
  months: string,
): RawBuilder<unknown> {
  const keys = sql`select * from unnest(${tenants}::${sql.raw(p.target.tenantType)}[], ${months}::date[]) as k(pgscale_tenant, pgscale_month)`
  return sql`
    with keys as (${keys}),
    gone as (delete from ${sql.raw(f.qualified)} as l using keys where l.tenant_id = keys.pgscale_tenant and l.month = keys.pgscale_month returning 1)
    insert into ${sql.raw(f.qualified)} (${fleetColumns(f, plan)})
    select tenant_id, ${fleetKey(f)}, ${combined(plan, { counts: false })}
    from ${sql.raw(p.target.qualified)} join keys on tenant_id = keys.pgscale_tenant and month = keys.pgscale_month
    where (select count(*) from gone) >= 0
    group by tenant_id, ${fleetKey(f)}`
}

/**
 * The whole level from the rollup table (a per-tenant level: grouped by tenant too): what `create`
 * fills a new level with; with `onlyIntoEmpty`, nothing when the level holds a row (a migration
 * script run again).
 *
 * ### Examples
 * ```ts
 * fillFleet(parts, fleet, plan)
 * ```
 */
export function fillFleet(
  p: Pick<RollupParts, 'target'>,
  f: FleetTable,
  plan: FleetPlan,
  options: { onlyIntoEmpty?: boolean } = {},
): RawBuilder<unknown> {
  const empty = options.onlyIntoEmpty ? sql` where not exists (select from ${sql.raw(f.qualified)})` : sql``
  const key = f.perTenant ? sql`tenant_id, ${fleetKey(f)}` : fleetKey(f)
  return sql`insert into ${sql.raw(f.qualified)} (${fleetColumns(f, plan)})
    select ${key}, ${combined(plan, { counts: !f.perTenant })} from ${sql.raw(p.target.qualified)}${empty} group by ${key}`
}
