import { connect, PgVectorStore, ReplicaSet, type Database, type ReplicaOptions, type ReplicaStats } from '../../../../src/index.js'
import type { LoadConsistency } from '../load-step.js'
import { SharedPositions, sharedTokens, type SharedWalPositions } from './shared-positions.js'

/** What a load thread needs to read from the standbys (`--replicas`). */
export interface WorkerReplicas {
  /** Each standby's URL, in the order the report numbers them (replica 1, 2, …). */
  urls: string[]
  options: ReplicaOptions
  /** The tenants' latest write positions, shared by every thread. */
  positions: SharedWalPositions
  /** Carry the positions as consistency tokens (false: only each thread's own writes are known to its set). */
  tokens: boolean
}

/** Where a load thread's store lives and how big its pools are. */
export interface WorkerStoreOptions {
  url: string
  table: string
  dimensions: number
  partitions: number
  connections: number
  connectionTimeoutMillis: number
  replicas?: WorkerReplicas
}

/** A load thread's store, its primary pool, and — with replicas — its routing and its stats. */
export interface WorkerStore {
  store: PgVectorStore
  pool: Database
  consistency?: LoadConsistency
  /** The thread's replica set's counts since it was made (`null` without replicas). */
  stats(): ReplicaStats | null
  close(): Promise<void>
}

/**
 * Opens a load thread's pool and store; with `replicas`, a pool of the same size on each standby,
 * a `ReplicaSet` over them (as one app server would have) handed to the store, and the shared
 * tokens its reads carry.
 *
 * ### Examples
 * ```ts
 * const { store, consistency, stats } = await openWorkerStore({ url, table, dimensions: 384, partitions: 0, connections: 2, connectionTimeoutMillis: 10_000, replicas })
 * ```
 */
export async function openWorkerStore(o: WorkerStoreOptions): Promise<WorkerStore> {
  const pool = await connect({ connectionString: o.url, max: o.connections, connectionTimeoutMillis: o.connectionTimeoutMillis })
  const standbys: Database[] = []
  try {
    for (const url of o.replicas?.urls ?? [])
      standbys.push(
        await connect(
          { connectionString: url, max: o.connections, connectionTimeoutMillis: o.connectionTimeoutMillis },
          { requireVector: false },
        ),
      )
    const set = o.replicas ? new ReplicaSet(pool, standbys, o.replicas.options) : undefined
    const store = await PgVectorStore.open(pool, {
      table: o.table,
      dimensions: o.dimensions,
      ...(o.partitions ? { partitions: o.partitions } : {}),
      ...(set ? { replicas: set } : {}),
    })
    const consistency = o.replicas && sharedTokens(store, SharedPositions.attach(o.replicas.positions), o.replicas.tokens)
    return {
      store,
      pool,
      consistency,
      stats: () => set?.stats() ?? null,
      close: async () => {
        await Promise.all([pool, ...standbys].map((db) => db.close().catch(() => {})))
      },
    }
  } catch (err) {
    await Promise.all([pool, ...standbys].map((db) => db.close().catch(() => {})))
    throw err
  }
}
