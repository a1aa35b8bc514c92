/**
 * The tenant-scoped vector store. `PgVectorStore` (pg-vector-store.ts) is the facade: one-line
 * methods over the rooms below it, lowest first —
 *   config/  what a store is: options, vector types, names, statements (no database)
 *   schema/  its objects in the database: tables, indexes, catalog, distribution, tuning records
 *   ingest/  rows going in: input checks, binary COPY, bulk loads
 *   tenant/  one tenant's reads and writes, filtered search, the query sample
 *   tuning/  tiers, recall measured and tuned, the recall monitor
 *   spaces/  embedding spaces: a second model's vectors, per-tenant migration, switch, rollback
 * A room imports only the rooms below it, each through its entry file (an ESLint rule keeps it
 * so: scripts/eslint/import-rooms.js). Outside src/store, import from here.
 *
 * May import: its rooms, src/db, src/filter, src/plan, src/sql, src/util, src/errors.ts.
 */
export * from './pg-vector-store.js'
export * from './spaces/index.js'
export * from './tuning/index.js'
export * from './tenant/index.js'
export * from './ingest/index.js'
export * from './schema/index.js'
export * from './config/index.js'
