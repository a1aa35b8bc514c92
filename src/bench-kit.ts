/**
 * The second entry, `pgscale/bench-kit`: what the benches and tests use beyond the public API
 * (statement renderers, index names, local-month arithmetic, seeded randomness, providers' internals).
 * Not a stable API: it follows the benches. Apps import `pgscale`.
 */
export * from './db/local-settings.js'
export * from './db/providers/container-engine.js'
export * from './db/providers/local-cluster.js'
export * from './db/providers/registry.js'
export * from './plan/explain.js'
export * from './rollup/local-month.js'
export * from './rollup/measure-combiner.js'
export * from './rollup/rollup-sql.js'
export * from './sql/advisory-lock.js'
export * from './sql/literal.js'
export * from './store/binary-copy.js'
export { toVectorLiteral } from './store/embedding.js'
export * from './store/index-build.js'
export * from './store/index-names.js'
export * from './store/measure-recall.js'
export * from './store/recall.js'
export * from './store/store-config.js'
export * from './store/store-sql.js'
export * from './store/tune-recall.js'
export * from './util/seeded-random.js'
export { redactUrl } from './db/connect.js'
export * from './db/providers/local-binaries.js'
export { compareVersions, readServerInfo, REPORTED_SETTINGS } from './db/server-info.js'
export { toPgScaleError } from './errors.js'
