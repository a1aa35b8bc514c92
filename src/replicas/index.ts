/**
 * Read replicas with read-your-writes: a primary and its streaming replicas (replica-set), each
 * replica's replay position and health (replica-node), WAL positions and the consistency tokens
 * apps carry across requests (wal-position). The store's tenant reads and the rollup's reads go
 * through a ReplicaSet when one is given; nothing here runs without one. Every write of the store
 * and the rollup is recorded through the write journal (write-journal).
 *
 * May import: src/db, src/sql, src/util, src/errors.ts.
 */
export * from './wal-position.js' // WAL positions and consistency tokens
export * from './replica-node.js' // one replica: replay position, lag, health
export * from './replica-set.js' // routing reads to replicas that have replayed the caller's writes
export * from './write-journal.js' // the one place committed writes are recorded
