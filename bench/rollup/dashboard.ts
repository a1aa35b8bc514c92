import { sql, type RawBuilder } from 'kysely'

/** The months a dashboard looks at, as `YYYY-MM-01` strings. */
export interface DashboardMonths {
  thisMonth: string
  twelveAgo: string
  january: string
  sameMonthLastYear: string
}

/** One dashboard aggregate, asked of the source (through its index) and of the rollup. */
export interface DashboardQuery {
  name: string
  source: RawBuilder<unknown>
  rollup: RawBuilder<unknown>
}

/** Months relative to `thisMonth` (`YYYY-MM-01`). */
export function dashboardMonths(thisMonth: string): DashboardMonths {
  const [y, m] = thisMonth.split('-').map(Number) as [number, number]
  const shift = (months: number) => {
    const total = y * 12 + (m - 1) + months
    return `${Math.floor(total / 12)}-${String((total % 12) + 1).padStart(2, '0')}-01`
  }
  return { thisMonth, twelveAgo: shift(-11), january: `${y}-01-01`, sameMonthLastYear: shift(-12) }
}

/**
 * The six aggregates of an expenses dashboard, each as the query an app runs on the source
 * (local-month bounds in UTC, so the `(tenant_id, paid_at)` index serves it) and on the rollup.
 */
export function dashboardQueries(source: string, rollup: string, zone: string, tenant: number, months: DashboardMonths): DashboardQuery[] {
  const s = sql.raw(source)
  const r = sql.raw(rollup)
  const lo = (month: string) => sql`(${month}::date::timestamp at time zone ${zone})`
  const hi = (month: string) => sql`((${month}::date + interval '1 month')::timestamp at time zone ${zone})`
  const counted = sql`status <> 'cancelled'`
  const { thisMonth, twelveAgo, january, sameMonthLastYear } = months
  return [
    {
      name: 'category totals, this month',
      source: sql`select category, sum(amount) as total, count(*) as count from ${s}
        where tenant_id = ${tenant} and paid_at >= ${lo(thisMonth)} and paid_at < ${hi(thisMonth)} and ${counted} group by category`,
      rollup: sql`select category, total, count from ${r} where tenant_id = ${tenant} and month = ${thisMonth}::date`,
    },
    {
      name: 'monthly series, last 12 months',
      source: sql`select date_trunc('month', paid_at at time zone ${zone})::date as month, sum(amount) as total from ${s}
        where tenant_id = ${tenant} and paid_at >= ${lo(twelveAgo)} and paid_at < ${hi(thisMonth)} and ${counted} group by 1 order by 1`,
      rollup: sql`select month, sum(total) as total from ${r}
        where tenant_id = ${tenant} and month >= ${twelveAgo}::date and month <= ${thisMonth}::date group by month order by month`,
    },
    {
      name: 'year to date, total',
      source: sql`select sum(amount) as total, count(*) as count from ${s}
        where tenant_id = ${tenant} and paid_at >= ${lo(january)} and paid_at < ${hi(thisMonth)} and ${counted}`,
      rollup: sql`select sum(total) as total, sum(count) as count from ${r}
        where tenant_id = ${tenant} and month >= ${january}::date and month <= ${thisMonth}::date`,
    },
    {
      name: 'year to date, by category',
      source: sql`select category, sum(amount) as total from ${s}
        where tenant_id = ${tenant} and paid_at >= ${lo(january)} and paid_at < ${hi(thisMonth)} and ${counted} group by category order by total desc`,
      rollup: sql`select category, sum(total) as total from ${r}
        where tenant_id = ${tenant} and month >= ${january}::date and month <= ${thisMonth}::date group by category order by total desc`,
    },
    {
      name: 'this month vs a year ago',
      source: sql`select date_trunc('month', paid_at at time zone ${zone})::date as month, sum(amount) as total from ${s}
        where tenant_id = ${tenant} and ${counted} and (
          (paid_at >= ${lo(thisMonth)} and paid_at < ${hi(thisMonth)}) or (paid_at >= ${lo(sameMonthLastYear)} and paid_at < ${hi(sameMonthLastYear)}))
        group by 1 order by 1`,
      rollup: sql`select month, sum(total) as total from ${r}
        where tenant_id = ${tenant} and month in (${thisMonth}::date, ${sameMonthLastYear}::date) group by month order by month`,
    },
    {
      name: 'top 5 categories, last 12 months',
      source: sql`select category, sum(amount) as total from ${s}
        where tenant_id = ${tenant} and paid_at >= ${lo(twelveAgo)} and paid_at < ${hi(thisMonth)} and ${counted}
        group by category order by total desc limit 5`,
      rollup: sql`select category, sum(total) as total from ${r}
        where tenant_id = ${tenant} and month >= ${twelveAgo}::date and month <= ${thisMonth}::date
        group by category order by total desc limit 5`,
    },
  ]
}
