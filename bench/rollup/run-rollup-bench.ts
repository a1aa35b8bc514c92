import { sql, type RawBuilder } from 'kysely'
import type { ProvisionedDatabase } from '../../src/index.js'
import { bucketAggregate } from '../../src/bench-kit.js'
import { localMonth, monthsBetween } from '../../src/bench-kit.js'
import { reportHeader, type ReportHeader } from '../report/header.js'
import { progress } from '../report/progress.js'
import { median, summarize, type Percentiles } from '../report/stats.js'
import { expensesCopyText, expensesDdl, expensesRollup, generateExpenses, type ExpenseRow } from '../synthetic/expenses.js'
import { dashboardMonths, dashboardQueries } from './dashboard.js'

/** Parameters of a rollup-bench run. */
export interface RollupBenchOptions {
  rows: number
  months: number
  tenants: number
  bigTenantRows: number
  zone: string
  reps: number
  seed: string
  /** Keep the bench schema afterwards. */
  keep: boolean
  /** Draw progress bars (a TTY, and not `--json -`). */
  showProgress: boolean
}

/** What one tenant measured. */
export interface TenantResult {
  tenantId: number
  rows: number
  bucketRows: number
  dashboard: Array<{ name: string; sourceMs: Percentiles; rollupMs: Percentiles; speedup: number }>
  refresh: { refreshMs: Percentiles; bareAggregateMs: Percentiles; ratio: number }
  rebuild: { months: number; seconds: number[]; medianSeconds: number; bareScanSeconds: number[]; ratio: number }
}

/** The whole report, as `--json` writes it. */
export interface RollupBenchReport extends ReportHeader {
  seeding: { rows: number; seconds: number; rowsPerSecond: number; how: string; indexSeconds: number; rollupSeconds: number }
  tenants: { big: TenantResult; typical: TenantResult }
  sizes: { sourceTableBytes: number; sourceIndexesBytes: number; rollupBytes: number; rollupRows: number }
  anchors: Record<string, string>
  findings: string[]
}

const SCHEMA = 'pgscale_bench'
const SOURCE = `${SCHEMA}.expenses`
const TARGET = `${SCHEMA}.expenses_monthly`
const END = new Date('2025-12-31T23:00:00Z')

/** Runs rollup-bench on a provisioned database and returns its report. */
export async function runRollupBench(provisioned: ProvisionedDatabase, o: RollupBenchOptions, log: (line: string) => void): Promise<RollupBenchReport> {
  const { db, info } = provisioned
  const header = reportHeader('rollup-bench', info, { ...o, showProgress: undefined, keep: undefined }, `${o.reps} repetitions per measurement, interleaved side by side; p50/p95; ratios are medians of per-repetition ratios`)

  // 1. Seed -------------------------------------------------------------------------------------
  await sql.raw(`drop schema if exists ${SCHEMA} cascade`).execute(db)
  await sql.raw(`create schema ${SCHEMA}`).execute(db)
  const ddl = expensesDdl(SOURCE)
  await sql.raw(ddl.table).execute(db)
  const bar = progress('seeding expenses', o.rows, { enabled: o.showProgress })
  const spec = { seed: o.seed, rows: o.rows, tenants: o.tenants, bigTenantRows: o.bigTenantRows, months: o.months, end: END }
  let seeded = 0
  function* counted(): Generator<ExpenseRow> {
    for (const row of generateExpenses(spec)) {
      seeded++
      if (seeded % 25_000 === 0) bar.update(seeded)
      yield row
    }
  }
  let started = performance.now()
  await db.copyFrom(`copy ${SOURCE} (tenant_id, paid_at, category, amount, status) from stdin`, expensesCopyText(counted()))
  const seedSeconds = (performance.now() - started) / 1000
  bar.done(`${o.rows.toLocaleString('en-US')} rows in ${seedSeconds.toFixed(1)} s (COPY text, streamed)`)
  started = performance.now()
  await sql.raw(ddl.index).execute(db)
  await sql.raw(`analyze ${SOURCE}`).execute(db)
  const indexSeconds = (performance.now() - started) / 1000
  log(`(tenant_id, paid_at) index built after the load and ANALYZEd in ${indexSeconds.toFixed(1)} s`)

  // 2. The rollup, rebuilt for every tenant ---------------------------------------------------------
  const { target, rollup } = expensesRollup({ source: SOURCE, target: TARGET, zone: o.zone })
  await target.create(db)
  const { rows: span } = await sql<{ first: Date; last: Date }>`select min(paid_at) as first, max(paid_at) as last from ${sql.raw(SOURCE)}`.execute(db)
  const since = span[0]!.first
  const until = span[0]!.last
  const tenantCount = Math.max(1, o.tenants)
  const rollupBar = progress('rebuilding rollup', tenantCount, { enabled: o.showProgress })
  started = performance.now()
  for (let tenant = 1; tenant <= tenantCount; tenant++) {
    await rollup.rebuild(db, { tenantId: tenant, since, until })
    rollupBar.update(tenant)
  }
  const rollupSeconds = (performance.now() - started) / 1000
  rollupBar.done(`${tenantCount} tenants × ${monthsBetween(localMonth(since, o.zone), localMonth(until, o.zone)).length} months in ${rollupSeconds.toFixed(1)} s`)
  await sql.raw(`analyze ${TARGET}`).execute(db)

  // 3. Measure a big and a typical tenant ------------------------------------------------------------
  const thisMonth = localMonth(until, o.zone)
  const measureTenant = async (tenantId: number): Promise<TenantResult> => {
    const { rows: counts } = await sql<{ n: number; bucket: number }>`
      select count(*)::int as n, count(*) filter (where paid_at >= (${thisMonth}::date::timestamp at time zone ${o.zone}))::int as bucket
      from ${sql.raw(SOURCE)} where tenant_id = ${tenantId}`.execute(db)
    const queries = dashboardQueries(SOURCE, TARGET, o.zone, tenantId, dashboardMonths(thisMonth))
    const time = async (q: RawBuilder<unknown>) => {
      const t0 = performance.now()
      await q.execute(db)
      return performance.now() - t0
    }
    const dashboard: TenantResult['dashboard'] = []
    for (const q of queries) {
      await time(q.source)
      await time(q.rollup)
      const src: number[] = []
      const rol: number[] = []
      for (let i = 0; i < o.reps; i++) {
        src.push(await time(q.source))
        rol.push(await time(q.rollup))
      }
      dashboard.push({ name: q.name, sourceMs: summarize(src), rollupMs: summarize(rol), speedup: median(src) / median(rol) })
    }
    // What a write pays: a refresh of this month's bucket, beside the bare aggregate of that bucket.
    const bare = bucketAggregate(rollup.parts, tenantId, thisMonth)
    const refreshMs: number[] = []
    const bareMs: number[] = []
    const ratios: number[] = []
    await rollup.refreshAt(db, { tenantId, moment: until })
    for (let i = 0; i < o.reps; i++) {
      const b = await time(bare)
      const t0 = performance.now()
      await rollup.refreshAt(db, { tenantId, moment: until })
      const r = performance.now() - t0
      bareMs.push(b)
      refreshMs.push(r)
      ratios.push(r / b)
    }
    // Healing: rebuild every month, beside one aggregate scan of the tenant's rows.
    const bareScan = sql`select category, sum(amount), count(*) from ${sql.raw(SOURCE)}
      where tenant_id = ${tenantId} and paid_at >= ${since} and paid_at <= ${until} and status <> 'cancelled' group by category`
    const rebuildReps = Math.max(3, Math.min(o.reps, 7))
    const rebuildSeconds: number[] = []
    const scanSeconds: number[] = []
    const rebuildRatios: number[] = []
    let monthsRebuilt = 0
    for (let i = 0; i < rebuildReps; i++) {
      const s = (await time(bareScan)) / 1000
      const t0 = performance.now()
      monthsRebuilt = (await rollup.rebuild(db, { tenantId, since, until })).months
      const r = (performance.now() - t0) / 1000
      scanSeconds.push(s)
      rebuildSeconds.push(r)
      rebuildRatios.push(r / s)
    }
    return {
      tenantId,
      rows: counts[0]!.n,
      bucketRows: counts[0]!.bucket,
      dashboard,
      refresh: { refreshMs: summarize(refreshMs), bareAggregateMs: summarize(bareMs), ratio: median(ratios) },
      rebuild: { months: monthsRebuilt, seconds: rebuildSeconds, medianSeconds: median(rebuildSeconds), bareScanSeconds: scanSeconds, ratio: median(rebuildRatios) },
    }
  }
  log('measuring the big tenant')
  const big = await measureTenant(1)
  log('measuring a typical tenant')
  const typical = await measureTenant(Math.min(2, tenantCount))

  // 4. Sizes ---------------------------------------------------------------------------------------
  const { rows: size } = await sql<{ table: string; indexes: string; rollup: string; rollup_rows: number }>`
    select pg_table_size(${SOURCE}::regclass)::text as table, pg_indexes_size(${SOURCE}::regclass)::text as indexes,
      pg_total_relation_size(${TARGET}::regclass)::text as rollup, (select count(*)::int from ${sql.raw(TARGET)}) as rollup_rows`.execute(db)
  const sizes = { sourceTableBytes: Number(size[0]!.table), sourceIndexesBytes: Number(size[0]!.indexes), rollupBytes: Number(size[0]!.rollup), rollupRows: size[0]!.rollup_rows }
  if (!o.keep) await sql.raw(`drop schema if exists ${SCHEMA} cascade`).execute(db)

  const report: RollupBenchReport = {
    ...header,
    seeding: { rows: o.rows, seconds: seedSeconds, rowsPerSecond: o.rows / seedSeconds, how: 'COPY ... FROM STDIN (text), streamed from a seeded generator; (tenant_id, paid_at) index built after the load', indexSeconds, rollupSeconds },
    tenants: { big, typical },
    sizes,
    anchors: {
      refresh: 'seed: 8.1 ms p50, 11.8 ms p95 for the big tenant’s ~27,000-row month; 1.5 ms for a typical one',
      rebuild: 'seed: 37 months in 1.1 s (big tenant), 0.06 s (typical)',
      sizes: 'seed: 0.2 MB rollup vs 367 MB source table',
      design: 'the design study (raw SQL, PG 15, 2 cores): big-tenant refresh 1.17× the bare aggregate; rebuild as per-month range scans 1.24× a bare scan with JIT off',
    },
    findings: [],
  }
  report.findings = rollupFindings(report)
  return report
}

/** Plain sentences from the numbers. */
export function rollupFindings(r: Pick<RollupBenchReport, 'tenants' | 'sizes'>): string[] {
  const { big, typical } = r.tenants
  const range = (t: TenantResult) => {
    const s = t.dashboard.map((d) => d.speedup)
    return `${Math.min(...s).toFixed(1)}–${Math.max(...s).toFixed(1)}×`
  }
  const saved = (t: TenantResult) => t.dashboard.reduce((sum, d) => sum + d.sourceMs.p50 - d.rollupMs.p50, 0)
  const mb = (b: number) => `${(b / 1024 ** 2).toFixed(1)} MB`
  return [
    `For the big tenant (${big.rows.toLocaleString('en-US')} rows) the rollup answers the six dashboard aggregates ${range(big)} faster at p50, saving ${saved(big).toFixed(1)} ms per dashboard; ` +
      `for a typical tenant (${typical.rows.toLocaleString('en-US')} rows) ${range(typical)}, saving ${saved(typical).toFixed(2)} ms: with a few thousand rows per tenant the index is enough, the rollup is for the tenant that grew.`,
    `A write pays a bucket refresh of ${big.refresh.refreshMs.p50.toFixed(2)} ms p50 (p95 ${big.refresh.refreshMs.p95.toFixed(2)}) for the big tenant's ${big.bucketRows.toLocaleString('en-US')}-row month, ` +
      `${big.refresh.ratio.toFixed(2)}× the bare aggregate of that bucket; ${typical.refresh.refreshMs.p50.toFixed(2)} ms for a typical tenant (${typical.refresh.ratio.toFixed(2)}×, where the round trips dominate).`,
    `Rebuilding all ${big.rebuild.months} months takes ${big.rebuild.medianSeconds.toFixed(2)} s for the big tenant, ${big.rebuild.ratio.toFixed(2)}× one aggregate scan of its rows; ${typical.rebuild.medianSeconds.toFixed(3)} s for a typical tenant.`,
    `The rollup table holds ${r.sizes.rollupRows.toLocaleString('en-US')} rows in ${mb(r.sizes.rollupBytes)}, next to ${mb(r.sizes.sourceTableBytes)} of source table and ${mb(r.sizes.sourceIndexesBytes)} of its indexes.`,
  ]
}
