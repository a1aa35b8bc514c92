/**
 * The second entry, `pgscale/bench-kit`: what the benches and tests use beyond the public API
 * (statement renderers, index names, local-month arithmetic, seeded randomness, providers' internals).
 * Not a stable API: it follows the benches. Apps import `pgscale`.
 */
export * from './db/local-settings.js'
export * from './db/providers/container/container-engine.js'
export * from './db/providers/local/local-cluster.js'
export { startCitusCluster, type CitusCluster } from './db/providers/local/citus-cluster.js'
export * from './db/providers/registry.js'
export * from './plan/explain.js'
export * from './rollup/index.js'
export * from './sql/advisory-lock.js'
export * from './sql/literal.js'
export * from './store/index.js'
export * from './util/seeded-random.js'
export { redactUrl } from './db/connect.js'
export * from './db/providers/local/local-binaries.js'
export { compareVersions, readServerInfo, REPORTED_SETTINGS } from './db/server-info.js'
export { toPgScaleError } from './errors.js'
export * from './filter/filter-sql.js'
export * from './filter/filter-tree.js'
export * from './filter/filter-json.js'
export * from './filter/iso-instant.js'
export * from './filter/metadata-field.js'
export { evaluate, valuesAt, elementsAt, compareCodePoints } from './filter/filter-reference.js'
export { startPgBouncer, type PgBouncer, type PgBouncerOptions } from './db/providers/local/pgbouncer.js'
