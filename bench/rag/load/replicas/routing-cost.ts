import { sql } from 'kysely'
import { connect, PgVectorStore, ReplicaSet, type Database, type Embedding } from '../../../../src/index.js'
import { percentile } from '../../../report/stats.js'

/** The routing's own cost: the same searches straight on one replica and through a ReplicaSet over it, interleaved. */
export interface RoutingCost {
  searches: number
  /** `store.search` on a store opened on the replica's pool: no routing. */
  straight: { p50Ms: number; p95Ms: number; meanMs: number }
  /** The same search through a store opened on the primary with `replicas` (a set of that one replica). */
  routed: { p50Ms: number; p95Ms: number; meanMs: number }
  /** routed p50 − straight p50. */
  addedP50Ms: number
  /** Median of the per-pair differences (routed − straight, same query, back to back). */
  addedPairMedianMs: number
  /**
   * The WAL check alone: the replica's replay position and lag as routing reads it, one round trip
   * on the same connection. A routed read pays it when its tenant's latest write (or its token) is
   * past the position routing last read, or that reading is older than `positionCacheMs` (25 ms).
   */
  positionCheck: { p50Ms: number; p95Ms: number }
  /** Share of the routed searches the replica served (no write in flight: all of them, or routing failed). */
  servedByReplica: number
  targetAddedP50Ms: number
  met: boolean
}

/** Where the probe runs: the load's table, the primary's pool, one standby. */
export interface RoutingCostSetup {
  primary: Database
  standbyUrl: string
  table: string
  dimensions: number
  partitions: number
  /** The searches: a tenant and a query vector each (the load's own draws). */
  draws: ReadonlyArray<{ tenantId: string; embedding: Embedding }>
  warmup: number
}

/** The routing may add this much to a search's p50 over the same search sent straight to the replica. */
export const ROUTING_TARGET_MS = 0.2

/**
 * Measures what routing adds to a search, with no write in flight: one pool of one connection on a
 * standby; a store opened straight on it (no ReplicaSet), and a store on the primary whose
 * ReplicaSet routes to that same pool — the same connection, the same server work. Each query is
 * sent both ways back to back, the order alternating, after `warmup` untimed pairs, then the WAL
 * check alone (what a read pays when routing must look at the replica's position). Query samples
 * off in both (a routed read records none; the straight store could not write one on a standby).
 *
 * ### Examples
 * ```ts
 * const cost = await routingCost({ primary: pool, standbyUrl, table, dimensions: 384, partitions: 0, draws, warmup: 100 })
 * cost.addedP50Ms <= ROUTING_TARGET_MS
 * ```
 */
export async function routingCost(s: RoutingCostSetup): Promise<RoutingCost> {
  const replica = await connect({ connectionString: s.standbyUrl, max: 1 }, { requireVector: false })
  const set = new ReplicaSet(s.primary, [replica])
  try {
    const config = {
      table: s.table,
      dimensions: s.dimensions,
      querySample: false as const,
      ...(s.partitions ? { partitions: s.partitions } : {}),
    }
    const straight = await PgVectorStore.open(replica, { ...config, migrate: false })
    const routed = await PgVectorStore.open(s.primary, { ...config, migrate: false, replicas: set })
    const times = { straight: [] as number[], routed: [] as number[], check: [] as number[] }
    const timed = async (store: PgVectorStore, d: RoutingCostSetup['draws'][number]) => {
      const t0 = performance.now()
      await store.forTenant(d.tenantId).search(d.embedding, { k: 10 })
      return performance.now() - t0
    }
    for (const [i, d] of s.draws.entries()) {
      const first = i % 2 === 0 ? 'straight' : 'routed'
      const a = await timed(first === 'straight' ? straight : routed, d)
      const b = await timed(first === 'straight' ? routed : straight, d)
      const t0 = performance.now()
      await POSITION.execute(replica)
      const check = performance.now() - t0
      if (i < s.warmup) continue
      times.check.push(check)
      times.straight.push(first === 'straight' ? a : b)
      times.routed.push(first === 'straight' ? b : a)
    }
    const stats = set.stats()
    return summarize(times, stats.replicaReads / Math.max(1, stats.replicaReads + stats.primaryReads))
  } finally {
    await replica.close()
  }
}

/** What routing reads of a replica (the same statement as the library's ReplicaNode). */
const POSITION = sql`select pg_last_wal_replay_lsn()::text as replay, pg_last_wal_receive_lsn()::text as receive, pg_is_in_recovery() as recovery,
  extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000 as lag`

function summarize(times: { straight: number[]; routed: number[]; check: number[] }, servedByReplica: number): RoutingCost {
  const of = (ms: number[]) => ({ p50Ms: percentile(ms, 50), p95Ms: percentile(ms, 95), meanMs: ms.reduce((a, b) => a + b, 0) / ms.length })
  const straight = of(times.straight)
  const routed = of(times.routed)
  const addedP50Ms = routed.p50Ms - straight.p50Ms
  return {
    searches: times.straight.length,
    straight,
    routed,
    addedP50Ms,
    addedPairMedianMs: percentile(
      times.routed.map((r, i) => r - times.straight[i]!),
      50,
    ),
    positionCheck: { p50Ms: percentile(times.check, 50), p95Ms: percentile(times.check, 95) },
    servedByReplica,
    targetAddedP50Ms: ROUTING_TARGET_MS,
    met: addedP50Ms <= ROUTING_TARGET_MS && servedByReplica === 1,
  }
}
