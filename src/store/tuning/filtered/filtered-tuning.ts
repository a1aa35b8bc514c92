import type { Embedding } from '../../ingest/index.js'
import { filterKey, type MetadataFilter, parseFilter } from '../../../filter/filter-tree.js'
import type { FilterTuning } from '../../schema/index.js'
import { MAX_SELECTIVITY_SCALE, modelExactBelow, SELECTIVITY_SCALES, type SearchResult, type TenantStore } from '../../tenant/index.js'
import { percentile } from '../measure-recall.js'
import { countRecall, recallOf, type RecallCount } from '../recall.js'

/** One filtered search tuning measures: a query and the filter it goes with. */
export interface FilteredSearchCase {
  embedding: Embedding
  filter: MetadataFilter
  /** A search a user sent with this filter (the query sample), not a tuning query paired with it. */
  sent?: boolean
}

/** Candidates (for k = 10) the filtered walk is tried with, in order: its `ef_search` comes from the tenant's tuning, scaled by selectivity. */
export const CANDIDATE_STEPS = [40, 80, 160] as const

/** Most filters tuning names for the exact branch (each a sent filter whose walk missed the target). */
const MAX_EXACT_FILTERS = 50

/** Bands of selectivity the filtered searches are judged in (each band must meet the target). */
const BANDS = [0.01, 0.1, 0.33, Infinity] as const

/** What tuning measured of a tenant's filtered path, for its report. */
export interface FilterTuningReport {
  choice: FilterTuning
  /** Each budget tried: the walk's recall per selectivity band (filters above `exactBelow` only), p50, and what the measured filters cost at it. */
  tried: Array<{
    candidates: number
    /** The most a filter's selectivity multiplied the walk's `ef_search` by. */
    selectivityScale: number
    walkP50Ms: number | null
    exactBelow: number
    bands: Array<{ below: number; recall: number; searches: number }>
    /** Sent filters named for the exact branch at this budget. */
    exactFilters: number
    /** Whether every band met the target (with the pooled margin). */
    met: boolean
    /** The measured filters' searches at this budget, each at its branch's median (ms, summed). */
    costMs: number
  }>
  /** Each measured filter at the choice: its key, matching rows, searches, the branch it takes, and its walk's recall there (null: not walked). */
  filters: Array<{ key: string; matching: number; searches: number; branch: 'exact' | 'walk'; walkRecall: number | null }>
}

/** One distinct filter of the cases: its tree's key, matching rows, and its searches with their exact answers. */
interface MeasuredFilter {
  /** Its tree's key (`filterKey`): how a search recognises it. */
  key: string
  matching: number
  /** Searches users sent with it (a filter sent twice or more repeats: it can be named for the exact branch). */
  sent: number
  searches: Array<{
    embedding: Embedding
    filter: MetadataFilter
    truth: SearchResult[]
    exactMs: number
    /** The tenant's unfiltered walk misses on this query: the graph's doing, not the filter's (timed, not counted for recall). */
    graphMiss?: boolean
  }>
}

/** One budget measured: what it would choose and cost. */
interface Step {
  candidates: number
  selectivityScale: number
  exactBelow: number
  walkP50Ms: number | null
  walks: Map<MeasuredFilter, RecallCount[]>
  alone: MeasuredFilter[]
  bands: Array<{ below: number; recall: number; searches: number }>
  met: boolean
  costMs: number
}

/**
 * Tunes a tenant's filtered path on `cases` (its sampled filtered searches, or synthetic filters
 * paired with its tuning queries): counts each filter's rows, takes each search's exact answer
 * (timed: the exact branch's cost per matching row), then walks the index for every filter at
 * each budget — 40, 80 and 160 candidates ({@link CANDIDATE_STEPS}), at the tenant's `ef_search`
 * unscaled and scaled by each filter's selectivity ({@link SELECTIVITY_SCALES}) — as searches run
 * it, every budget and the exact answer on each search in turn (their times compare). At each budget the exact threshold is the one that costs the measured filters
 * least — each filter at or below it at its exact answer's median time, each above at its walk's —
 * and at least a quarter of the modelled one. A budget meets the target when every selectivity band
 * of the filters above its threshold meets it (an unscaled budget, which walks less than the
 * default: with the 95% sampling margin), and all of them together with the 95% margin. Tuned on the filters users sent, a filter whose own walk misses the target is
 * named for the exact branch instead (`exactFilters`: they repeat) and the others keep the walk.
 * An unscaled budget meets it only where the scaled one of its candidates finds no more of the true
 * neighbours on the same searches (within 0.002). The least effort that meets the target is chosen
 * (unscaled first, fewest candidates) — so a tenant where HNSW is easy keeps the unscaled walk, and
 * one where it is hard scales it. When none
 * does, the largest is, and the threshold rises to cover the filters of the bands that missed (they
 * are scored exactly: recall before speed). The recall of the choice counts searches at or below
 * the threshold, or named, as exact (1).
 *
 * ### Examples
 * ```ts
 * const { choice } = await tuneFilteredPath(handle, cases, { efSearch: 200, target: 0.98, rows: 30_000, source: 'synthetic', … })
 * ```
 */
export async function tuneFilteredPath(
  handle: TenantStore,
  cases: readonly FilteredSearchCase[],
  tenant: {
    efSearch: number
    target: number
    rows: number
    source: 'recent' | 'synthetic'
    searchP50Ms: number | null
    exactP50Ms: number | null
  },
): Promise<FilterTuningReport> {
  const filters = await measureExact(handle, cases)
  const all = filters.flatMap((f) => f.searches)
  const floor = Math.floor((modelExactBelow({ ...tenant, rowsAtTuning: tenant.rows }) ?? 1000) / 4)
  const walked = filters.filter((f) => f.matching > floor)
  await markGraphMisses(handle, walked)
  const budgets = SELECTIVITY_SCALES.flatMap((selectivityScale) => CANDIDATE_STEPS.map((candidates) => ({ candidates, selectivityScale })))
  const walksAt = await measureWalks(handle, walked, budgets)
  const steps = budgets.map((budget, i) => judgeStep(walked, walksAt[i]!, { ...budget, floor, ...tenant }))
  // The walk is left unscaled only where scaling finds nothing more: on the same searches, an unscaled
  // budget must find as many of the true neighbours as the scaled one of its candidates.
  const found = (s: Step) => recallOf(walked.flatMap((f) => s.walks.get(f) ?? [])).recall
  for (const s of steps) {
    const scaled = steps.find((x) => x.candidates === s.candidates && x.selectivityScale === MAX_SELECTIVITY_SCALE)
    if (s.selectivityScale < MAX_SELECTIVITY_SCALE && scaled && found(s) < found(scaled) - SAME_RECALL) s.met = false
  }
  // The exact branch's cost per row, from the exact answers timed beside the walks (the others' first timing).
  const exactMsPerRow = fitExactCost(filters)?.perRowMs ?? null
  // The least effort (unscaled first, fewest candidates) that met the target. Not the cheapest by the
  // budgets' measured costs: those differ by a few per cent between budgets, mostly by which filters
  // each one's threshold sends to the exact branch, and the order flipped from run to run.
  const pick = steps.find((s) => s.met) ?? steps.at(-1)
  const counts = filters.flatMap((f) =>
    // A filter at or below the threshold, or named, takes the exact branch: each of its searches a full hit.
    !pick || f.matching <= pick.exactBelow || pick.alone.includes(f)
      ? f.searches.map((s) => countRecall(s.truth, s.truth))
      : (pick.walks.get(f) ?? []),
  )
  const choice: FilterTuning = {
    candidates: pick?.candidates ?? CANDIDATE_STEPS[0],
    exactBelow: Math.max(1, pick?.exactBelow ?? floor),
    source: tenant.source,
    filters: filters.length,
    queries: all.length,
    recall: counts.length ? recallOf(counts).recall : null,
    walkP50Ms: pick?.walkP50Ms ?? null,
    exactMsPerRow,
    ...(pick?.alone.length ? { exactFilters: pick.alone.map((f) => f.key) } : {}),
    selectivityScale: pick?.selectivityScale ?? MAX_SELECTIVITY_SCALE,
  }
  const tried = steps.map(({ walks: _walks, alone, ...s }) => ({ ...s, exactFilters: alone.length }))
  const measured = filters.map((f) => {
    const walks = pick?.walks.get(f)
    const exact = !pick || f.matching <= pick.exactBelow || pick.alone.includes(f)
    return {
      key: f.key,
      matching: f.matching,
      searches: f.searches.length,
      branch: exact ? ('exact' as const) : ('walk' as const),
      walkRecall: walks?.length ? recallOf(walks).recall : null,
    }
  })
  return { choice, tried, filters: measured }
}

/**
 * Judges one budget from its walks of every filter of `walked`: the cheapest exact threshold, the
 * sent filters named for the exact branch, whether the bands meet the target, and what the
 * measured searches cost at it.
 */
function judgeStep(
  walked: readonly MeasuredFilter[],
  { walks, ms, walkMs }: Walks,
  at: { candidates: number; selectivityScale: number; floor: number; target: number; rows: number; source: 'recent' | 'synthetic' },
): Step {
  const { candidates, selectivityScale, floor, target, rows } = at
  const walkP50Ms = ms.length ? percentile(ms, 50) : null
  // The filters users sent repeat: one sent twice or more whose own walk misses the target (on two
  // searches or more: one query the index serves badly is not the filter's doing), or costs clearly
  // more than its exact answer, is answered exactly by name (a filter that follows the content may
  // miss where an independent one of its size does not); the threshold by count is left to the
  // rest, so it does not send the independent filters of that size to the exact branch too.
  const alone =
    at.source === 'recent'
      ? walked
          .filter((f) => f.sent >= 2)
          .filter(
            (f) =>
              missesOnTwo(walks.get(f) ?? [], target) ||
              median(f.searches.map((x) => x.exactMs)) < CLEARLY_CHEAPER * median(walkMs.get(f) ?? []),
          )
          .slice(0, MAX_EXACT_FILTERS)
      : []
  const rest = walked.filter((f) => !alone.includes(f))
  // With every measured filter named, the threshold for filters not seen yet is what all of them cost.
  const costBelow = cheapestThreshold(rest.length ? rest : walked, walkMs, floor)
  const bands = bandRecalls(rest, walks, costBelow, rows)
  // Each band is held to the target, and all the walked searches together to the target plus the 95%
  // sampling margin of their results, as the unfiltered tuning is. A budget that walks less than the
  // default (unscaled) must show each band with that margin too: the cheapest of several budgets
  // that pass on a sample is the one most likely to pass by luck (a band has a few hundred results).
  // The default is held to the target alone: on a tenant whose own walk stalls near the target (near
  // copies) a band of one filter cannot show a margin its unfiltered search does not have.
  const pooled = rest.filter((f) => f.matching > costBelow).flatMap((f) => walks.get(f) ?? [])
  const pooledShort = pooled.length > 0 && recallOf(pooled).recall < withMargin(target, pooled.length * 10, Z95)
  const bandZ = selectivityScale < MAX_SELECTIVITY_SCALE ? Z95 : 0
  const missed = bands.filter(
    (b) => b.recall < withMargin(target, b.searches * 10, bandZ) || (pooledShort && b.recall < withMargin(target, pooled.length * 10, Z95)),
  )
  const exactBelow = Math.max(costBelow, ...rest.filter((f) => missed.some((b) => inBand(f, b.below, rows))).map((f) => f.matching))
  let costMs = 0
  for (const f of walked) {
    const exact = f.matching <= exactBelow || alone.includes(f)
    costMs += (exact ? median(f.searches.map((x) => x.exactMs)) : median(walkMs.get(f) ?? [])) * f.searches.length
  }
  return { candidates, selectivityScale, exactBelow, walkP50Ms, walks, alone, met: missed.length === 0, costMs, bands }
}

/** The exact branch's cost: a fixed part and a part per matching row, fitted (least squares) over the filters' exact searches. */
interface ExactCost {
  fixedMs: number
  perRowMs: number
}

/**
 * Fits the exact branch's time as `fixedMs + perRowMs × matching rows` over every measured exact
 * search (each filter's median); undefined with fewer than two distinct sizes or a slope ≤ 0.
 */
export function fitExactCost(
  filters: ReadonlyArray<{ matching: number; searches: ReadonlyArray<{ exactMs: number }> }>,
): ExactCost | undefined {
  const points = filters.map((f) => ({
    x: f.matching,
    y: percentile(
      f.searches.map((s) => s.exactMs),
      50,
    ),
  }))
  if (new Set(points.map((p) => p.x)).size < 2) return undefined
  const mx = points.reduce((a, p) => a + p.x, 0) / points.length
  const my = points.reduce((a, p) => a + p.y, 0) / points.length
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0)
  const slope = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx
  if (!(slope > 0)) return undefined
  return { fixedMs: Math.max(0, my - slope * mx), perRowMs: slope }
}

/**
 * The exact threshold that costs the tenant's filters least as measured: each walked filter at or
 * below it is answered exactly (its exact median), each above it walks (its walk median), weighted
 * by its searches; tried at `floor` and at each filter's size, the smallest of equal cost wins.
 */
function cheapestThreshold(walked: readonly MeasuredFilter[], walkMs: ReadonlyMap<MeasuredFilter, number[]>, floor: number): number {
  let best = { at: floor, cost: Infinity }
  for (const at of [floor, ...walked.map((f) => f.matching)].sort((a, b) => a - b)) {
    let cost = 0
    for (const f of walked) {
      const ms = f.matching <= at ? median(f.searches.map((x) => x.exactMs)) : median(walkMs.get(f) ?? [])
      cost += ms * f.searches.length
    }
    if (cost < best.cost) best = { at, cost }
  }
  return best.at
}

function median(values: readonly number[]): number {
  return values.length ? percentile(values, 50) : Infinity
}

/** A filter's exact answer is clearly cheaper than its walk below this share of the walk's median: it is then named (a smaller difference flips between runs). */
const CLEARLY_CHEAPER = 0.8

/** Recall an unscaled walk may find less than the scaled one on the same searches and still count as finding as much (two hits in a thousand). */
const SAME_RECALL = 0.002

/** Whether a filter's walk missed `target` over its searches, with misses on two searches or more. */
function missesOnTwo(counts: readonly RecallCount[], target: number): boolean {
  return recallOf(counts).recall < target && counts.filter((c) => c.hits < c.expected).length >= 2
}

/** The one-sided normal quantile of a 95% margin (as `requiredOnSample`). */
const Z95 = 1.645

/** `target` plus a one-sided margin (`z`) for a proportion measured over `results`. */
function withMargin(target: number, results: number, z: number): number {
  if (target >= 1) return 1
  return Math.min(1, target + z * Math.sqrt((target * (1 - target)) / Math.max(1, results)))
}

/** Each distinct filter's matching rows, and the exact answer of each of its searches (timed). */
async function measureExact(handle: TenantStore, cases: readonly FilteredSearchCase[]): Promise<MeasuredFilter[]> {
  const byKey = new Map<string, MeasuredFilter>()
  for (const c of cases) {
    const key = filterKey(parseFilter(c.filter, 'tuning filter'))
    let f = byKey.get(key)
    if (!f) byKey.set(key, (f = { key, matching: await handle.count(c.filter), sent: 0, searches: [] }))
    if (c.sent) f.sent++
    const t0 = performance.now()
    const truth = await handle.exactSearch(c.embedding, { k: 10, filter: c.filter })
    f.searches.push({ embedding: c.embedding, filter: c.filter, truth, exactMs: performance.now() - t0 })
  }
  return [...byKey.values()].filter((f) => f.matching > 0)
}

/**
 * Marks the searches whose query the tenant's unfiltered walk (at its tuned setting) already misses
 * on: the filtered walk can do no better there, and the unfiltered tuning has counted them. The
 * filtered path is judged on the recall a filter costs beyond that; a few such queries among a
 * filter's ~20 searches would otherwise decide for it (each query checked once).
 */
async function markGraphMisses(handle: TenantStore, filters: readonly MeasuredFilter[]): Promise<void> {
  const seen = new Map<Embedding, boolean>()
  for (const f of filters) {
    for (const s of f.searches) {
      let miss = seen.get(s.embedding)
      if (miss === undefined) {
        const truth = await handle.exactSearch(s.embedding, { k: 10 })
        const got = await handle.search(s.embedding, { k: 10, exactFallback: false })
        const count = countRecall(truth, got)
        seen.set(s.embedding, (miss = count.hits < count.expected))
      }
      s.graphMiss = miss
    }
  }
}

/** One budget's walks: recall counts and times per filter, and all its times. */
interface Walks {
  walks: Map<MeasuredFilter, RecallCount[]>
  ms: number[]
  walkMs: Map<MeasuredFilter, number[]>
}

/**
 * The walk (`filterStrategy: 'index'`, no exact fallback, the tenant's tuned `ef_search`) at each
 * of `budgets` for every search of `filters`, and the search's exact answer timed again beside
 * them: on each search every budget and the exact answer in turn, the order rotating, so that their
 * times compare under the same conditions (a busy moment of the machine falls on all of them).
 * Each filter's searches get their `exactMs` from these runs.
 */
async function measureWalks(
  handle: TenantStore,
  filters: readonly MeasuredFilter[],
  budgets: ReadonlyArray<{ candidates: number; selectivityScale: number }>,
): Promise<Walks[]> {
  const out: Walks[] = budgets.map(() => ({ walks: new Map(), ms: [], walkMs: new Map() }))
  for (const f of filters) {
    for (const w of out) {
      w.walks.set(f, [])
      w.walkMs.set(f, [])
    }
    for (const [i, s] of f.searches.entries()) {
      const order = [...budgets.keys(), -1]
      for (let j = 0; j < order.length; j++) {
        const b = order[(i + j) % order.length]!
        const t0 = performance.now()
        if (b < 0) {
          await handle.exactSearch(s.embedding, { k: 10, filter: s.filter })
          s.exactMs = performance.now() - t0
          continue
        }
        const got = await handle.search(s.embedding, {
          k: 10,
          filter: s.filter,
          // At the tenant's tuned ef_search (saved before this), scaled by each filter's selectivity as searches are.
          filterStrategy: 'index',
          filterCandidates: budgets[b]!.candidates,
          selectivityScale: budgets[b]!.selectivityScale,
          exactFallback: false,
        })
        const ms = performance.now() - t0
        out[b]!.walkMs.get(f)!.push(ms)
        out[b]!.ms.push(ms)
        if (!s.graphMiss) out[b]!.walks.get(f)!.push(countRecall(s.truth, got))
      }
    }
  }
  return out
}

/** Pooled walk recall per selectivity band, over the filters the walk would serve (matching more than `exactBelow`). */
function bandRecalls(
  filters: readonly MeasuredFilter[],
  walks: ReadonlyMap<MeasuredFilter, RecallCount[]>,
  exactBelow: number,
  rows: number,
): Array<{ below: number; recall: number; searches: number }> {
  const out: Array<{ below: number; recall: number; searches: number }> = []
  for (const below of BANDS) {
    const counts = filters.filter((f) => f.matching > exactBelow && inBand(f, below, rows)).flatMap((f) => walks.get(f) ?? [])
    if (counts.length) out.push({ below, recall: recallOf(counts).recall, searches: counts.length })
  }
  return out
}

/** Whether a filter's selectivity falls in the band that ends at `below` (bands are consecutive). */
function inBand(f: MeasuredFilter, below: number, rows: number): boolean {
  const share = f.matching / Math.max(1, rows)
  const i = BANDS.indexOf(below as (typeof BANDS)[number])
  return share < below && (i === 0 || share >= BANDS[i - 1]!)
}
