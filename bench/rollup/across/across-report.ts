import type { Percentiles } from '../../report/stats.js'

/** What `--across` measured: admin views across tenants from the source and from the rollup. */
export interface AcrossReport {
  queries: Array<{ name: string; sourceMs: Percentiles; rollupMs: Percentiles; speedup: number; sourcePlan: string; rollupPlan: string }>
  /** Fleet-wide distinct amounts per month: the rollup's united hll sketches against count(distinct) of the source. */
  distinct: { months: number; errorP50: number; errorP95: number; errorMax: number; buildSeconds: number } | null
  method: string
}
