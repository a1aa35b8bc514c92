/**
 * What a rollup does with its buckets: refreshing one or a range (refresh), tracking the source's
 * writes and draining the buckets they dirtied (tracking), and reading them (read), over the
 * context they share: the validated parts, the compiled statements, the locks (rollup-context).
 *
 * May import: ../schema, ../sql, ../config, src/db, src/sql, src/util, src/errors.ts.
 */
export * from './rollup-context.js' // parts, statements, locks and writes shared by every operation
export * from './refresh.js' // refreshAt and rebuild
export * from './tracking.js' // track, untrack, refreshDirty and drain
export * from './mark-dirty.js' // markDirty: the writer marks buckets the triggers do not see
export * from './read.js' // read and readQuery
export * from './rollup-migration-sql.js' // the rollup's DDL as plain SQL
export * from './read-across.js' // readAcross: admin views across tenants
export * from './typed-errors.js' // server errors as PgScaleErrors; tracking required, typed
