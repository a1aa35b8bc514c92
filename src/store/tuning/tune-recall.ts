import { InvalidArgumentError } from '../../errors.js'
import type { FilterTuning, IndexBuildOptions, TenantTuning, TunedAlternative, TuningCache } from '../schema/index.js'
import type { Embedding } from '../ingest/index.js'
import { exactAnswers, percentile, sampleQueries, searchRecall } from './measure-recall.js'
import { DEFAULT_RECALL_EPSILON } from './recall.js'
import type { Database } from '../../db/database.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import { DEFAULT_EXACT_BELOW, modelExactBelow, type TenantStore } from '../tenant/index.js'
import { recordRecall } from './recall-monitor.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { chooseIndexSetting, type Graph, type LadderStep } from './tuner-alternatives.js'
import { filterCases, type FilterCaseSources } from './filtered/filter-cases.js'
import { type FilterTuningReport, tuneFilteredPath } from './filtered/filtered-tuning.js'

/** The recall target `optimize()` tunes every indexed tenant to, unless told otherwise. */
export const DEFAULT_TARGET_RECALL = 0.98

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
  /** Queries sampled from the tenant's chunks. Default 200. */
  sample?: number
  /** A tuned tenant is tuned again when its chunks changed by more than this fraction. Default 0.2. */
  retuneAbove?: number
  /** Seed of the sample. Default `pgscale`. */
  seed?: string
  /**
   * A tenant is tuned on its recent real queries (the store's query sample, up to `sample` of the
   * newest) when it has at least this many; else on a sample of its chunks, held to a wider
   * margin. Default 50.
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
   * The recall the choice had to reach on the sample: the target plus a one-sided 95% margin for
   * sampling (1.645 standard errors of a proportion over sample × 10 results), so that another
   * sample of queries also meets the target.
   */
  requiredOnSample: number
  /** Set when the tenant's index was rebuilt to reach the target. */
  rebuiltWith?: { m: number; efConstruction: number }
  /** The queries it was tuned on: recent real ones (the query sample), the call's (`optimize({ queries })`) or a sample of its chunks. */
  querySource: 'recent' | 'given' | 'chunks'
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
  const retuneAbove = options.retuneAbove ?? 0.2
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
  return {
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
 * The recall a sample of `results` must show so that the true recall meets `target` with 95%
 * confidence (one-sided; normal approximation of a proportion). Measured here: tuned to exactly
 * 0.98 on 100 queries, three real-text tenants re-measured on another 200 at 0.977-0.984.
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
 * The recall a tuning on chunk samples aims at: half the target's miss rate (0.99 for 0.98).
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
 * and now has enough recent queries, or when more than `retuneAbove` of its sample is newer than
 * the tuning (a tuning on given queries changes only with the size, or with new given queries).
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
): boolean {
  if (!tuning || tuning.targetRecall !== target) return false
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
}

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
): Promise<TenantTuningReport> {
  const tenantId = handle.tenantId
  const { querySource, queries } = await tuningQueries(deps, tenantId, params, given)
  const { truth, ms: exactMs } = await exactAnswers(handle, queries, 10)
  const exactP50Ms = percentile(exactMs, 50)
  const bound = params.maxLatencyMs ?? exactP50Ms
  const required = requiredOnSample(querySource === 'chunks' ? chunkSampleTarget(target) : target, queries.length * 10)
  const current = (await deps.currentGraph(tenantId)) ?? { m: indexBuild.m ?? 16, efConstruction: indexBuild.efConstruction ?? 64 }
  const setting = await chooseIndexSetting({
    handle,
    config: deps.config,
    queries,
    truth,
    steps: params.steps,
    required,
    boundMs: bound,
    cheapMs: params.cheapFraction * exactP50Ms,
    rebuilds: params.rebuilds,
    current,
    rebuild: (graph) => deps.rebuild(tenantId, { ...indexBuild, m: graph.m, efConstruction: graph.efConstruction }),
  })
  const { chosen, rebuiltWith } = setting
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
  }
  // Saved first: the filtered path is measured as searches will run it, at the tenant's new setting.
  await deps.cache.save(unfiltered)
  const filtered =
    chosen && params.filters
      ? await tuneFiltered(deps, handle, { ...unfiltered, exactP50Ms, efSearch: chosen.efSearch, target, queries }, params)
      : undefined
  const tuning: TenantTuning = { ...unfiltered, filter: filtered?.choice ?? null }
  if (filtered) await deps.cache.save(tuning)
  const chunkRecall = await recordTuningRecall(deps, handle, tuning, params)
  return {
    tenantId,
    rows,
    path: chosen ? 'index' : 'exact',
    efSearch: tuning.efSearch,
    recall: tuning.recall,
    searchP50Ms: tuning.searchP50Ms,
    exactP50Ms,
    latencyBoundMs: bound,
    requiredOnSample: required,
    rebuiltWith,
    querySource,
    queries: queries.length,
    ...(chunkRecall === undefined ? {} : { chunkRecall }),
    tried: setting.tried,
    alternatives: setting.alternatives,
    ...(filtered ? { filter: filtered } : {}),
  }
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

/** The queries a tenant is tuned on: the given ones, else its recent queries when it has enough, else a chunk sample. */
async function tuningQueries(
  deps: { db: Database; config: ResolvedStoreConfig; recentQueries: (tenantId: string, n: number) => Promise<number[][]> },
  tenantId: string,
  params: ReturnType<typeof tuningParameters>,
  given: readonly Embedding[] | undefined,
): Promise<{ querySource: TenantTuning['querySource']; queries: readonly Embedding[] }> {
  if (given) return { querySource: 'given', queries: given }
  const recent = await deps.recentQueries(tenantId, params.sample)
  if (recent.length >= params.minRecentQueries) return { querySource: 'recent', queries: recent }
  return { querySource: 'chunks', queries: await sampleQueries(deps.db, deps.config, tenantId, params.sample, params.seed) }
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
): Promise<number | undefined> {
  const source = tuning.querySource
  // Given queries are the caller's evaluation set: their figure is in the report, not in the monitor.
  if (source === 'given') return undefined
  const chunkRecall = source === 'recent' ? await chunkSampleRecall(deps, handle, tuning.efSearch, tuning.exact, params) : undefined
  const figure = { tenantId: tuning.tenantId, efSearch: tuning.exact ? null : tuning.efSearch, measuredAt: tuning.tunedAt }
  const filter = tuning.filter
  await recordRecall(deps.db, deps.config, [
    { ...figure, source, recall: tuning.recall, queries: tuning.tuningQueries ?? 0 },
    ...(chunkRecall === undefined ? [] : [{ ...figure, source: 'chunks' as const, recall: chunkRecall, queries: CHUNK_CHECK }]),
    // The filtered path on the searches users sent (not on synthetic filters: those are tuning's own).
    ...(filter?.source === 'recent' && filter.recall !== null
      ? [{ ...figure, source: 'filtered' as const, recall: filter.recall, queries: filter.queries }]
      : []),
  ])
  return chunkRecall
}

/** Chunk-sample queries measured beside a tuning on recent ones. */
const CHUNK_CHECK = 50

/** Recall of the chosen setting on a chunk sample (1 on the exact path): the figure tuning on chunks would have seen. */
async function chunkSampleRecall(
  deps: { db: Database; config: ResolvedStoreConfig },
  handle: TenantStore,
  efSearch: number | null,
  exact: boolean,
  params: ReturnType<typeof tuningParameters>,
): Promise<number> {
  if (exact || efSearch === null) return 1
  const queries = await sampleQueries(deps.db, deps.config, handle.tenantId, CHUNK_CHECK, params.seed)
  const { truth } = await exactAnswers(handle, queries, 10)
  const r = await searchRecall(handle, queries, truth, 10, DEFAULT_RECALL_EPSILON, {
    efSearch,
    iterativeScan: 'relaxed',
    exactFallback: false,
  })
  return r.recall
}
