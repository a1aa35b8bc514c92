/**
 * The rollup's objects on the server and what they hold: the rollup table (rollup-table), the
 * sketch extensions (sketch-extensions), the source's covering index (source-index), Citus
 * distribution (rollup-distribution), the dirty-key log with its triggers, claims and counts
 * (dirty-log), and the checks only the server can make (server-checks).
 *
 * May import: ../config, ../sql, src/db, src/filter, src/sql, src/util, src/errors.ts.
 */
export * from './rollup-table.js' // rollupTable: the target's declaration and DDL
export * from './sketch-extensions.js' // hll and tdigest, created when missing
export * from './source-index.js' // the covering index refreshes want
export * from './rollup-distribution.js' // colocated with the source on Citus
export * from './dirty-log.js' // tracking DDL, claims and pending keys
export * from './server-checks.js' // zone, columns, measures and the at column's type
export * from './tracking-state.js' // whether a source is tracked, from the catalog
export * from './rollup-record.js' // tracked rollups' definitions, recorded for the ops CLI
