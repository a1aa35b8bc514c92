import { sql } from 'kysely'
import { bucketAggregate, localMonth } from '../../../src/bench-kit.js'
import { median, summarize } from '../../report/stats.js'
import { dashboardMonths, dashboardQueries } from '../dashboard.js'
import { SCHEMA, SOURCE, TARGET, time, type RollupRun, type TenantResult } from '../rollup-run.js'

/**
 * Step 3: one tenant's dashboard from the source and from the rollup, its refresh, its rebuild.
 *
 * ### Examples
 * ```ts
 * const big = await measureTenant(run, 1)
 * ```
 */
export async function measureTenant(run: RollupRun, tenantId: number): Promise<TenantResult> {
  const { db, o } = run
  const thisMonth = localMonth(run.until, o.zone)
  const { rows: counts } = await sql<{ n: number; bucket: number }>`
    select count(*)::int as n, count(*) filter (where paid_at >= (${thisMonth}::date::timestamp at time zone ${o.zone}))::int as bucket
    from ${sql.raw(SOURCE)} where tenant_id = ${tenantId}`.execute(db)
  return {
    tenantId,
    rows: counts[0]!.n,
    bucketRows: counts[0]!.bucket,
    dashboard: await measureDashboard(run, tenantId, thisMonth),
    refresh: await measureRefresh(run, tenantId, thisMonth),
    rebuild: await measureRebuild(run, tenantId),
  }
}

/** The dashboard's queries on the source and on the rollup, interleaved after one warm-up each. */
async function measureDashboard(run: RollupRun, tenantId: number, thisMonth: string): Promise<TenantResult['dashboard']> {
  const dashboard: TenantResult['dashboard'] = []
  for (const q of dashboardQueries(SOURCE, TARGET, run.o.zone, tenantId, dashboardMonths(thisMonth))) {
    await time(run.db, q.source)
    await time(run.db, q.rollup)
    const src: number[] = []
    const rol: number[] = []
    for (let i = 0; i < run.o.reps; i++) {
      src.push(await time(run.db, q.source))
      rol.push(await time(run.db, q.rollup))
    }
    dashboard.push({ name: q.name, sourceMs: summarize(src), rollupMs: summarize(rol), speedup: median(src) / median(rol) })
  }
  return dashboard
}

/**
 * What a write pays: a refresh of this month's bucket, beside the bare aggregate of that bucket and
 * the cheapest write transaction (a one-row INSERT, autocommit) — the floor a refresh is held to.
 *
 * ### Examples
 * ```ts
 * const { ratio } = await measureRefresh(run, 1, '2025-12-01')
 * ```
 */
export async function measureRefresh(run: RollupRun, tenantId: number, thisMonth: string): Promise<TenantResult['refresh']> {
  const bare = bucketAggregate(run.rollup.parts, tenantId, thisMonth)
  const insert = sql`insert into ${sql.raw(`${SCHEMA}.write_floor`)} values (${tenantId})`
  await sql.raw(`create table if not exists ${SCHEMA}.write_floor (tenant_id bigint)`).execute(run.db)
  const refreshMs: number[] = []
  const bareMs: number[] = []
  const insertMs: number[] = []
  const ratios: number[] = []
  const floorRatios: number[] = []
  await run.rollup.refreshAt(run.db, { tenantId, moment: run.until })
  for (let i = 0; i < run.o.reps; i++) {
    const b = await time(run.db, bare)
    const w = await time(run.db, insert)
    const t0 = performance.now()
    await run.rollup.refreshAt(run.db, { tenantId, moment: run.until })
    const r = performance.now() - t0
    bareMs.push(b)
    insertMs.push(w)
    refreshMs.push(r)
    ratios.push(r / b)
    floorRatios.push(r / (b + w))
  }
  return {
    refreshMs: summarize(refreshMs),
    bareAggregateMs: summarize(bareMs),
    ratio: median(ratios),
    oneRowInsertMs: summarize(insertMs),
    floorRatio: median(floorRatios),
  }
}

/**
 * Healing: rebuild every month, beside one aggregate scan of the tenant's rows.
 *
 * ### Examples
 * ```ts
 * const { medianSeconds } = await measureRebuild(run, 1)
 * ```
 */
export async function measureRebuild(run: RollupRun, tenantId: number): Promise<TenantResult['rebuild']> {
  const { since, until } = run
  const bareScan = sql`select category, sum(amount), count(*) from ${sql.raw(SOURCE)}
    where tenant_id = ${tenantId} and paid_at >= ${since} and paid_at <= ${until} and status <> 'cancelled' group by category`
  const reps = Math.max(3, Math.min(run.o.reps, 7))
  const seconds: number[] = []
  const scanSeconds: number[] = []
  const ratios: number[] = []
  let months = 0
  for (let i = 0; i < reps; i++) {
    const s = (await time(run.db, bareScan)) / 1000
    const t0 = performance.now()
    months = (await run.rollup.rebuild(run.db, { tenantId, since, until })).months
    const r = (performance.now() - t0) / 1000
    scanSeconds.push(s)
    seconds.push(r)
    ratios.push(r / s)
  }
  return { months, seconds, medianSeconds: median(seconds), bareScanSeconds: scanSeconds, ratio: median(ratios) }
}
