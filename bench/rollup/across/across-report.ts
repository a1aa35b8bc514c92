import type { Percentiles } from '../../report/stats.js'

/** Refresh or drain of the same buckets, without and with the fleet level. */
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
  /** readAcross on the rollup with a fleet level (the level where the view needs no tenant detail). */
  fleetMs: Percentiles
  speedup: number
  fleetSpeedup: number
  /** Whether the fleet side read the fleet level (false: it needs tenant detail and read the rollup table). */
  readsFleet: boolean
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
  /** Refresh and drain of the same buckets, without and with the fleet level. */
  maintenance: MaintenanceCost[]
  /** Fleet-wide distinct amounts per month: the rollup's united hll sketches against count(distinct) of the source. */
  distinct: { months: number; errorP50: number; errorP95: number; errorMax: number; buildSeconds: number } | null
  method: string
}
