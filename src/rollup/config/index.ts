/**
 * Declaring a rollup, no database: the parts its statements are built from (rollup-parts), the
 * config they are resolved from (rollup-config), the options of its methods (rollup-options),
 * local months in an IANA zone (local-month), column types (column-type), how a measure combines
 * (measure-combiner, sketch-expressions) and the names of its dirty-key log (dirty-log-names).
 *
 * May import: src/sql, src/util, src/errors.ts.
 */
export * from './rollup-parts.js' // the validated parts and the declared table's shape
export * from './rollup-config.js' // MonthlyRollupConfig and its resolution
export * from './rollup-options.js' // options of refresh, rebuild, drain and read
export * from './local-month.js' // local months in an IANA zone
export * from './month-input.js' // the one grammar of month and moment inputs
export * from './tenant-input.js' // tenant ids checked against the declared tenant type
export * from './group-input.js' // the group columns a read keeps
export * from './column-type.js' // column types a declaration accepts
export * from './measure-combiner.js' // how a plain measure combines
export * from './sketch-expressions.js' // hll and tdigest measure expressions
export * from './dirty-log-names.js' // the names of the tracking objects
