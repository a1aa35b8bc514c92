import { loadavg } from 'node:os'
import { sql } from 'kysely'
import {
  countRecall,
  PgVectorStore,
  recallOf,
  type Embedding,
  type FilterTuning,
  type MetadataFilter,
  type RecallCount,
  type SearchResult,
} from '../../../src/index.js'
import { CORPUS_FILTER_RUNGS, FILTERED_FIELDS, type CorpusFilterRung } from '../../corpus/corpus-metadata.js'
import { median, percentile } from '../../report/stats.js'
import type { GivenQuery } from '../corpus-dir.js'
import type { RagBenchReport } from '../rag-report.js'
import { BENCH_TABLE, K, type RagRun } from '../rag-run.js'
import { LARGE_ABOVE } from '../tenant-classes.js'
import { buildTiered } from './index.js'

/** Tenants measured at most (the largest with their own index). */
const MAX_TENANTS = 8

/** Recall every filter rung is held to (as `rag-bench filters` does). */
export const FILTERED_RECALL_TARGET = 0.98
/** A filtered search's p50 may be at most this many times the tenant's unfiltered p50. */
export const FILTERED_LATENCY_FACTOR = 3
/** The short-query target on unfiltered searches: recall ≥ 0.985 at p50 ≤ 0.4× the tenant's exact scan. */
export const UNFILTERED_TARGET = { recall: 0.985, ratioToExact: 0.4 } as const

/** Auto's recall, p50 and p95 on some queries, beside the exact scan's p50 on the same ones. */
export interface SideBySide {
  queries: number
  recall: number
  p50Ms: number
  p95Ms: number
  exactP50Ms: number
  exactP95Ms: number
  /** Searches that returned fewer than min(k, matching rows). */
  short: number
}

/** One rung of the ladder on one tenant's held-out queries. */
export interface CorpusFilterRungResult extends SideBySide {
  key: string
  field: CorpusFilterRung['field']
  follows: boolean
  what: string
  /** Share of the tenant's rows each query's filter matched: median, smallest, largest. */
  selectivity: { median: number; min: number; max: number }
  /** Queries whose filter matched at most 10 rows (the whole answer is the filter's rows). */
  atMostK: number
  /**
   * Queries whose filter matched more rows than the tenant's tuned exact threshold
   * (`filter.exactBelow`): the ones auto walks the index for, unless the filter is one tuning
   * named for the exact branch; the others are scored exactly (recall 1 by construction).
   */
  aboveExactBelow: number
  ratioToUnfiltered: number
  ratioToExact: number
  meetsRecall: boolean
  meetsLatency: boolean
}

/** One large tenant: what tuning chose, the unfiltered short queries, and every rung. */
export interface CorpusFilterTenant {
  tenantId: string
  chunks: number
  trafficSearches: number
  evalQueries: number
  tuning: {
    efSearch: number | null
    exact: boolean
    querySource: string | null
    filter: FilterTuning | null
  }
  unfiltered: SideBySide & { ratioToExact: number; meetsTarget: boolean }
  rungs: CorpusFilterRungResult[]
}

/** `report.corpusFilters`: filtered queries on real text (`rag-bench --corpus DIR --filtered`). */
export interface CorpusFiltersReport {
  queries: string
  fields: Array<{ field: string; type: string; seconds: number }>
  traffic: { searches: number; filtered: number; perTenant: Record<string, number> }
  retune: { seconds: number; notes: string[] }
  tenants: CorpusFilterTenant[]
  /** `os.loadavg()` (1, 5, 15 min) when the phase started and when it ended. */
  load: { start: number[]; end: number[] }
  targets: { filteredRecall: number; filteredLatencyFactor: number; unfilteredRecall: number; unfilteredRatioToExact: number }
  method: string
}

/** A rag-bench report that may carry the filtered phase's section. */
export type WithCorpusFilters = RagBenchReport & { corpusFilters?: CorpusFiltersReport }

/**
 * The filtered phase of `rag-bench --corpus DIR --filtered`: filtered queries on real text. It
 * declares metadata indexes on the fields the filters use (`source`, `section`, `bucket`), sends
 * each large tenant's traffic queries through a store with the query sample on — each with one
 * filter of its own ladder in turn, or none — then runs `optimize()`, so the filtered tuning
 * learns from what users sent; then, on the held-out queries, per tenant: auto against the exact
 * scan unfiltered (recall, p50, the ≥ 0.985 at ≤ 0.4× target) and on every rung with each query's
 * own filter (tie-aware recall@10 against `exactSearch` with the same filter, p50/p95 beside the
 * exact filtered scan's p50).
 *
 * ### Examples
 * ```ts
 * await corpusFiltersPhase(run)
 * (run.report as WithCorpusFilters).corpusFilters?.tenants[0]?.rungs
 * ```
 */
export async function corpusFiltersPhase(run: RagRun): Promise<void> {
  const { config: c, store } = run
  const start = loadavg()
  if (!c.corpus?.queries) return run.log('filtered phase skipped: it needs --corpus DIR with queries.jsonl')
  if (!run.strategies.includes('tiered')) return run.log('filtered phase skipped: it needs --index tiered or both')
  const fields: CorpusFiltersReport['fields'] = []
  for (const [field, type] of FILTERED_FIELDS) {
    const t0 = performance.now()
    await store.createMetadataIndex(field, type)
    fields.push({ field, type, seconds: (performance.now() - t0) / 1000 })
  }
  await sql.raw(`analyze ${BENCH_TABLE}`).execute(run.db)
  await buildTiered(run)
  const tuned = new Map((await store.tenantTuning()).map((t) => [t.tenantId, t]))
  const n = Math.min(c.queries, 300)
  const inputs = new Map<string, { traffic: GivenQuery[]; evaluation: GivenQuery[] }>()
  for (const t of c.tenants.filter((t) => t.chunks > LARGE_ABOVE && tuned.has(t.id)).slice(0, MAX_TENANTS)) {
    const given = (c.corpus.queries.get(t.id) ?? []).filter((q) => q.filters)
    const traffic = given.filter((q) => q.split === 'traffic').slice(0, n)
    const evaluation = given.filter((q) => q.split === 'eval').slice(0, n)
    if (traffic.length && evaluation.length) inputs.set(t.id, { traffic, evaluation })
  }
  if (!inputs.size)
    return run.log('filtered phase skipped: no large tenant has traffic and eval queries with "filters" (rebuild the corpus: bench/corpus)')
  run.log(`filtered: ${inputs.size} tenants, metadata indexes on ${fields.map((f) => f.field).join(', ')}`)
  const traffic = await sendFilteredTraffic(run, inputs)
  const t0 = performance.now()
  const retuned = await store.optimize({ ownIndexAbove: LARGE_ABOVE, indexBuild: { m: c.m, efConstruction: c.efConstruction } })
  const retune = { seconds: (performance.now() - t0) / 1000, notes: retuned.notes }
  for (const note of retuned.notes) run.log(`optimize: ${note}`)
  const tenants: CorpusFilterTenant[] = []
  for (const [tenantId, q] of inputs) tenants.push(await measureTenant(run, tenantId, q.traffic.length, q.evaluation))
  const end = loadavg()
  const kinds = [...new Set([...inputs.values()].flatMap((q) => q.evaluation.map((e) => e.kind).filter(Boolean)))].join(', ')
  ;(run.report as WithCorpusFilters).corpusFilters = {
    queries: `the corpus's queries.jsonl${kinds ? ` (${kinds})` : ''}, each with its filters`,
    fields,
    traffic,
    retune,
    tenants,
    load: { start, end },
    targets: {
      filteredRecall: FILTERED_RECALL_TARGET,
      filteredLatencyFactor: FILTERED_LATENCY_FACTOR,
      unfilteredRecall: UNFILTERED_TARGET.recall,
      unfilteredRatioToExact: UNFILTERED_TARGET.ratioToExact,
    },
    method:
      `metadata indexes (createMetadataIndex) on ${FILTERED_FIELDS.map(([f, t]) => `${f} (${t})`).join(', ')}, then analyze; ` +
      `traffic: each large tenant's traffic queries (up to ${n}) sent once through a store with the query sample on (perTenant 256), query i with rung i mod ${CORPUS_FILTER_RUNGS.length + 1} of its own filters or none, then optimize() (tuning on the sampled searches and their filters); ` +
      `measured on the held-out eval queries (never sent before), every rung with each query's own filter: for each query the exact scan (exactSearch, same filter) and pgscale's search (filterStrategy auto) in turn, the order alternating by query, one client; ` +
      `tie-aware recall@10 (countRecall/recallOf: a hit is a returned row within the exact 10th distance + 0.001); p50/p95 of sequential calls; selectivity = the filter's matching rows ÷ the tenant's chunks (count()); ` +
      `targets: every rung recall ≥ ${FILTERED_RECALL_TARGET} and p50 ≤ ${FILTERED_LATENCY_FACTOR}× the tenant's unfiltered p50 on the same queries; unfiltered recall ≥ ${UNFILTERED_TARGET.recall} at p50 ≤ ${UNFILTERED_TARGET.ratioToExact}× the exact scan; ` +
      `load average (1/5/15 min) at the phase's start ${start.map((x) => x.toFixed(2)).join(' ')}, end ${end.map((x) => x.toFixed(2)).join(' ')}: latencies compare only within the run`,
  }
}

/**
 * The traffic: query i of each tenant with its filter of rung i mod (rungs + 1) — the last slot
 * none — through a store with the query sample on (flushed before it closes).
 */
async function sendFilteredTraffic(
  run: RagRun,
  inputs: ReadonlyMap<string, { traffic: GivenQuery[] }>,
): Promise<CorpusFiltersReport['traffic']> {
  const serving = await PgVectorStore.open(run.db, { table: BENCH_TABLE, dimensions: run.config.dim, querySample: { perTenant: 256 } })
  let searches = 0
  let filtered = 0
  const perTenant: Record<string, number> = {}
  try {
    for (const [tenantId, q] of inputs) {
      const handle = serving.forTenant(tenantId)
      for (const [i, query] of q.traffic.entries()) {
        const filter = trafficFilter(query, i)
        await handle.search(query.embedding, { k: K, ...(filter ? { filter } : {}) })
        searches++
        if (filter) filtered++
      }
      perTenant[tenantId] = q.traffic.length
    }
    const flushed = await serving.flushQuerySample()
    if (flushed.error) run.log(`query sample flush failed: ${flushed.error.message}`)
  } finally {
    await serving.close()
  }
  return { searches, filtered, perTenant }
}

/**
 * The filter traffic query `i` is sent with: its own filter of rung i mod (rungs + 1), or none in
 * the last slot (and when the query has no filter for that rung).
 *
 * ### Examples
 * ```ts
 * trafficFilter({ embedding, filters: { 'own-source': { source: 'bash' } } }, 0) // { source: 'bash' }
 * ```
 */
export function trafficFilter(query: Pick<GivenQuery, 'filters'>, i: number): MetadataFilter | undefined {
  const rung = CORPUS_FILTER_RUNGS[i % (CORPUS_FILTER_RUNGS.length + 1)]
  return rung ? query.filters?.[rung.key] : undefined
}

/** One tenant: its tuning, the unfiltered short queries side by side with the exact scan, then every rung. */
async function measureTenant(
  run: RagRun,
  tenantId: string,
  trafficSearches: number,
  evaluation: GivenQuery[],
): Promise<CorpusFilterTenant> {
  const handle = run.store.forTenant(tenantId)
  const chunks = run.config.tenants.find((t) => t.id === tenantId)!.chunks
  const tuning = (await run.store.tenantTuning()).find((t) => t.tenantId === tenantId)
  const plain = await sideBySide(
    evaluation.map((q) => ({ embedding: q.embedding, expected: K })),
    (x) => handle.search(x.embedding, { k: K }),
    (x) => handle.exactSearch(x.embedding, { k: K }),
  )
  const unfiltered = { ...plain, ratioToExact: plain.p50Ms / plain.exactP50Ms }
  const meets = unfiltered.recall >= UNFILTERED_TARGET.recall && unfiltered.ratioToExact <= UNFILTERED_TARGET.ratioToExact
  run.log(
    `${tenantId}: unfiltered recall ${plain.recall.toFixed(3)}, p50 ${plain.p50Ms.toFixed(2)} ms, exact ${plain.exactP50Ms.toFixed(2)} ms ` +
      `(${unfiltered.ratioToExact.toFixed(2)}×; ef_search ${tuning?.efSearch ?? 'default'}; filtered: ` +
      (tuning?.filter
        ? `${tuning.filter.candidates} candidates, exact ≤ ${tuning.filter.exactBelow} rows, ${tuning.filter.exactFilters?.length ?? 0} filters named for exact, tuned on ${tuning.filter.filters} ${tuning.filter.source} filters)`
        : 'not tuned)'),
  )
  const rungs: CorpusFilterRungResult[] = []
  for (const rung of CORPUS_FILTER_RUNGS) {
    const cases: Array<{ embedding: Embedding; filter: MetadataFilter; matching: number; expected: number }> = []
    for (const q of evaluation) {
      const filter = q.filters?.[rung.key]
      if (!filter) continue
      const matching = await handle.count(filter)
      cases.push({ embedding: q.embedding, filter, matching, expected: Math.min(K, matching) })
    }
    if (!cases.length) continue
    const r = await sideBySide(
      cases,
      (x) => handle.search(x.embedding, { k: K, filter: x.filter, filterStrategy: 'auto' }),
      (x) => handle.exactSearch(x.embedding, { k: K, filter: x.filter }),
    )
    const shares = cases.map((x) => x.matching / chunks)
    const result: CorpusFilterRungResult = {
      key: rung.key,
      field: rung.field,
      follows: rung.follows,
      what: rung.what,
      ...r,
      selectivity: { median: median(shares), min: Math.min(...shares), max: Math.max(...shares) },
      atMostK: cases.filter((x) => x.matching <= K).length,
      aboveExactBelow: cases.filter((x) => x.matching > (tuning?.filter?.exactBelow ?? Infinity)).length,
      ratioToUnfiltered: r.p50Ms / plain.p50Ms,
      ratioToExact: r.p50Ms / r.exactP50Ms,
      meetsRecall: r.recall >= FILTERED_RECALL_TARGET,
      meetsLatency: r.p50Ms <= FILTERED_LATENCY_FACTOR * plain.p50Ms,
    }
    rungs.push(result)
    run.log(
      `${tenantId} ${rung.key.padEnd(14)} sel ${(result.selectivity.median * 100).toFixed(2).padStart(6)}%: ` +
        `auto ${r.recall.toFixed(3)} @ ${r.p50Ms.toFixed(2)} ms (p95 ${r.p95Ms.toFixed(2)}), exact ${r.exactP50Ms.toFixed(2)} ms, ` +
        `${result.aboveExactBelow}/${r.queries} above the exact threshold` +
        `${result.meetsRecall ? '' : ' [recall miss]'}${result.meetsLatency ? '' : ' [latency miss]'}`,
    )
  }
  return {
    tenantId,
    chunks,
    trafficSearches,
    evalQueries: evaluation.length,
    tuning: {
      efSearch: tuning?.efSearch ?? null,
      exact: tuning?.exact ?? false,
      querySource: tuning?.querySource ?? null,
      filter: tuning?.filter ?? null,
    },
    unfiltered: { ...unfiltered, meetsTarget: meets },
    rungs,
  }
}

/**
 * Auto and the exact scan on the same queries: for each query both in turn (exact first on even
 * queries, auto first on odd ones), tie-aware recall@10 of auto against the exact answer.
 */
async function sideBySide<C extends { expected: number }>(
  cases: readonly C[],
  auto: (x: C) => Promise<SearchResult[]>,
  exact: (x: C) => Promise<SearchResult[]>,
): Promise<SideBySide> {
  const counts: RecallCount[] = []
  const autoMs: number[] = []
  const exactMs: number[] = []
  let short = 0
  for (const [i, x] of cases.entries()) {
    let truth: SearchResult[] = []
    let got: SearchResult[] = []
    const runExact = async () => {
      const t0 = performance.now()
      truth = await exact(x)
      exactMs.push(performance.now() - t0)
    }
    const runAuto = async () => {
      const t0 = performance.now()
      got = await auto(x)
      autoMs.push(performance.now() - t0)
    }
    for (const step of i % 2 ? [runAuto, runExact] : [runExact, runAuto]) await step()
    if (got.length < x.expected) short++
    counts.push(countRecall(truth, got))
  }
  return {
    queries: cases.length,
    recall: recallOf(counts).recall,
    p50Ms: percentile(autoMs, 50),
    p95Ms: percentile(autoMs, 95),
    exactP50Ms: percentile(exactMs, 50),
    exactP95Ms: percentile(exactMs, 95),
    short,
  }
}
