/**
 * pgscale/mastra: Mastra's vector store interface (`MastraVector` of `@mastra/core/vector`) on
 * pgscale's tenant-scoped store. `PgScaleVector` is a MastraVector bound to one tenant
 * (pg-scale-vector); `PgScaleVectors` makes them for many tenants over shared tables. A Mastra index
 * is a pgscale store table, and a tenant-keyed registry records which tenant has which index
 * (index-catalog). Mastra's MongoDB-style filters are translated into pgscale's filter language,
 * refusing what it does not evaluate (mastra-filter); every failure reaches Mastra as a
 * `MastraError` (mastra-errors); requests are checked before anything is sent (vector-requests).
 * `@mastra/core` is an optional peer dependency: the main build compiles against the declarations in
 * framework.d.ts, `tsconfig.adapters.json` against the real package.
 *
 * May import: src/store (through its index.ts), src/filter, src/sql, src/util, src/errors.ts — and
 * `@mastra/core`. Nothing in src/ imports this folder.
 */
export { PgScaleVector, PgScaleVectors, type PgScaleVectorOptions, type PgScaleVectorsOptions } from './pg-scale-vector.js'
export { type PgScaleQueryVectorParams, MAX_TOP_K, similarity } from './vector-requests.js'
export { PgScaleFilterTranslator, FilterTranslationError, type PgScaleVectorFilter } from './mastra-filter.js'
export { REGISTRY_TABLE, type DatabaseHandle, type IndexStoreOptions, type MastraMetric } from './index-catalog.js'
export { STORE_NAME } from './mastra-errors.js'
