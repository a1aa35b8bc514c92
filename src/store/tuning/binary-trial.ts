import type { Database } from '../../db/database.js'
import { withLease } from '../../db/lease-lock.js'
import { quoteQualified } from '../../sql/quote.js'
import { nearestStatements, tenantTrialIndexName, vectorSql, type ResolvedStoreConfig } from '../config/index.js'
import { toVectorLiteral, type Embedding } from '../ingest/index.js'
import {
  buildIndex,
  dropIndexInTurn,
  hnswIndexDdl,
  tenantPartition,
  type IndexBuildOptions,
  type TunedAlternative,
} from '../schema/index.js'
import { percentile } from './measure-recall.js'
import { countRecall, DEFAULT_RECALL_EPSILON } from './recall.js'
import type { ScoredRow } from './tenant-vectors.js'
import type { RecallJudgement } from './tuner-alternatives.js'

/** Re-rank factors tried, smallest first: `rerank × k` binary candidates re-ranked by the exact distance. */
export const TRIAL_RERANKS: readonly number[] = [8, 16, 32]

/** What a binary trial needs: the store, the tenant, where its statements go, and what it is judged on. */
export interface BinaryTrialContext {
  /** The store's handle for the trial index's DDL (the owner's). */
  db: Database
  /** The handle its searches go through (the tenant's scope under row-level security). */
  searchDb: Database
  config: ResolvedStoreConfig
  tenantId: string
  queries: readonly Embedding[]
  truth: ReadonlyArray<readonly ScoredRow[]>
  steps: readonly number[]
  judge(perQuery: readonly number[]): RecallJudgement
  /** The slowest p50 the trial may have to meet the target (the tuner's latency bound). */
  boundMs: number
  /** The p50 of the full-vector HNSW setting the tuner chose (undefined: none met the target). */
  hnswP50Ms: number | undefined
  build: IndexBuildOptions
}

/**
 * Tries binary quantization with re-rank on one tenant of a store whose indexes hold full vectors:
 * builds a binary HNSW index of the tenant beside its own (`binary_quantize(embedding)::bit(D)`,
 * Hamming, partial on the tenant), searches the tuning queries through it with `rerank × k`
 * candidates re-ranked by the exact distance (re-rank 8, then 16, then 32; the `ef_search` ladder
 * at each), judges each step's per-query recall as the tuner judges its own settings, then drops
 * the index. An index a trial left (the process died) is dropped first. Two trials of one tenant
 * take turns (a lease on the trial index), and its build and drops take turns with the table's
 * other index maintenance. Resolves to the alternative
 * as measured: `faster` (met the target within the bound, faster than the full-vector setting, or
 * where none met it), `slower`, or `missed the target`; the `reason` says what it would take to
 * use it (a space with `index: { quantization: 'binary' }`: the tuner cannot change one tenant's
 * index type in place — the store's search statements are one per store).
 *
 * ### Examples
 * ```ts
 * const tried = await tryBinaryRerank({ db, searchDb, config, tenantId: 'acme', queries, truth, steps: [40, 80], judge, boundMs: 4, hnswP50Ms: 3.1, build: {} })
 * tried.outcome // 'faster' | 'slower' | 'missed the target'
 * ```
 */
export async function tryBinaryRerank(ctx: BinaryTrialContext): Promise<TunedAlternative> {
  const { db, config, tenantId } = ctx
  const name = tenantTrialIndexName(config.table, tenantId)
  // Two trials of one tenant (two optimize() at once) take turns: one's first drop would otherwise
  // remove the other's index mid-measurement, or deadlock with its concurrent build.
  return withLease(db, `pgscale.trial:${quoteQualified(config.schema, name)}`, async () => {
    const concurrently = ctx.build.concurrently === true
    // Under the table's maintenance lock, as the builds and drops of its indexes take turns.
    const drop = () => dropIndexInTurn(db, { schema: config.schema, name, table: config.qualified }, concurrently)
    await drop()
    const binary = binaryVariant(config, TRIAL_RERANKS[0]!)
    const on = await tenantPartition(db, config, tenantId)
    const ddl = await hnswIndexDdl(db, binary, { name, m: 16, efConstruction: 64, concurrently, tenantId, on })
    try {
      const built = await buildIndex(
        db,
        { schema: config.schema, name, qualifiedTable: on ?? config.qualified, ddl, ...(on ? { lockTable: config.qualified } : {}) },
        {},
        ctx.build,
      )
      return await measureTrial(ctx, built.seconds)
    } finally {
      await drop()
    }
  })
}

/** The trial's searches through the built index, re-rank 8, 16, 32 in turn, as {@link tryBinaryRerank} reports them. */
async function measureTrial(ctx: BinaryTrialContext, buildSeconds: number): Promise<TunedAlternative> {
  for (const rerank of TRIAL_RERANKS) {
    const found = await binaryLadder(ctx, binaryVariant(ctx.config, rerank))
    if (!found) continue
    const faster = ctx.hnswP50Ms === undefined || found.p50Ms < ctx.hnswP50Ms
    return {
      kind: 'binary-rerank',
      rerank,
      buildSeconds,
      efSearch: found.efSearch,
      recall: found.recall,
      p50Ms: found.p50Ms,
      outcome: faster ? 'faster' : 'slower',
      reason: faster
        ? `binary index re-ranked ×${rerank} met the target at ${found.p50Ms.toFixed(2)} ms p50` +
          (ctx.hnswP50Ms === undefined
            ? ' where no full-vector setting did'
            : ` against ${ctx.hnswP50Ms.toFixed(2)} ms for the full-vector index`) +
          ": to use it, move the tenant to a space with index: { quantization: 'binary' } (addSpace, migrateTenant, switchTenant)"
        : `binary index re-ranked ×${rerank} met the target at ${found.p50Ms.toFixed(2)} ms p50, slower than the full-vector index (${ctx.hnswP50Ms!.toFixed(2)} ms)`,
    }
  }
  return {
    kind: 'binary-rerank',
    rerank: TRIAL_RERANKS.at(-1)!,
    buildSeconds,
    efSearch: null,
    outcome: 'missed the target',
    reason: `no ef_search up to ${ctx.steps.at(-1)} met the target within ${ctx.boundMs.toFixed(2)} ms at re-rank ${TRIAL_RERANKS.join(', ')}`,
  }
}

/** The store's configuration as a binary-quantized store of the same table and column would have it. */
function binaryVariant(config: ResolvedStoreConfig, rerank: number): ResolvedStoreConfig {
  const vectors = vectorSql(config.vectorType, 'binary', config.distance, config.dimensions)
  return { ...config, quantization: 'binary', rerank, vectors, opclass: vectors.opclass }
}

/**
 * The first `ef_search` of the ladder whose per-query recall the judge accepts within the bound,
 * through the trial index: every query at the first step, later steps only the queries not yet
 * perfect (as the tuner's own ladder), the accepted step measured again on all of them.
 */
async function binaryLadder(
  ctx: BinaryTrialContext,
  binary: ResolvedStoreConfig,
): Promise<{ efSearch: number; recall: number; p50Ms: number } | undefined> {
  const statement = nearestStatements(binary).knn('')
  const k = 10
  const n = ctx.queries.length
  const all = Array.from({ length: n }, (_, i) => i)
  const perQuery = new Array<number>(n).fill(1)
  const measure = async (efSearch: number, indexes: readonly number[]) => {
    // The walk must yield rerank × k candidates: ef_search at least that (as a binary store's search sets it).
    const settings = Object.freeze({ 'hnsw.ef_search': effectiveEf(efSearch, binary), 'hnsw.iterative_scan': 'relaxed_order' })
    const ms: number[] = []
    for (const i of indexes) {
      const t0 = performance.now()
      const got = await ctx.searchDb.queryWithSettings<{ documentId: string; chunkIndex: number; distance: number }>(
        statement,
        [ctx.tenantId, toVectorLiteral(ctx.queries[i]!), k],
        settings,
      )
      ms.push(performance.now() - t0)
      const counted = countRecall(ctx.truth[i]!, got, DEFAULT_RECALL_EPSILON)
      perQuery[i] = counted.expected ? counted.hits / counted.expected : 1
    }
    return percentile(ms, 50)
  }
  const mean = () => perQuery.reduce((a, b) => a + b, 0) / Math.max(1, n)
  let active = all
  let previous = -1
  for (const efSearch of ctx.steps) {
    if (effectiveEf(efSearch, binary) === previous) continue
    previous = effectiveEf(efSearch, binary)
    const p50Ms = await measure(efSearch, active)
    if (ctx.judge(perQuery).ok) {
      const allP50 = active.length < n ? await measure(efSearch, all) : p50Ms
      if (ctx.judge(perQuery).ok) return allP50 <= ctx.boundMs ? { efSearch, recall: mean(), p50Ms: allP50 } : undefined
    }
    if (p50Ms > ctx.boundMs && active.length >= 20) return undefined
    active = all.filter((i) => perQuery[i]! < 1)
    if (active.length === 0) return undefined
  }
  return undefined
}

/** The `ef_search` a binary search runs at: at least `rerank × k` (k 10), at most 1000. */
function effectiveEf(efSearch: number, binary: ResolvedStoreConfig): number {
  return Math.min(1000, Math.max(efSearch, binary.rerank * 10))
}
