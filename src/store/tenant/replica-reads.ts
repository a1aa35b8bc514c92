import type { Database } from '../../db/database.js'
import type { ReplicaSet } from '../../replicas/index.js'

/**
 * How a tenant handle reads from replicas: the set that routes its reads (and notes its writes),
 * and how a replica's handle is bound to the tenant (its row-level security setting, when the
 * store has `isolation: 'rls'`).
 *
 * ### Examples
 * ```ts
 * const reads: ReplicaReads = { set: replicas, bind: (db) => db }
 * ```
 */
export interface ReplicaReads {
  set: ReplicaSet
  bind: (db: Database) => Database
}
