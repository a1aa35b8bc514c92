import { InvalidArgumentError } from '../../errors.js'
import type { FilterTuning, IndexBuildOptions, TenantTuning, TunedAlternative, TuningCache } from '../schema/index.js'
import type { Embedding } from '../ingest/index.js'
import { exactAnswers, exactAnswersInMemory, percentile, searchRecall } from './measure-recall.js'
import type { TenantVectors } from './tenant-vectors.js'
import { DEFAULT_RECALL_EPSILON } from './recall.js'
import type { Database } from '../../db/database.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import { DEFAULT_EXACT_BELOW, modelExactBelow, type TenantStore } from '../tenant/index.js'
import { recordRecall } from './recall-monitor.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import type { BinaryTrialContext } from './binary-trial.js'
import { chooseIndexSetting, type Graph, type IndexChoice, type LadderStep, type RecallJudgement } from './tuner-alternatives.js'
import { modelQueries, type QueryFamily } from './query-model.js'
import { freshRecallBound, MIN_BOUND_QUERIES, recallBound, type RecallBound } from './recall-bound.js'
import { filterCases, type FilterCaseSources } from './filtered/filter-cases.js'
import { type FilterTuningReport, tuneFilteredPath } from './filtered/filtered-tuning.js'

/** The recall target `optimize()` tunes every indexed tenant to, unless told otherwise. */
export const DEFAULT_TARGET_RECALL = 0.98

/** A tuned tenant is tuned again when its chunks changed by more than this fraction (`tuning.retuneAbove`'s default). */
export const DEFAULT_RETUNE_ABOVE = 0.2

/** How `optimize({ targetRecall })` looks for each indexed tenant's cheapest setting. */
export interface RecallTuningOptions {
  /** `ef_search` values tried, ascending. Default 40, 64, 100, 130, 160, 200, 250, 320, 400, 500, 640, 800, 1000. */
  efSearchSteps?: readonly number[]
  /**
   * The slowest search p50 (ms) a setting may have. Default: the tenant's exact scan p50 on the
   * same sample — an index slower than the exact path, which has recall 1.0, serves no purpose.
   */
  maxLatencyMs?: number
  /**
   * Rebuilds of the tenant's index tried, in order, when no `ef_search` meets the target or the
   * cheapest that does costs more than `cheapFraction` of the exact scan. Default m 16 /
   * ef_construction 128, then m 24 / 256. Each is built beside the old index and swapped in
   * (concurrently with `optimize({ concurrently: true })`); a rebuild that loses is undone.
   */
  rebuilds?: ReadonlyArray<{ m: number; efConstruction: number }>
  /**
   * When the cheapest `ef_search` that meets the target costs more than this fraction of the
   * tenant's exact-scan p50 (a near-exhaustive setting: an index that buys little), the rebuilds
   * and quantized paths are tried and the cheapest that meets the target wins — unless the ladder's
   * first step already met it (a larger graph cannot lower `ef_search` further). 0 tries them
   * always. Default 0.5.
   */
  cheapFraction?: number
  /** Tune each indexed tenant's filtered path too (its walk budget and exact threshold). Default true. */
  filters?: boolean
  /** A tenant's filtered path is tuned on its sampled filtered searches when it has at least this many; else on synthetic filters. Default 20. */
  minRecentFilters?: number
  /** Searches each filter is measured with: a synthetic filter with this many tuning queries, a sent one topped up to it with the tenant's tuning queries (within 2 × `sample` in all). Default 20. */
  filterQueries?: number
  /** Tuning queries: up to this many recent ones, or this many of the query model's. Default 200. */
  sample?: number
  /**
   * One-sided confidence of the stated bound: a setting is chosen when the lower bound of its mean
   * per-query recall (before traffic, also no more than the worst query family's mean) meets the
   * target with this confidence. 0.5..0.999. Default 0.95.
   */
  confidence?: number
  /** A tuned tenant is tuned again when its chunks changed by more than this fraction. Default 0.2. */
  retuneAbove?: number
  /** Seed of the sample. Default `pgscale`. */
  seed?: string
  /**
   * A tenant is tuned on its recent real queries (the store's query sample, up to `sample` of the
   * newest) when it has at least this many; else on the query model's (points it never stored,
   * calibrated to its own distances: `modelQueries`). Default 50.
   */
  minRecentQueries?: number
}

/** What tuning found for one tenant. */
export interface TenantTuningReport {
  tenantId: string
  rows: number
  /** `index`: searches use the index at `efSearch`; `exact`: no setting met the target within the bound. */
  path: 'index' | 'exact'
  efSearch: number | null
  /** Tie-aware recall@10 of the choice on the sample (1 on the exact path). */
  recall: number
  searchP50Ms: number | null
  exactP50Ms: number
  latencyBoundMs: number
  /**
   * What the stated bound had to reach: the target (the lower confidence bound of the mean
   * per-query recall, over queries, not results; see `bound`).
   */
  requiredOnSample: number
  /**
   * The stated interval: with `confidence`, `fresh` new queries drawn like the tuning queries get a
   * mean per-query recall@10 of at least `lower` (a prediction bound, `freshRecallBound`; with the
   * query model also at most its worst family's mean) — what delivered recall is compared with.
   * `meanLower` is the bound on the true mean the choice was judged on (`judgeRecall`: it reached
   * the target). `mean` is the sample's, `queries` the queries it rests on. `tooSmall` below
   * `MIN_BOUND_QUERIES` (30). On the exact path 1 / 1.
   */
  bound: StatedBound
  /** With the query model: the chosen setting's mean and bound per query family (the stated lower bound is at most the worst mean). */
  families?: Array<{ family: QueryFamily } & StatedBound>
  /** Set when the tenant's index was rebuilt to reach the target. */
  rebuiltWith?: { m: number; efConstruction: number }
  /**
   * The queries it was tuned on: recent real ones (the query sample), the call's (`optimize({ queries })`)
   * or the query model's around its chunks (`chunks`).
   */
  querySource: 'recent' | 'given' | 'chunks'
  /** With the query model: the median distance (Euclidean; chord for cosine) from a chunk to its 10th neighbour, its scale. */
  kthDistance?: number
  /** Re-tuned because the recall monitor flagged its delivered recall (below the target minus the margin). */
  retunedFlagged?: boolean
  queries: number
  /** Tuned on recent queries: recall of the chosen setting on a chunk sample, for comparison. */
  chunkRecall?: number
  /** Every setting measured, in order. */
  tried: LadderStep[]
  /** The alternatives tried when the cheapest `ef_search` was near-exhaustive (rebuilds with their build time, quantized paths), and why each lost. */
  alternatives: TunedAlternative[]
  /** The filtered path: what was chosen and each candidate budget tried. */
  filter?: FilterTuningReport
}

/** A stated interval: see {@link TenantTuningReport.bound}. */
export type StatedBound = Pick<RecallBound, 'lower' | 'mean' | 'queries' | 'confidence' | 'tooSmall'> & {
  /** The one-sided bound on the true mean the choice was judged on (absent per family). */
  meanLower?: number
  /** The fresh queries `lower` is stated for (as many as were measured). */
  fresh?: number
}

const DEFAULT_STEPS = [40, 64, 100, 130, 160, 200, 250, 320, 400, 500, 640, 800, 1000]
const DEFAULT_REBUILDS = [
  { m: 16, efConstruction: 128 },
  { m: 24, efConstruction: 256 },
]

/** Checked tuning parameters. */
export function tuningParameters(options: RecallTuningOptions) {
  const steps = [...(options.efSearchSteps ?? DEFAULT_STEPS)]
  if (steps.length === 0 || steps.some((s, i) => !Number.isInteger(s) || s < 10 || s > 1000 || (i > 0 && s <= steps[i - 1]!))) {
    throw new InvalidArgumentError('efSearchSteps must be ascending integers from 10 to 1000')
  }
  const sample = options.sample ?? 200
  assertIntegerIn(sample, 10, 10_000, 'tuning sample')
  const retuneAbove = options.retuneAbove ?? DEFAULT_RETUNE_ABOVE
  if (typeof retuneAbove !== 'number' || !(retuneAbove >= 0)) throw new InvalidArgumentError('retuneAbove must be a non-negative number')
  if (options.maxLatencyMs !== undefined && !(typeof options.maxLatencyMs === 'number' && options.maxLatencyMs > 0)) {
    throw new InvalidArgumentError('maxLatencyMs must be a positive number')
  }
  const minRecentQueries = options.minRecentQueries ?? 50
  assertIntegerIn(minRecentQueries, 10, 10_000, 'minRecentQueries')
  const cheapFraction = options.cheapFraction ?? 0.5
  if (typeof cheapFraction !== 'number' || !(cheapFraction >= 0))
    throw new InvalidArgumentError('cheapFraction must be a non-negative number')
  if (options.filters !== undefined && typeof options.filters !== 'boolean')
    throw new InvalidArgumentError('tuning.filters must be a boolean')
  const confidence = options.confidence ?? 0.95
  if (typeof confidence !== 'number' || !(confidence >= 0.5 && confidence <= 0.999))
    throw new InvalidArgumentError(`tuning.confidence must be a number from 0.5 to 0.999, got ${String(confidence)}`)
  return {
    confidence,
    cheapFraction,
    filters: options.filters ?? true,
    minRecentFilters: assertIntegerIn(options.minRecentFilters ?? 20, 1, 10_000, 'minRecentFilters'),
    filterQueries: assertIntegerIn(options.filterQueries ?? 20, 1, 1000, 'filterQueries'),
    steps,
    sample,
    minRecentQueries,
    retuneAbove,
    rebuilds: options.rebuilds ?? DEFAULT_REBUILDS,
    seed: options.seed ?? 'pgscale',
    maxLatencyMs: options.maxLatencyMs,
  }
}

/**
 * The old margin, kept for callers: the recall a sample of `results` must show so that the true
 * recall meets `target` with 95% confidence under a binomial model of results. Tuning no longer
 * uses it — results of one query are correlated, the query is the sampling unit
 * ({@link recallBound}).
 *
 * ### Examples
 * ```ts
 * requiredOnSample(0.98, 2000) // 0.9851
 * ```
 */
export function requiredOnSample(target: number, results: number): number {
  if (target >= 1) return 1
  return Math.min(1, target + 1.645 * Math.sqrt((target * (1 - target)) / Math.max(1, results)))
}

/**
 * The old raised target of tunings on perturbed chunks, kept for callers; the query model
 * ({@link modelQueries}) replaced both. It was: half the target's miss rate (0.99 for 0.98).
 * Chunk samples flatter — a query near a stored chunk finds it easily (on the Debian-docs corpus,
 * 0.995-0.998 on chunk samples where held-out short queries measured 0.988-0.998, docs/store.md) —
 * so without enough recent queries tuning asks for more. Half, not less: a quarter (0.995) made the
 * 20-tenant quick start tune 28% longer (29.3 vs 22.9 s) for tenants whose real queries it cannot see.
 *
 * ### Examples
 * ```ts
 * chunkSampleTarget(0.98) // 0.99
 * ```
 */
export function chunkSampleTarget(target: number): number {
  return 1 - (1 - target) / 2
}

/**
 * Whether a tenant's recorded tuning is still good for `target` at `rows` chunks, given its query
 * sample: re-tuned when its size changed by more than `retuneAbove`, when it was tuned on chunks
 * and now has enough recent queries, when more than `retuneAbove` of its sample is newer than
 * the tuning (a tuning on given queries changes only with the size, or with new given queries), or
 * when the recall monitor `flagged` its delivered recall ({@link deliveredBelowStated}).
 *
 * ### Examples
 * ```ts
 * stillTuned(tuning, 12_000, 0.98, 0.2, { total: 256, newer: 10 }, 50) // true
 * ```
 */
export function stillTuned(
  tuning: TenantTuning | undefined,
  rows: number,
  target: number,
  retuneAbove: number,
  sample: { total: number; newer: number } = { total: 0, newer: 0 },
  minRecentQueries = 50,
  flagged = false,
): boolean {
  if (!tuning || tuning.targetRecall !== target || flagged) return false
  if (Math.abs(rows - tuning.rowsAtTuning) > retuneAbove * Math.max(1, tuning.rowsAtTuning)) return false
  if (tuning.querySource === 'chunks') return sample.total < minRecentQueries
  if (tuning.querySource === 'given') return true
  return sample.newer <= retuneAbove * Math.max(1, sample.total)
}

/** What tuning one tenant needs of its store. */
export interface TuningDeps extends FilterCaseSources {
  cache: TuningCache
  /** Rebuilds the tenant's index with this build (beside the old one, then swapped in); resolves to the seconds it took. */
  rebuild: (tenantId: string, build: IndexBuildOptions) => Promise<number>
  /** The graph the tenant's index has now. */
  currentGraph: (tenantId: string) => Promise<Graph | undefined>
  /** Up to `n` of the tenant's recent query embeddings (newest first). */
  recentQueries: (tenantId: string, n: number) => Promise<number[][]>
  /**
   * Tries binary quantization with re-rank on the tenant ({@link tryBinaryRerank}) when the tuner
   * reaches its alternatives; absent: the binary path is reported as the store has it, untried.
   */
  binaryTrial?: (tenantId: string, trial: BinaryTrialInput) => Promise<TunedAlternative>
}

/** The tuner's binary trial of one tenant (its queries, answers, ladder, bound), when the store has one. */
function binaryTrialFor(deps: TuningDeps, tenantId: string, input: Omit<BinaryTrialInput, 'hnswP50Ms' | 'judge'>) {
  const trial = deps.binaryTrial
  return trial ? { binaryTrial: (t: Pick<BinaryTrialInput, 'hnswP50Ms' | 'judge'>) => trial(tenantId, { ...t, ...input }) } : {}
}

/** What a binary trial is judged on: the tuner's queries, answers, ladder, judge and bound. */
export type BinaryTrialInput = Pick<BinaryTrialContext, 'queries' | 'truth' | 'steps' | 'judge' | 'boundMs' | 'hnswP50Ms' | 'build'>

/**
 * Finds one tenant's cheapest setting that meets `target` on its recent real queries (when it has
 * `minRecentQueries`), else on a seeded sample of its own chunks held to {@link chunkSampleTarget}:
 * `ef_search` first (ascending); when the cheapest that meets it costs more than `cheapFraction` of
 * the exact scan, or none does, rebuilds of its index with a larger graph and the quantized paths
 * the store has ({@link chooseIndexSetting}); the cheapest within the latency bound wins, else the
 * exact path. Then its filtered path: the walk's budget and the exact threshold, measured on its
 * sampled filtered searches or synthetic filters over the declared fields ({@link tuneFilteredPath}),
 * else derived from the costs just measured. The choice is saved in the store's tuning table, its
 * recall in the recall monitor (with the chunk-sample and filtered figures beside it).
 *
 * ### Examples
 * ```ts
 * const report = await tuneTenant(deps, store.forTenant('acme'), 12_000, 0.98, tuningParameters({}), {})
 * ```
 */
export async function tuneTenant(
  deps: TuningDeps,
  handle: TenantStore,
  rows: number,
  target: number,
  params: ReturnType<typeof tuningParameters>,
  indexBuild: IndexBuildOptions,
  given?: readonly Embedding[],
  flagged = false,
): Promise<TenantTuningReport> {
  const tenantId = handle.tenantId
  const { querySource, queries, families, kthDistance, tenant } = await tuningQueries(deps, handle, params, given, flagged)
  const { truth, ms: exactMs } = await tuningTruth(handle, deps.config, queries, tenant)
  const exactP50Ms = percentile(exactMs, 50)
  const bound = params.maxLatencyMs ?? exactP50Ms
  const setting = await chooseIndexSetting({
    handle,
    config: deps.config,
    queries,
    truth,
    steps: params.steps,
    judge: (perQuery) => judgeRecall(perQuery, families, target, params).judged,
    boundMs: bound,
    cheapMs: params.cheapFraction * exactP50Ms,
    rebuilds: params.rebuilds,
    current: (await deps.currentGraph(tenantId)) ?? { m: indexBuild.m ?? 16, efConstruction: indexBuild.efConstruction ?? 64 },
    rebuild: (graph) => deps.rebuild(tenantId, { ...indexBuild, m: graph.m, efConstruction: graph.efConstruction }),
    ...binaryTrialFor(deps, tenantId, { queries, truth, steps: params.steps, boundMs: bound, build: indexBuild }),
  })
  const { chosen, rebuiltWith } = setting
  const { stated, perFamily } = statedInterval(chosen, families, queries.length, params)
  const unfiltered: TenantTuning = {
    tenantId,
    rowsAtTuning: rows,
    searchP50Ms: chosen?.p50Ms ?? null,
    exactP50Ms,
    efSearch: chosen?.efSearch ?? null,
    exact: !chosen,
    targetRecall: target,
    recall: chosen?.recall ?? 1,
    indexM: rebuiltWith?.m ?? null,
    indexEfConstruction: rebuiltWith?.efConstruction ?? null,
    tunedAt: new Date(),
    querySource,
    tuningQueries: queries.length,
    filter: null,
    alternatives: setting.alternatives.length ? setting.alternatives : null,
    recallBound: { lower: stated.lower, mean: stated.mean, queries: stated.queries, confidence: stated.confidence },
  }
  await deps.cache.save(unfiltered) // first: the filtered path is measured as searches will run it
  const filtered =
    chosen && params.filters
      ? await tuneFiltered(deps, handle, { ...unfiltered, exactP50Ms, efSearch: chosen.efSearch, target, queries }, params)
      : undefined
  const tuning: TenantTuning = { ...unfiltered, filter: filtered?.choice ?? null }
  if (filtered) await deps.cache.save(tuning)
  const chunkRecall = await recordTuningRecall(deps, handle, tuning, params, stated)
  return {
    tenantId,
    rows,
    path: chosen ? 'index' : 'exact',
    efSearch: tuning.efSearch,
    recall: tuning.recall,
    searchP50Ms: tuning.searchP50Ms,
    exactP50Ms,
    latencyBoundMs: bound,
    requiredOnSample: target,
    bound: stated,
    ...(perFamily ? { families: perFamily } : {}),
    rebuiltWith,
    querySource,
    queries: queries.length,
    ...(kthDistance === undefined ? {} : { kthDistance }),
    ...(flagged && { retunedFlagged: true }),
    ...(chunkRecall === undefined ? {} : { chunkRecall }),
    tried: setting.tried,
    alternatives: setting.alternatives,
    ...(filtered ? { filter: filtered } : {}),
  }
}

/** The exact answers to the tuning queries: from memory when the model read the whole tenant, the exact scan timed on a few. */
async function tuningTruth(
  handle: TenantStore,
  config: ResolvedStoreConfig,
  queries: readonly Embedding[],
  tenant: TenantVectors | undefined,
) {
  return tenant && config.vectorType === 'vector'
    ? exactAnswersInMemory(handle, config, tenant, queries, 10)
    : exactAnswers(handle, queries, 10)
}

/**
 * The tenant's filtered path: measured on its filtered searches or synthetic filters
 * ({@link filterCases}, {@link tuneFilteredPath}); with neither, derived from the unfiltered
 * costs (`source: 'model'`, nothing measured).
 */
async function tuneFiltered(
  deps: TuningDeps,
  handle: TenantStore,
  tenant: {
    rowsAtTuning: number
    searchP50Ms: number | null
    exactP50Ms: number
    efSearch: number
    target: number
    queries: readonly Embedding[]
  },
  params: ReturnType<typeof tuningParameters>,
): Promise<FilterTuningReport> {
  const rows = tenant.rowsAtTuning
  const found = await filterCases(deps, handle.tenantId, rows, tenant.queries, {
    minRecent: params.minRecentFilters,
    sample: params.sample,
    perFilter: params.filterQueries,
  })
  if (found) return tuneFilteredPath(handle, found.cases, { ...tenant, rows, source: found.source })
  const choice: FilterTuning = {
    candidates: 40,
    exactBelow: modelExactBelow(tenant) ?? DEFAULT_EXACT_BELOW,
    source: 'model',
    filters: 0,
    queries: 0,
    recall: null,
    walkP50Ms: null,
    exactMsPerRow: null,
  }
  return { choice, tried: [], filters: [] }
}

/**
 * The queries a tenant is tuned on: the given ones, else its recent queries when it has enough (a
 * tenant the monitor flagged: when it has {@link MIN_FLAGGED_QUERIES}), else the query model's.
 */
async function tuningQueries(
  deps: { db: Database; config: ResolvedStoreConfig; recentQueries: (tenantId: string, n: number) => Promise<number[][]> },
  handle: TenantStore,
  params: ReturnType<typeof tuningParameters>,
  given: readonly Embedding[] | undefined,
  flagged: boolean,
): Promise<{
  querySource: TenantTuning['querySource']
  queries: readonly Embedding[]
  families?: QueryFamily[]
  kthDistance?: number
  tenant?: TenantVectors
}> {
  if (given) return { querySource: 'given', queries: given }
  const recent = await deps.recentQueries(handle.tenantId, params.sample)
  if (recent.length >= (flagged ? Math.min(MIN_FLAGGED_QUERIES, params.minRecentQueries) : params.minRecentQueries))
    return { querySource: 'recent', queries: recent }
  const model = await modelQueries(deps.db, deps.config, handle, params.sample, params.seed)
  return { querySource: 'chunks', queries: model.queries, families: model.families, kthDistance: model.kthDistance, tenant: model.tenant }
}

/** A flagged tenant is re-tuned on its query sample when it has at least this many queries. */
const MIN_FLAGGED_QUERIES = 20

/**
 * A setting's per-query recall judged against `target`: the stated lower bound is the one-sided
 * bound of the mean over all queries ({@link recallBound}), and with the query model no more than
 * its worst family's mean (the worst credible recall: a family of ~50 queries is too small for a
 * bound of its own to mean much, but its mean below the target is a miss); it must reach `target`.
 *
 * ### Examples
 * ```ts
 * judgeRecall(perQuery, families, 0.98, tuningParameters({})).judged // { ok: true, lower: 0.983, mean: 0.991, queries: 200 }
 * ```
 */
export function judgeRecall(
  perQuery: readonly number[],
  families: readonly QueryFamily[] | undefined,
  target: number,
  params: { confidence: number; seed: string },
): { judged: RecallJudgement; bound: RecallBound } {
  const pooled = bound(perQuery, params, 'all')
  const worstMean = families ? Math.min(...familyBounds(perQuery, families, params).map((b) => b.mean)) : 1
  const lower = Math.min(pooled.lower, worstMean)
  return { judged: { ok: lower >= target, lower, mean: pooled.mean, queries: pooled.queries }, bound: { ...pooled, lower } }
}

function bound(values: readonly number[], params: { confidence: number; seed: string }, family: string): RecallBound {
  return recallBound(values, { confidence: params.confidence, seed: `${params.seed}:${family}` })
}

/** Per query family: its queries' bound. */
function familyBounds(
  perQuery: readonly number[],
  families: readonly QueryFamily[],
  params: { confidence: number; seed: string },
): Array<{ family: QueryFamily } & RecallBound> {
  const by = new Map<QueryFamily, number[]>()
  perQuery.forEach((v, i) => {
    const f = families[i]!
    by.set(f, [...(by.get(f) ?? []), v])
  })
  return [...by].map(([family, values]) => ({ family, ...bound(values, params, family) }))
}

/**
 * The stated interval of the choice (1 / 1 on the exact path): the prediction bound for as many
 * fresh queries as were measured ({@link freshRecallBound}), with the query model no more than its
 * worst family's mean; beside it the bound on the mean it was chosen on. With the model, each
 * family's bound on its mean too.
 */
function statedInterval(
  chosen: IndexChoice | undefined,
  families: readonly QueryFamily[] | undefined,
  queries: number,
  params: { confidence: number; seed: string },
): { stated: StatedBound; perFamily?: Array<{ family: QueryFamily } & StatedBound> } {
  if (!chosen)
    return { stated: { lower: 1, mean: 1, queries, confidence: params.confidence, tooSmall: false, meanLower: 1, fresh: queries } }
  const byFamily = families ? familyBounds(chosen.perQuery, families, params) : undefined
  const predicted = freshRecallBound(chosen.perQuery, { confidence: params.confidence, seed: `${params.seed}:stated` })
  const worstMean = byFamily ? Math.min(...byFamily.map((b) => b.mean)) : 1
  const stated: StatedBound = {
    lower: Math.min(predicted.lower, worstMean),
    mean: chosen.judged.mean,
    queries: chosen.judged.queries,
    confidence: params.confidence,
    tooSmall: chosen.judged.queries < MIN_BOUND_QUERIES,
    meanLower: chosen.judged.lower,
    fresh: chosen.perQuery.length,
  }
  if (!byFamily) return { stated }
  const perFamily = byFamily.map((b) => ({
    family: b.family,
    lower: b.lower,
    mean: b.mean,
    queries: b.queries,
    confidence: b.confidence,
    tooSmall: b.tooSmall,
  }))
  return { stated, perFamily }
}

/**
 * Puts a tuning's recall in the recall monitor; when it was tuned on recent queries, the chosen
 * setting's recall on a chunk sample beside it (returned).
 */
async function recordTuningRecall(
  deps: { db: Database; config: ResolvedStoreConfig },
  handle: TenantStore,
  tuning: TenantTuning,
  params: ReturnType<typeof tuningParameters>,
  stated: StatedBound,
): Promise<number | undefined> {
  const source = tuning.querySource
  const figure = { tenantId: tuning.tenantId, efSearch: tuning.exact ? null : tuning.efSearch, measuredAt: tuning.tunedAt }
  // The stated interval, whatever the queries: what tenantTuning() and the monitor compare with.
  const statedFigure = { ...figure, source: 'stated' as const, recall: stated.mean, lower: stated.lower, queries: stated.queries }
  // Given queries are the caller's evaluation set: their figure is in the report, not in the monitor.
  if (source === 'given') {
    await recordRecall(deps.db, deps.config, [statedFigure])
    return undefined
  }
  const chunkRecall = source === 'recent' ? await chunkSampleRecall(deps, handle, tuning.efSearch, tuning.exact, params) : undefined
  const filter = tuning.filter
  await recordRecall(deps.db, deps.config, [
    statedFigure,
    { ...figure, source, recall: tuning.recall, queries: tuning.tuningQueries ?? 0, ...(source === 'recent' && { lower: stated.lower }) },
    ...(chunkRecall === undefined ? [] : [{ ...figure, source: 'chunks' as const, recall: chunkRecall, queries: CHUNK_CHECK }]),
    // The filtered path on the searches users sent (not on synthetic filters: those are tuning's own).
    ...(filter?.source === 'recent' && filter.recall !== null
      ? [{ ...figure, source: 'filtered' as const, recall: filter.recall, queries: filter.queries }]
      : []),
  ])
  return chunkRecall
}

/** Query-model queries measured beside a tuning on recent ones. */
const CHUNK_CHECK = 50

/** Recall of the chosen setting on the query model's queries (1 on the exact path): the figure tuning before traffic would have seen. */
async function chunkSampleRecall(
  deps: { db: Database; config: ResolvedStoreConfig },
  handle: TenantStore,
  efSearch: number | null,
  exact: boolean,
  params: ReturnType<typeof tuningParameters>,
): Promise<number> {
  if (exact || efSearch === null) return 1
  const { queries } = await modelQueries(deps.db, deps.config, handle, CHUNK_CHECK, params.seed)
  const { truth } = await exactAnswers(handle, queries, 10)
  const r = await searchRecall(handle, queries, truth, 10, DEFAULT_RECALL_EPSILON, {
    efSearch,
    iterativeScan: 'relaxed',
    exactFallback: false,
  })
  return r.recall
}
