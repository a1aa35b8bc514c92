import { spawnSync } from 'node:child_process'
import { closeSync, createReadStream, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql, type RawBuilder } from 'kysely'
import { hasCitusShardNodes, type ProvisionedDatabase } from '../../src/index.js'
import { bucketAggregate, refreshStatement } from '../../src/bench-kit.js'
import { localMonth, monthsBetween } from '../../src/bench-kit.js'
import { citusPlacement, type CitusPlacementReport } from '../report/citus-placement.js'
import { reportHeader, type ReportHeader } from '../report/header.js'
import { progress, type Progress } from '../report/progress.js'
import { median, summarize, type Percentiles } from '../report/stats.js'
import { expensesCopyText, expensesDdl, expensesRollup, generateExpenses } from '../synthetic/expenses.js'
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
  /**
   * refreshAt beside the bare aggregate of the bucket, and beside its floor: the bare aggregate plus
   * the cheapest write transaction (a one-row INSERT, autocommit), each measured in the same loop.
   */
  refresh: { refreshMs: Percentiles; bareAggregateMs: Percentiles; ratio: number; oneRowInsertMs: Percentiles; floorRatio: number }
  rebuild: { months: number; seconds: number[]; medianSeconds: number; bareScanSeconds: number[]; ratio: number }
}

/** The whole report, as `--json` writes it. */
export interface RollupBenchReport extends ReportHeader {
  seeding: {
    rows: number
    seconds: number
    rowsPerSecond: number
    how: string
    indexSeconds: number
    rollupSeconds: number
    /** The same file loaded by `psql \copy` and indexed the same way, just before (null without a server URL or psql). */
    raw: { seconds: number; indexSeconds: number; ratio: number } | null
  }
  /** Refresh and rebuild again with the covering index from rollup.sourceIndex() in place of the plain one (after VACUUM). */
  covering: { index: string; big: Pick<TenantResult, 'refresh' | 'rebuild'>; typical: Pick<TenantResult, 'refresh' | 'rebuild'> }
  tenants: { big: TenantResult; typical: TenantResult }
  sizes: { sourceTableBytes: number; sourceIndexesBytes: number; rollupBytes: number; rollupRows: number }
  anchors: Record<string, string>
  findings: string[]
  /** On Citus: where the big and the typical tenant live and the plans of their refresh and dashboard read. */
  citus?: CitusPlacementReport
}

const SCHEMA = 'pgscale_bench'
const SOURCE = `${SCHEMA}.expenses`
const TARGET = `${SCHEMA}.expenses_monthly`
const END = new Date('2025-12-31T23:00:00Z')

/** What the measuring steps share once the source is seeded and the rollup built. */
interface RollupRun {
  db: ProvisionedDatabase['db']
  o: RollupBenchOptions
  rollup: ReturnType<typeof expensesRollup>['rollup']
  since: Date
  until: Date
}

/**
 * Runs rollup-bench on a provisioned database and returns its report.
 *
 * ### Examples
 * ```ts
 * const report = await runRollupBench(await provision(), { rows: 100_000, months: 12, tenants: 50, bigTenantRows: 20_000, zone: 'UTC', reps: 10, seed: '42', keep: false, showProgress: false }, console.error)
 * ```
 */
export async function runRollupBench(
  provisioned: ProvisionedDatabase,
  o: RollupBenchOptions,
  log: (line: string) => void,
): Promise<RollupBenchReport> {
  const { db, info } = provisioned
  const header = reportHeader(
    'rollup-bench',
    info,
    { ...o, showProgress: undefined, keep: undefined },
    `${o.reps} repetitions per measurement, interleaved side by side; p50/p95; ratios are medians of per-repetition ratios`,
  )
  const seeding = await seedSource(provisioned, o, log)
  const { run, rollupSeconds } = await buildRollup(db, o)
  log('measuring the big tenant')
  const big = await measureTenant(run, 1)
  log('measuring a typical tenant')
  const typicalId = Math.min(2, Math.max(1, o.tenants))
  const typical = await measureTenant(run, typicalId)
  const sizes = await measureSizes(db)
  const covering = await measureCovering(run, [1, typicalId], log)
  const citus = await citusRollupPlacement(run, typicalId)
  if (!o.keep) await sql.raw(`drop schema if exists ${SCHEMA} cascade`).execute(db)
  const report: RollupBenchReport = {
    ...header,
    seeding: { ...seeding, rollupSeconds },
    tenants: { big, typical },
    covering,
    sizes,
    anchors: {
      refresh: 'seed: 8.1 ms p50, 11.8 ms p95 for the big tenant’s ~27,000-row month; 1.5 ms for a typical one',
      rebuild: 'seed: 37 months in 1.1 s (big tenant), 0.06 s (typical)',
      sizes: 'seed: 0.2 MB rollup vs 367 MB source table',
      design:
        'the design study (raw SQL, PG 15, 2 cores): big-tenant refresh 1.17× the bare aggregate; rebuild as per-month range scans 1.24× a bare scan with JIT off',
    },
    findings: [],
    ...(citus ? { citus } : {}),
  }
  report.findings = rollupFindings(report)
  return report
}

/**
 * Step 1: a fresh schema; the seeded rows written once to a file (not timed); `psql \copy` of that
 * file into a twin table with the same index (the raw reference), then pgscale's `copyFrom` of the
 * same file into the source, its index and VACUUM ANALYZE (so the visibility map allows index-only
 * scans, as on a table autovacuum has visited).
 */
async function seedSource(
  provisioned: ProvisionedDatabase,
  o: RollupBenchOptions,
  log: (line: string) => void,
): Promise<Omit<RollupBenchReport['seeding'], 'rollupSeconds'>> {
  const { db } = provisioned
  await sql.raw(`drop schema if exists ${SCHEMA} cascade`).execute(db)
  await sql.raw(`create schema ${SCHEMA}`).execute(db)
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-rollup-bench-'))
  try {
    const file = join(dir, 'expenses.tsv')
    writeCopyFile(file, o)
    const raw = provisioned.url ? await rawCopy(provisioned.url, file, await hasCitusShardNodes(db), log) : null
    const ddl = expensesDdl(SOURCE)
    await sql.raw(ddl.table).execute(db)
    if (await hasCitusShardNodes(db)) {
      await sql`select create_distributed_table(${SOURCE}, 'tenant_id')`.execute(db)
      log(`${SOURCE} distributed by tenant_id (Citus)`)
    }
    const bar = progress('seeding expenses', o.rows, { enabled: o.showProgress })
    let started = performance.now()
    await db.copyFrom(`copy ${SOURCE} (tenant_id, paid_at, category, amount, status) from stdin`, counted(createReadStream(file), bar))
    const seconds = (performance.now() - started) / 1000
    bar.done(`${o.rows.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s (COPY text, streamed from the file)`)
    started = performance.now()
    await sql.raw(ddl.index).execute(db)
    await sql.raw(`vacuum analyze ${SOURCE}`).execute(db)
    const indexSeconds = (performance.now() - started) / 1000
    log(`(tenant_id, paid_at) index built after the load and VACUUM ANALYZE in ${indexSeconds.toFixed(1)} s`)
    const how =
      'COPY ... FROM STDIN (text) through db.copyFrom, streamed from a file of seeded rows; (tenant_id, paid_at) index built after the load, then VACUUM ANALYZE'
    const ratio = raw ? (seconds + indexSeconds) / (raw.seconds + raw.indexSeconds) : 0
    return { rows: o.rows, seconds, rowsPerSecond: o.rows / seconds, how, indexSeconds, raw: raw ? { ...raw, ratio } : null }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The seeded rows as COPY text in a file. */
function writeCopyFile(file: string, o: RollupBenchOptions): void {
  const fd = openSync(file, 'w')
  try {
    const spec = { seed: o.seed, rows: o.rows, tenants: o.tenants, bigTenantRows: o.bigTenantRows, months: o.months, end: END }
    for (const chunk of expensesCopyText(generateExpenses(spec))) writeSync(fd, chunk)
  } finally {
    closeSync(fd)
  }
}

/** Counts the lines going by, for the progress line. */
async function* counted(source: AsyncIterable<Buffer>, bar: Progress): AsyncGenerator<Buffer> {
  let lines = 0
  for await (const chunk of source) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
    bar.update(lines)
    yield chunk
  }
}

/** The raw reference: `psql \copy` of the file into a twin table, then the same index and VACUUM ANALYZE; the twin is dropped. */
async function rawCopy(
  url: string,
  file: string,
  citus: boolean,
  log: (line: string) => void,
): Promise<{ seconds: number; indexSeconds: number } | null> {
  const twin = `${SCHEMA}.expenses_raw`
  const ddl = expensesDdl(twin)
  const psql = (command: string) => spawnSync('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', command], { encoding: 'utf8' })
  const created = psql(ddl.table)
  if (created.status !== 0) {
    log(`raw reference skipped: psql is not usable here (${(created.stderr || String(created.error)).trim().split('\n')[0]})`)
    return null
  }
  // On Citus the twin is distributed as the source is, so both loads go through the coordinator.
  if (citus) psql(`select create_distributed_table('${twin}', 'tenant_id')`)
  let started = performance.now()
  const copied = psql(`\\copy ${twin} (tenant_id, paid_at, category, amount, status) from '${file}'`)
  if (copied.status !== 0) throw new Error(`psql \\copy failed: ${copied.stderr}`)
  const seconds = (performance.now() - started) / 1000
  started = performance.now()
  psql(ddl.index)
  psql(`vacuum analyze ${twin}`)
  const indexSeconds = (performance.now() - started) / 1000
  psql(`drop table ${twin}`)
  log(`raw reference: psql \\copy ${seconds.toFixed(1)} s, index + VACUUM ANALYZE ${indexSeconds.toFixed(1)} s`)
  return { seconds, indexSeconds }
}

/** Step 2: the rollup table, rebuilt for every tenant over the whole span of the source. */
async function buildRollup(db: RollupRun['db'], o: RollupBenchOptions): Promise<{ run: RollupRun; rollupSeconds: number }> {
  const { target, rollup } = expensesRollup({ source: SOURCE, target: TARGET, zone: o.zone })
  await target.create(db)
  // On Citus: the rollup's table colocated with its (distributed) source, so a bucket routes to one shard.
  if (await hasCitusShardNodes(db)) await rollup.distribute(db)
  const { rows: span } = await sql<{
    first: Date
    last: Date
  }>`select min(paid_at) as first, max(paid_at) as last from ${sql.raw(SOURCE)}`.execute(db)
  const since = span[0]!.first
  const until = span[0]!.last
  const tenantCount = Math.max(1, o.tenants)
  const bar = progress('rebuilding rollup', tenantCount, { enabled: o.showProgress })
  const started = performance.now()
  for (let tenant = 1; tenant <= tenantCount; tenant++) {
    await rollup.rebuild(db, { tenantId: tenant, since, until })
    bar.update(tenant)
  }
  const rollupSeconds = (performance.now() - started) / 1000
  bar.done(
    `${tenantCount} tenants × ${monthsBetween(localMonth(since, o.zone), localMonth(until, o.zone)).length} months in ${rollupSeconds.toFixed(1)} s`,
  )
  await sql.raw(`analyze ${TARGET}`).execute(db)
  return { run: { db, o, rollup, since, until }, rollupSeconds }
}

/**
 * On Citus: the big and the typical tenant's shard and worker, and the plans of this month's
 * refresh statement and of the rollup's first dashboard query (task count, the shard's plan).
 */
async function citusRollupPlacement(run: RollupRun, typicalId: number): Promise<CitusPlacementReport | undefined> {
  const thisMonth = localMonth(run.until, run.o.zone)
  const tenants = [
    { label: 'big', tenant: 1 },
    { label: 'typical', tenant: typicalId },
  ]
  const refresh = await citusPlacement(run.db, SOURCE, tenants, (tenant) => {
    const q = refreshStatement({ ...run.rollup.parts, atKind: 'timestamptz' }, Number(tenant), thisMonth).compile(run.db)
    return { sql: q.sql, params: q.parameters }
  })
  if (!refresh) return undefined
  const read = await citusPlacement(run.db, TARGET, tenants, (tenant) => {
    const q = dashboardQueries(SOURCE, TARGET, run.o.zone, Number(tenant), dashboardMonths(thisMonth))[0]!.rollup.compile(run.db)
    return { sql: q.sql, params: q.parameters }
  })
  const label = (what: string) => (t: CitusPlacementReport['tenants'][number]) => ({ ...t, label: `${t.label} ${what}` })
  return { ...refresh, tenants: [...refresh.tenants.map(label('refresh')), ...(read?.tenants ?? []).map(label('read'))] }
}

/** Milliseconds one execution of `q` takes. */
async function time(db: RollupRun['db'], q: RawBuilder<unknown>): Promise<number> {
  const t0 = performance.now()
  await q.execute(db)
  return performance.now() - t0
}

/** Step 3: one tenant's dashboard from the source and from the rollup, its refresh, its rebuild. */
async function measureTenant(run: RollupRun, tenantId: number): Promise<TenantResult> {
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
 */
async function measureRefresh(run: RollupRun, tenantId: number, thisMonth: string): Promise<TenantResult['refresh']> {
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

/** Healing: rebuild every month, beside one aggregate scan of the tenant's rows. */
async function measureRebuild(run: RollupRun, tenantId: number): Promise<TenantResult['rebuild']> {
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

/**
 * Step 5: the covering index rollup.sourceIndex() recommends, in place of the plain (tenant, at)
 * index, after VACUUM ANALYZE; refresh and rebuild measured again for the same tenants.
 */
async function measureCovering(
  run: RollupRun,
  [bigId, typicalId]: [number, number],
  log: (line: string) => void,
): Promise<RollupBenchReport['covering']> {
  const index = await run.rollup.sourceIndex(run.db)
  await sql.raw(index.sql).execute(run.db)
  await sql.raw(`drop index ${SCHEMA}.expenses_tenant_paid_at`).execute(run.db)
  await sql.raw(`vacuum analyze ${SOURCE}`).execute(run.db)
  log(
    `covering index ${index.name} (${index.key.join(', ')}) include (${index.include.join(', ')}) in place of the plain one; measuring again`,
  )
  const thisMonth = localMonth(run.until, run.o.zone)
  const again = async (tenantId: number) => ({
    refresh: await measureRefresh(run, tenantId, thisMonth),
    rebuild: await measureRebuild(run, tenantId),
  })
  return { index: index.name, big: await again(bigId), typical: await again(typicalId) }
}

/** Step 4: the source's and the rollup's sizes. */
async function measureSizes(db: RollupRun['db']): Promise<RollupBenchReport['sizes']> {
  // On Citus the coordinator's tables are empty shells: the shards' sizes, summed.
  const { rows } = (await hasCitusShardNodes(db))
    ? await sql<{ table: string; indexes: string; rollup: string; rollup_rows: number }>`
    select citus_table_size(${SOURCE}::regclass)::text as table,
      (citus_total_relation_size(${SOURCE}::regclass) - citus_table_size(${SOURCE}::regclass))::text as indexes,
      citus_total_relation_size(${TARGET}::regclass)::text as rollup, (select count(*)::int from ${sql.raw(TARGET)}) as rollup_rows`.execute(
        db,
      )
    : await sql<{ table: string; indexes: string; rollup: string; rollup_rows: number }>`
    select pg_table_size(${SOURCE}::regclass)::text as table, pg_indexes_size(${SOURCE}::regclass)::text as indexes,
      pg_total_relation_size(${TARGET}::regclass)::text as rollup, (select count(*)::int from ${sql.raw(TARGET)}) as rollup_rows`.execute(
        db,
      )
  return {
    sourceTableBytes: Number(rows[0]!.table),
    sourceIndexesBytes: Number(rows[0]!.indexes),
    rollupBytes: Number(rows[0]!.rollup),
    rollupRows: rows[0]!.rollup_rows,
  }
}

/** Plain sentences from the numbers. */
export function rollupFindings(
  r: Pick<RollupBenchReport, 'tenants' | 'sizes'> & Partial<Pick<RollupBenchReport, 'covering' | 'seeding'>>,
): string[] {
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
      `${big.refresh.ratio.toFixed(2)}× the bare aggregate of that bucket; ${typical.refresh.refreshMs.p50.toFixed(2)} ms for a typical tenant (${typical.refresh.ratio.toFixed(2)}×, where the round trips dominate). ` +
      `Against the floor of a write (the bare aggregate plus a one-row INSERT, autocommit): ${big.refresh.floorRatio.toFixed(2)}× (big), ${typical.refresh.floorRatio.toFixed(2)}× (typical).`,
    ...(r.covering
      ? [
          `With the covering index rollup.sourceIndex() recommends (after VACUUM), the big tenant's refresh took ${r.covering.big.refresh.refreshMs.p50.toFixed(2)} ms p50 ` +
            `(${r.covering.big.refresh.floorRatio.toFixed(2)}× its floor) and its rebuild ${r.covering.big.rebuild.medianSeconds.toFixed(2)} s; a typical tenant's refresh ${r.covering.typical.refresh.refreshMs.p50.toFixed(2)} ms.`,
        ]
      : []),
    ...(r.seeding?.raw
      ? [
          `Seeding (COPY + index + VACUUM ANALYZE) took ${(r.seeding.seconds + r.seeding.indexSeconds).toFixed(1)} s, ${r.seeding.raw.ratio.toFixed(2)}× psql \\copy of the same file with the same index (${(r.seeding.raw.seconds + r.seeding.raw.indexSeconds).toFixed(1)} s).`,
        ]
      : []),
    `Rebuilding all ${big.rebuild.months} months takes ${big.rebuild.medianSeconds.toFixed(2)} s for the big tenant, ${big.rebuild.ratio.toFixed(2)}× one aggregate scan of its rows; ${typical.rebuild.medianSeconds.toFixed(3)} s for a typical tenant.`,
    `The rollup table holds ${r.sizes.rollupRows.toLocaleString('en-US')} rows in ${mb(r.sizes.rollupBytes)}, next to ${mb(r.sizes.sourceTableBytes)} of source table and ${mb(r.sizes.sourceIndexesBytes)} of its indexes.`,
  ]
}
