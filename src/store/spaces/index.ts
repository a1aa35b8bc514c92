// Embedding spaces: a second model's vectors beside the store's own, per-tenant migration, switch and rollback.
export * from './space-config.js' // names, tables and the space's store configuration
export * from './space-catalog.js' // the bookkeeping DDL and the write guard
export * from './space-diff.js' // what a tenant's two spaces differ in
export * from './space-change-log.js' // the same, over the keys written while the tenant migrates
export * from './backfill.js' // the resumable backfill
export * from './shadow-evaluation.js' // both spaces' answers side by side, before a switch
export * from './embedding-spaces.js' // the lifecycle: add, migrate, switch, roll back, release, drop
export * from './drop-spaces.js' // the spaces dropped with the store (its migration's down)
