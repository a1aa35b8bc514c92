/**
 * The store's objects in the database: the chunks table's versioned DDL (chunks-table), HNSW
 * index DDL and builds (hnsw-ddl, index-build, tenant-index-rebuild), metadata expression indexes (metadata-indexes), Citus
 * distribution and shard sizes (citus-distribution, shard-index-sizes), what the catalog says about
 * them (store-catalog, indexed-tenants, store-stats), and the per-tenant tuning records
 * (tenant-tuning). Nothing here reads or writes a tenant's chunks.
 *
 * May import: ../config, src/db, src/filter, src/sql, src/util, src/errors.ts.
 */
export * from './chunks-table.js' // the chunks table's versioned steps
export * from './indexes/hnsw-ddl.js' // the HNSW CREATE INDEX
export * from './indexes/index-build.js' // index builds, progress, concurrently
export * from './indexes/metadata-indexes.js' // expression indexes for filtered fields
export * from './citus-distribution.js' // distribution by tenant on Citus
export * from './indexes/shard-index-sizes.js' // a distributed table's index sizes
export * from './store-catalog.js' // the table, its partitions and indexes from the catalog
export * from './indexes/indexed-tenants.js' // which tenants an index serves
export * from './store-stats.js' // rows, tenants and bytes
export * from './tenant-tuning.js' // each tenant's tuned ef_search
export * from './store-objects.js' // the store as a versioned object: key, steps, tables, grants
export * from './indexes/hnsw-builds.js' // the shared and per-tenant HNSW builds
export * from './indexes/tenant-index-rebuild.js' // a tenant's index rebuilt beside the old one, then swapped in
export * from './store-migration.js' // a store's DDL as a migration and as plain SQL
