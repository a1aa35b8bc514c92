import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import { seededRandom } from '../../util/seeded-random.js'
import { assertId, type Embedding } from '../ingest/index.js'
import { countRecall, DEFAULT_RECALL_EPSILON, recallOf, type RecallCount } from './recall.js'
import { type ResolvedStoreConfig, tenantIndexName } from '../config/index.js'
import {
  type QuerySampler,
  type SearchOptions,
  type SearchResult,
  tenantFilteredSample,
  tenantSample,
  type TenantStore,
} from '../tenant/index.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'
import { efSearchInUse, hnswIndexNames, tenantSizes, type TuningCache } from '../schema/index.js'
import { recordRecall } from './recall-monitor.js'
import { modelQueries } from './query-model.js'
import { recallBound, type RecallBound } from './recall-bound.js'
import { exactInMemory, type ScoredRow, type TenantVectors } from './tenant-vectors.js'

/** Options of {@link PgVectorStore.measureRecall}. */
export interface MeasureRecallOptions {
  /** Which tenants. Default: every tenant with its own HNSW index, else the three largest. */
  tenantId?: string | readonly string[]
  /** Query embeddings (one tenant only): an evaluation set. Default: per `source`. */
  queries?: readonly Embedding[]
  /**
   * Where the queries come from without `queries`: `chunks` (default), `sample` queries of the query
   * model around the tenant's chunks (points it never stored, at its own scale: `modelQueries`);
   * `recent`, the newest `sample` of its recent real queries (the
   * store's query sample; a tenant with none is left out). Either way the figure is recorded in
   * the recall monitor (`recallReport()`, recall@10) unless `efSearch` is given or `k` is not 10.
   */
  source?: 'chunks' | 'recent'
  /** How many sampled queries per tenant, 1..10,000. Default 100. */
  sample?: number
  /** recall@k, 1..1000. Default 10. */
  k?: number
  /** Seed of the sample and its perturbation. Default `pgscale`. */
  seed?: string
  /** Tie tolerance (see {@link DEFAULT_RECALL_EPSILON}). */
  epsilon?: number
  /** Measure at this `ef_search` instead of the tenant's current setting. */
  efSearch?: number
}

/** One tenant's measurement. */
export interface TenantRecall {
  tenantId: string
  /** The tenant's chunks. */
  rows: number
  queries: number
  /** Tie-aware recall@k of `search` against `exactSearch` (the mean per-query recall). */
  recall: number
  /** Its one-sided 95% lower bound over queries (`recallBound`); `tooSmall` below 30 queries. */
  bound: RecallBound
  /** The same counting only the exact ids (lower when near-duplicate chunks tie). */
  recallById: number
  searchP50Ms: number
  searchP95Ms: number
  exactP50Ms: number
  /**
   * With `source: 'recent'`: the same on the tenant's recent filtered searches, each with the filter
   * it was sent with (`search` as it runs now, against `exactSearch` with that filter); absent when
   * it has none.
   */
  filtered?: { queries: number; recall: number; recallById: number; searchP50Ms: number; exactP50Ms: number }
}

/** What {@link PgVectorStore.measureRecall} measured. */
export interface MeasureRecallResult {
  k: number
  epsilon: number
  tenants: TenantRecall[]
  seconds: number
  /** How it was measured, in a sentence. */
  method: string
}

/** Relative size of the seeded perturbation of a sampled chunk: the query sits ~0.3 rad from it. */
const PERTURBATION = 0.3

/**
 * `n` query embeddings from a tenant's own chunks: a seeded sample (ordered by a hash of each
 * chunk's key and the seed), each normalised and moved by seeded Gaussian noise of relative size
 * 0.3, so a query is near its chunk without being it. Tuning and `measureRecall` no longer use it:
 * such queries flatter the index (a fixed 0.3, whatever the tenant's scale, leaves the chunk its
 * query's nearest neighbour) — they use {@link modelQueries}.
 */
export async function sampleQueries(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  n: number,
  seed: string,
): Promise<number[][]> {
  const { rows } = await sql<{ v: string }>`
    select embedding::text as v from ${sql.raw(config.qualified)} where tenant_id = ${tenantId}
    order by md5(document_id || '#' || chunk_index::text || ${seed}) limit ${n}`.execute(db)
  const random = seededRandom(`${seed}:${tenantId}`)
  return rows.map(({ v }) => {
    const x = JSON.parse(v) as number[]
    const norm = Math.hypot(...x) || 1
    const scale = PERTURBATION / Math.sqrt(x.length)
    return x.map((value) => value / norm + scale * random.gaussian())
  })
}

/** The exact answers to `queries`, with the time each took. */
export async function exactAnswers(
  handle: TenantStore,
  queries: readonly Embedding[],
  k: number,
): Promise<{ truth: SearchResult[][]; ms: number[] }> {
  const truth: SearchResult[][] = []
  const ms: number[] = []
  for (const q of queries) {
    const t0 = performance.now()
    truth.push(await handle.exactSearch(q, { k }))
    ms.push(performance.now() - t0)
  }
  return { truth, ms }
}

/** Exact scans timed when the exact answers come from memory: the exact p50 rests on these. */
export const EXACT_TIMED = 30

/**
 * The exact answers to `queries` computed in memory from the whole tenant (`tenant`, read for the
 * query model), and the exact scan timed on the first {@link EXACT_TIMED} of them (`ms`): what
 * {@link exactAnswers} gives at a fraction of its cost. Only for a `vector` column (a `halfvec`
 * query is rounded by the server: its distances are not the ones computed here).
 *
 * ### Examples
 * ```ts
 * const { truth, ms } = await exactAnswersInMemory(handle, config, model.tenant!, model.queries, 10)
 * ```
 */
export async function exactAnswersInMemory(
  handle: TenantStore,
  config: ResolvedStoreConfig,
  tenant: TenantVectors,
  queries: readonly Embedding[],
  k: number,
): Promise<{ truth: ScoredRow[][]; ms: number[] }> {
  const truth = queries.map((q) => exactInMemory(tenant, q, k, config.distance).map(({ row: _, ...r }) => r))
  const { ms } = await exactAnswers(handle, queries.slice(0, EXACT_TIMED), k)
  return { truth, ms }
}

/**
 * Recall of `search` with `options` against `truth`, the time of each search, and each query's own
 * recall (`perQuery`: hits / expected, 1 when nothing was expected) — the sampling unit of a bound.
 */
export async function searchRecall(
  handle: TenantStore,
  queries: readonly Embedding[],
  truth: ReadonlyArray<readonly ScoredRow[]>,
  k: number,
  epsilon: number,
  options: SearchOptions = {},
): Promise<{ recall: number; recallById: number; ms: number[]; perQuery: number[] }> {
  const counts: RecallCount[] = []
  const ms: number[] = []
  for (let i = 0; i < queries.length; i++) {
    const t0 = performance.now()
    const got = await handle.search(queries[i]!, { ...options, k })
    ms.push(performance.now() - t0)
    counts.push(countRecall(truth[i]!, got, epsilon))
  }
  return { ...recallOf(counts), ms, perQuery: counts.map((c) => (c.expected ? c.hits / c.expected : 1)) }
}

/** The median and 95th percentile of `ms`. */
export function percentile(ms: readonly number[], p: number): number {
  if (ms.length === 0) return 0
  const sorted = [...ms].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Checks the options that do not depend on the store. */
export function measureParameters(options: MeasureRecallOptions): { sample: number; k: number; seed: string; epsilon: number } {
  const sample = options.sample ?? 100
  const k = options.k ?? 10
  const epsilon = options.epsilon ?? DEFAULT_RECALL_EPSILON
  assertIntegerIn(sample, 1, 10_000, 'sample')
  assertIntegerIn(k, 1, 1000, 'k')
  if (typeof epsilon !== 'number' || !Number.isFinite(epsilon) || epsilon < 0)
    throw new InvalidArgumentError(`epsilon must be a non-negative number, got ${String(epsilon)}`)
  const seed = options.seed ?? 'pgscale'
  if (typeof seed !== 'string') throw new InvalidArgumentError('seed must be a string')
  return { sample, k, seed, epsilon }
}

/** What measuring recall needs of a store. */
export interface MeasuredStore {
  db: Database
  config: ResolvedStoreConfig
  forTenant(tenantId: string): TenantStore
  /** The query sample, flushed before measuring (absent: `querySample: false`). */
  sampler?: QuerySampler
  tuning: TuningCache
}

/**
 * Recall@k of `search` as it runs now against `exactSearch`, per tenant, with latency beside it.
 * `PgVectorStore.measureRecall` is this function; tenants default to those with their own index
 * (else the three largest).
 *
 * ### Examples
 * ```ts
 * const { tenants } = await measureStoreRecall(store, { sample: 200 })
 * ```
 */
export async function measureStoreRecall(store: MeasuredStore, options: MeasureRecallOptions): Promise<MeasureRecallResult> {
  const started = performance.now()
  const { sample, k, seed, epsilon } = measureParameters(options)
  const sizes = await tenantSizes(store.db, store.config)
  const rowsOf = new Map(sizes.map((s) => [s.tenantId, s.rows]))
  let tenantIds: string[]
  if (options.tenantId !== undefined) {
    tenantIds = (typeof options.tenantId === 'string' ? [options.tenantId] : [...options.tenantId]).map((id) => assertId(id, 'tenant id'))
  } else {
    const indexes = new Set(await hnswIndexNames(store.db, store.config))
    tenantIds = sizes.filter((s) => indexes.has(tenantIndexName(store.config.table, s.tenantId))).map((s) => s.tenantId)
    if (tenantIds.length === 0) tenantIds = sizes.slice(0, 3).map((s) => s.tenantId)
  }
  if (options.queries !== undefined && tenantIds.length !== 1)
    throw new InvalidArgumentError('measureRecall: queries go with exactly one tenantId')
  const source = options.source ?? 'chunks'
  if (source !== 'chunks' && source !== 'recent')
    throw new InvalidArgumentError(`measureRecall: source must be 'chunks' or 'recent', got ${JSON.stringify(source)}`)
  if (source === 'recent') await store.sampler?.flush()
  const tenants: TenantRecall[] = []
  const figures: Array<Parameters<typeof recordRecall>[2][number]> = []
  for (const tenantId of tenantIds) {
    const measured = await measureTenant(store, tenantId, source, { ...options, sample, k, seed, epsilon })
    if (!measured) continue
    tenants.push({ ...measured, rows: rowsOf.get(tenantId) ?? 0 })
    if (options.queries === undefined && options.efSearch === undefined && k === 10) {
      const efSearch = efSearchInUse(await store.tuning.get(tenantId), store.config.defaultEfSearch)
      const at = { tenantId, efSearch, measuredAt: new Date() }
      const lower = source === 'recent' ? { lower: measured.bound.lower } : {}
      figures.push({ ...at, source, recall: measured.recall, ...lower, queries: measured.queries })
      if (measured.filtered)
        figures.push({ ...at, source: 'filtered', recall: measured.filtered.recall, queries: measured.filtered.queries })
    }
  }
  await recordRecall(store.db, store.config, figures)
  const on = options.queries
    ? 'on the given queries'
    : source === 'recent'
      ? `on up to ${sample} of each tenant's newest sampled real queries (tenants without any left out)`
      : `on ${sample} query-model queries per tenant (seed "${seed}": points between and around its chunks at its own k-th-neighbour scale)`
  return {
    k,
    epsilon,
    tenants,
    seconds: (performance.now() - started) / 1000,
    method:
      `recall@${k} of search at its current settings against exactSearch, ${on}; ` +
      `a hit is a returned row within the exact ${k}-th distance + ${epsilon} (recallById counts exact ids); ` +
      `bound: one-sided 95% lower bound of the mean per-query recall (bootstrap and t over queries); latency p50/p95 of sequential calls`,
  }
}

/** One tenant measured: its queries (given, recent or sampled chunks), and with `recent` its filtered searches too. */
async function measureTenant(
  store: MeasuredStore,
  tenantId: string,
  source: 'chunks' | 'recent',
  o: MeasureRecallOptions & { sample: number; k: number; seed: string; epsilon: number },
): Promise<Omit<TenantRecall, 'rows'> | undefined> {
  const handle = store.forTenant(tenantId)
  const queries =
    o.queries ??
    (source === 'recent'
      ? (await tenantSample(store.db, store.config, tenantId, o.sample)).queries
      : (await modelQueries(store.db, store.config, handle, o.sample, o.seed)).queries)
  if (queries.length === 0) return undefined
  const at = o.efSearch === undefined ? {} : { efSearch: o.efSearch }
  const { truth, ms: exactMs } = await exactAnswers(handle, queries, o.k)
  const r = await searchRecall(handle, queries, truth, o.k, o.epsilon, at)
  const searches =
    o.queries === undefined && source === 'recent' ? await tenantFilteredSample(store.db, store.config, tenantId, o.sample) : []
  return {
    tenantId,
    queries: queries.length,
    recall: r.recall,
    bound: recallBound(r.perQuery, { seed: o.seed }),
    recallById: r.recallById,
    searchP50Ms: percentile(r.ms, 50),
    searchP95Ms: percentile(r.ms, 95),
    exactP50Ms: percentile(exactMs, 50),
    ...(searches.length ? { filtered: await filteredRecall(handle, searches, o.k, o.epsilon, at) } : {}),
  }
}

/** Recall of `search` on filtered searches, each against `exactSearch` with its own filter. */
async function filteredRecall(
  handle: TenantStore,
  searches: ReadonlyArray<{ embedding: Embedding; filter: MetadataFilter }>,
  k: number,
  epsilon: number,
  options: SearchOptions,
): Promise<NonNullable<TenantRecall['filtered']>> {
  const counts: RecallCount[] = []
  const exactMs: number[] = []
  const ms: number[] = []
  for (const { embedding, filter } of searches) {
    let t0 = performance.now()
    const truth = await handle.exactSearch(embedding, { k, filter })
    exactMs.push(performance.now() - t0)
    t0 = performance.now()
    const got = await handle.search(embedding, { ...options, k, filter })
    ms.push(performance.now() - t0)
    counts.push(countRecall(truth, got, epsilon))
  }
  const { recall, recallById } = recallOf(counts)
  return { queries: searches.length, recall, recallById, searchP50Ms: percentile(ms, 50), exactP50Ms: percentile(exactMs, 50) }
}
