import type { MeasureRecallResult, OptimizeResult, TenantRecallReport } from '../../src/index.js'
import type { CitusPlacementReport } from '../report/citus-placement.js'
import type { ReportHeader } from '../report/header.js'
import type { Percentiles } from '../report/stats.js'
import type { PlanKind } from './plan-kind.js'

/** The phases of rag-bench, in the order they run. */
export const PHASES = ['ingest', 'index', 'ingest-indexed', 'search', 'queries', 'hybrid', 'writes', 'findings'] as const
export type Phase = (typeof PHASES)[number]

/** Index strategies: one shared HNSW index with iterative scans, or the store's tenant tiers. */
export type Strategy = 'shared' | 'tiered'

/** Tenant-size classes the search phase measures separately. */
export type TenantClass = 'small' | 'medium' | 'large'

/** One measured search configuration. */
export interface SearchRow {
  strategy: Strategy
  tenantClass: TenantClass
  /** The class's chunk range among the sampled tenants. */
  tenantChunks: { min: number; max: number }
  efSearch: number
  iterativeScan: 'relaxed' | 'off'
  /** Tie-aware: a returned row within the exact 10th distance + 0.001 is a hit. */
  recallAt10: number
  /** Counting only the exact ids (lower where near-duplicate chunks tie). */
  recallAt10ById: number
  latencyMs: Percentiles
  /** The plans the planner chose for the sampled tenants. */
  plans: PlanKind[]
  /** Queries that returned fewer than min(k, tenant chunks) rows (measured without the exact fallback). */
  shortResults: number
  queries: number
}

/**
 * Everything `rag-bench --json` writes; the keys are stable (documented in docs/rag-bench.md).
 * Phases that did not run are absent.
 */
export interface RagBenchReport extends ReportHeader {
  tenants: { count: number; chunks: number; largest: number; smallest: number; classes: Record<TenantClass, number> }
  ingest?: { chunks: number; seconds: number; chunksPerSecond: number }
  index?: {
    shared?: { seconds: number; bytes: number }
    tiered?: {
      seconds: number
      tenantIndexes: number
      bytes: number
      droppedSharedIndex: boolean
      notes: string[]
      /** optimize()'s recall tuning (included in `seconds`): per tenant, the setting chosen for the target. */
      tuning: OptimizeResult['tuning']
    }
    sizes: { heap: number; toast: number; sharedHnsw: number; tenantHnsw: number; btree: number; gin: number; total: number }
  }
  ingestIndexed?: { chunks: number; seconds: number; chunksPerSecond: number; ratioToUnindexed: number | null; indexes: string[] }
  search?: { k: number; rows: SearchRow[] }
  /** After the tiered optimize(): store.measureRecall at each indexed tenant's tuned setting (what search uses by default). */
  tunedRecall?: MeasureRecallResult
  /** Phase `queries`: recall on chunk samples and on held-out queries unlike the chunks, before and after tuning on traffic. */
  realQueries?: RealQueriesReport
  hybrid?: { vectorMs: Percentiles; hybridMs: Percentiles; queries: number }
  writes?: {
    writers: number
    replaceDocumentMs: Percentiles
    deleteDocumentMs: Percentiles
    replacesPerSecond: number
    deletesPerSecond: number
    deletePlan: string[]
    hnswIndexes: string[]
    operations: number
    /** What the writers' backends waited on, sampled from pg_stat_activity every 20 ms (top 8; `CPU` = active, not waiting). */
    waits: { samples: number; events: Record<string, number> }
  }
  findings?: string[]
  /** On Citus: where a sampled tenant of each class lives and how its search ran (absent on plain PostgreSQL). */
  citus?: CitusPlacementReport
  process: { peakRssMB: number; seconds: number }
}

/** One tenant's recall on chunk samples and on held-out queries unlike its chunks, at one moment. */
export interface RecallMoment {
  /** The setting its searches used (null: the exact path). */
  efSearch: number | null
  querySource: 'recent' | 'given' | 'chunks' | null
  chunkRecall: number
  evalRecall: number
  evalP50Ms: number
  exactP50Ms: number
  /** evalP50Ms ÷ exactP50Ms. */
  p50ToExact: number
}

/** What the `queries` phase measured for one tenant. */
export interface RealQueryTenant {
  tenantId: string
  chunks: number
  trafficQueries: number
  evalQueries: number
  /** Median cosine distance from a query to its nearest chunk: chunk-sample queries beside the held-out ones. */
  nearestChunkDistance: { chunkSample: number; evaluation: number }
  before: RecallMoment
  after: RecallMoment
}

/** The `queries` phase's report. */
export interface RealQueriesReport {
  queries: string
  tenants: RealQueryTenant[]
  /**
   * The traffic's searches timed through a store with the query sample on and, alternating, the
   * same query through the bench's store with it off (same settings): what sampling costs a search.
   */
  sampling: { searches: number; onP50Ms: number; offP50Ms: number; ratio: number }
  /** optimize() after the traffic: seconds, and the tenants it re-tuned. */
  retune: { seconds: number; tenants: string[] }
  /** store.recallReport() after it. */
  monitor: TenantRecallReport[]
  method: string
}
