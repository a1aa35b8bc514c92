/**
 * Recompute-style monthly rollups. `MonthlyRollup` (monthly-rollup.ts) is the facade: one-line
 * methods over the rooms below it, lowest first —
 *   config/   declaring a rollup: parts, config, options, local months, measures (no database)
 *   sql/      its statements: refresh, rebuild, fresh rows, measure outputs (no database)
 *   schema/   its objects on the server: the table, extensions, source index, distribution,
 *             the dirty-key log, the server's checks
 *   buckets/  refreshing, tracking, draining and reading buckets
 *   fleet/    the optional coarser levels (without the tenant, or per tenant without groups), kept
 *             by the buckets' writes (through their hooks)
 * A room imports only the rooms below it, each through its entry file. Outside src/rollup,
 * import from here.
 *
 * May import: its rooms, src/db, src/filter, src/sql, src/util, src/errors.ts.
 */
export * from './monthly-rollup.js'
export * from './fleet/index.js'
export * from './buckets/index.js'
export * from './schema/index.js'
export * from './sql/index.js'
export * from './config/index.js'
