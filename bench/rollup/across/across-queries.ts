import { sql, type RawBuilder } from 'kysely'
import type { MonthlyRollup, ReadAcrossOptions } from '../../../src/index.js'
import type { DashboardMonths } from '../dashboard.js'

/** One admin view across tenants: the query an operator runs on the source, and what the rollup answers it with. */
export interface AcrossQuery {
  name: string
  source: RawBuilder<unknown>
  /** The rollup's reads (`readAcross`) that answer it; two for "this month vs a year ago". */
  rollup: ReadAcrossOptions[]
}

/**
 * The six aggregates of the expenses dashboard asked of the whole fleet (no tenant), and the top 20
 * tenants by spend per month, each as source SQL (local-month bounds in UTC) and as `readAcross`
 * options: what an admin view runs.
 *
 * ### Examples
 * ```ts
 * for (const q of acrossQueries(SOURCE, 'America/Mexico_City', dashboardMonths('2025-12-01'))) …
 * ```
 */
export function acrossQueries(source: string, zone: string, m: DashboardMonths): AcrossQuery[] {
  const s = sql.raw(source)
  const lo = (month: string) => sql`(${month}::date::timestamp at time zone ${zone})`
  const hi = (month: string) => sql`((${month}::date + interval '1 month')::timestamp at time zone ${zone})`
  const counted = sql`status <> 'cancelled'`
  const month = sql`date_trunc('month', paid_at at time zone ${zone})::date`
  const ym = (d: string) => d.slice(0, 7)
  return [
    {
      name: 'category totals, this month',
      source: sql`select category, sum(amount) as total, count(*) as count from ${s}
        where paid_at >= ${lo(m.thisMonth)} and paid_at < ${hi(m.thisMonth)} and ${counted} group by category`,
      rollup: [{ from: ym(m.thisMonth), to: ym(m.thisMonth) }],
    },
    {
      name: 'monthly series, last 12 months',
      source: sql`select ${month} as month, sum(amount) as total from ${s}
        where paid_at >= ${lo(m.twelveAgo)} and paid_at < ${hi(m.thisMonth)} and ${counted} group by 1 order by 1`,
      rollup: [{ from: ym(m.twelveAgo), to: ym(m.thisMonth), groupBy: [] }],
    },
    {
      name: 'year to date, total',
      source: sql`select sum(amount) as total, count(*) as count from ${s}
        where paid_at >= ${lo(m.january)} and paid_at < ${hi(m.thisMonth)} and ${counted}`,
      rollup: [{ from: ym(m.january), to: ym(m.thisMonth), groupBy: [], combineMonths: true }],
    },
    {
      name: 'year to date, by category',
      source: sql`select category, sum(amount) as total from ${s}
        where paid_at >= ${lo(m.january)} and paid_at < ${hi(m.thisMonth)} and ${counted} group by category order by total desc`,
      rollup: [{ from: ym(m.january), to: ym(m.thisMonth), combineMonths: true }],
    },
    {
      name: 'this month vs a year ago',
      source: sql`select ${month} as month, sum(amount) as total from ${s}
        where ${counted} and ((paid_at >= ${lo(m.thisMonth)} and paid_at < ${hi(m.thisMonth)})
          or (paid_at >= ${lo(m.sameMonthLastYear)} and paid_at < ${hi(m.sameMonthLastYear)})) group by 1 order by 1`,
      rollup: [
        { from: ym(m.sameMonthLastYear), to: ym(m.sameMonthLastYear), groupBy: [] },
        { from: ym(m.thisMonth), to: ym(m.thisMonth), groupBy: [] },
      ],
    },
    {
      name: 'top 5 categories, last 12 months',
      source: sql`select category, sum(amount) as total from ${s}
        where paid_at >= ${lo(m.twelveAgo)} and paid_at < ${hi(m.thisMonth)} and ${counted} group by category order by total desc limit 5`,
      rollup: [{ from: ym(m.twelveAgo), to: ym(m.thisMonth), combineMonths: true }],
    },
    {
      name: 'top 20 tenants by spend, per month (last 3 months)',
      source: sql`select * from (
          select month, tenant_id, total, row_number() over (partition by month order by total desc, tenant_id) as rank from (
            select ${month} as month, tenant_id, sum(amount) as total from ${s}
            where paid_at >= ${lo(threeBack(m))} and paid_at < ${hi(m.thisMonth)} and ${counted} group by 1, 2) g) r
        where rank <= 20 order by month, rank`,
      rollup: [{ from: ym(threeBack(m)), to: ym(m.thisMonth), groupBy: [], top: { by: 'total', n: 20 } }],
    },
  ]
}

function threeBack(m: DashboardMonths): string {
  const [y, mo] = m.thisMonth.split('-').map(Number) as [number, number]
  const total = y * 12 + (mo - 1) - 2
  return `${Math.floor(total / 12)}-${String((total % 12) + 1).padStart(2, '0')}-01`
}

/** Runs the rollup side of a query (its `readAcross` reads, in turn). */
export async function rollupSide(rollup: MonthlyRollup, db: Parameters<MonthlyRollup['readAcross']>[0], q: AcrossQuery): Promise<number> {
  let rows = 0
  for (const options of q.rollup) rows += (await rollup.readAcross(db, options)).length
  return rows
}
