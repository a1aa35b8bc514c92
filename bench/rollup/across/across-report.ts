import type { Percentiles } from '../../report/stats.js'

/** Refresh or drain of the same buckets, without and with levels (which: in `what`). */
export interface MaintenanceCost {
  what: string
  plainMs: Percentiles
  fleetMs: Percentiles
  /** Median of per-repetition ratios fleet ÷ plain. */
  ratio: number
}

/** One admin view: its times from each side of one interleaved loop, and the ratios of medians. */
export interface AcrossView {
  name: string
  sourceMs: Percentiles
  /** readAcross on the rollup without a fleet level (the rollup table). */
  rollupMs: Percentiles
  /** readAcross on the rollup with its levels (the fleet level where the view needs no tenant detail, the per-tenant level for the top 20). */
  fleetMs: Percentiles
  speedup: number
  fleetSpeedup: number
  /** Whether the fleet side read the fleet level (false: it needs tenant detail). */
  readsFleet: boolean
  /** What the side with levels read: the fleet level, the per-tenant level or the rollup table. */
  reads: 'fleet level' | 'per-tenant level' | 'deferred fleet level' | 'rollup table'
  sourcePlan: string
  rollupPlan: string
  fleetPlan: string
}

/** What `--across` measured: admin views across tenants from the source and from the rollup. */
export interface AcrossReport {
  queries: AcrossView[]
  /** The same views against the source with a `(paid_at) INCLUDE (…)` covering index (after VACUUM), interleaved again. */
  covered: { index: string; queries: AcrossView[] } | null
  /** The fleet level: its rows, how long its fill took. */
  fleet: { rows: number; fillSeconds: number } | null
  /** The per-tenant level (tenant × month): its rows, how long its fill took. */
  tenantLevel?: { rows: number; fillSeconds: number }
  /** Refresh and drain of the same buckets, without levels and with them (the fleet level alone; both levels). */
  maintenance: MaintenanceCost[]
  /**
   * A deferred fleet level (`fleetTable(…, { deferred: true })`): the views from it with nothing
   * pending and with this month and the one before pending (as between two `refreshFleet` calls
   * of a busy app), and `refreshFleet` itself recomputing those two months.
   */
  deferred?: { queries: AcrossView[]; queriesPending: AcrossView[]; pendingMonths: string[]; refreshFleetMs: Percentiles }
  /** Fleet-wide distinct amounts per month: the rollup's united hll sketches against count(distinct) of the source. */
  distinct: { months: number; errorP50: number; errorP95: number; errorMax: number; buildSeconds: number } | null
  method: string
}
