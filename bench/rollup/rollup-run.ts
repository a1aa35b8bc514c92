import type { RawBuilder } from 'kysely'
import type { ProvisionedDatabase } from '../../src/index.js'
import type { CitusPlacementReport } from '../report/citus-placement.js'
import type { ReportHeader } from '../report/header.js'
import type { Percentiles } from '../report/stats.js'
import type { expensesRollup } from '../synthetic/expenses.js'
import type { TrackOptions, TrackReport } from './track/track-report.js'
import type { AcrossReport } from './across/across-report.js'

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
  /** Measure the rollup's tracking too (`--track`). */
  track?: TrackOptions
  /** Measure admin views across tenants too (`--across`). */
  across?: boolean
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
  /** With `--track`: tracking's write overhead, drain rate, staleness, fresh reads, approximate distinct counts. */
  track?: TrackReport
  /** With `--across`: admin views across tenants, source vs rollup, and fleet-wide distinct counts. */
  across?: AcrossReport
}

/** The bench's schema, source table and rollup table. */
export const SCHEMA = 'pgscale_bench'
export const SOURCE = `${SCHEMA}.expenses`
export const TARGET = `${SCHEMA}.expenses_monthly`
/** The last moment of the seeded history. */
export const END = new Date('2025-12-31T23:00:00Z')

/** What the measuring steps share once the source is seeded and the rollup built. */
export interface RollupRun {
  db: ProvisionedDatabase['db']
  o: RollupBenchOptions
  rollup: ReturnType<typeof expensesRollup>['rollup']
  since: Date
  until: Date
}

/**
 * Milliseconds one execution of `q` takes.
 *
 * ### Examples
 * ```ts
 * const ms = await time(db, sql`select 1`)
 * ```
 */
export async function time(db: RollupRun['db'], q: RawBuilder<unknown>): Promise<number> {
  const t0 = performance.now()
  await q.execute(db)
  return performance.now() - t0
}
