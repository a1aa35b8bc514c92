/**
 * The rollup's statements, built from its parts without a database: refresh and rebuild of
 * buckets (rollup-sql), the live aggregate of dirty months for fresh reads (fresh-read), and each
 * measure's select-list entry in a read (measure-output).
 *
 * May import: ../config, src/sql, src/util, src/errors.ts.
 */
export * from './rollup-sql.js' // refresh, rebuild and bucket aggregates
export * from './fresh-read.js' // dirty months aggregated live
export * from './measure-output.js' // a measure in a read: as stored, combined or estimated
