/**
 * The rollup's objects on the server and what they hold: the rollup table (rollup-table), the
 * sketch extensions (sketch-extensions), the source's covering index (source-index), Citus
 * distribution (rollup-distribution), the dirty-key log with its triggers (tracking-ddl,
 * log-placement), claims and counts (dirty-log, distributed-claims), and the checks only the
 * server can make (server-checks).
 *
 * May import: ../config, ../sql, src/db, src/filter, src/sql, src/util, src/errors.ts.
 */
export * from './rollup-table.js' // rollupTable: the target's declaration and DDL
export * from './rollup-types.js' // the table's columns in its type: typed rows, checked configs
export * from './sketch-extensions.js' // hll and tdigest, created when missing
export * from './source-index.js' // the covering index refreshes want
export * from './rollup-distribution.js' // colocated with the source on Citus
export * from './dirty-log.js' // claims, coalescing and pending keys of the dirty-key log
export * from './tracking-ddl.js' // the log and the source's triggers, locally or on Citus shards
export * from './log-placement.js' // where the log lives: beside the source, or distributed with it
export * from './distributed-claims.js' // claims of a log Citus distributes, one tenant at a time
export * from './server-checks.js' // zone, columns, measures and the at column's type
export * from './tracking-state.js' // whether a source is tracked, from the catalog
export * from './rollup-record.js' // tracked rollups' definitions, recorded for the ops CLI
