import type { DrainRate, Staleness } from './freshness.js'
import type { DistinctError, FreshReadCost } from './read-costs.js'
import type { WriteOverhead } from './write-overhead.js'

/** Parameters of the `--track` phase. */
export interface TrackOptions {
  /** Rows of each bulk write (INSERT … SELECT, UPDATE, DELETE, COPY). */
  rows: number
  /** Rounds of the write overhead (each mode once per round). */
  rounds: number
  /** Seconds of the staleness load. */
  seconds: number
  /** The staleness load's write transactions per second. */
  writesPerSecond: number
}

/** What `--track` measured. */
export interface TrackReport {
  options: TrackOptions
  /** pg_ivm's version when the server had it (the comparison), else null. */
  pgIvm: string | null
  writes: WriteOverhead[]
  drain: DrainRate[]
  staleness: Staleness
  freshReads: FreshReadCost[]
  distinct: DistinctError | null
  method: string
}
