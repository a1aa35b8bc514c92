import type { TenantTuning } from '../../schema/index.js'

/**
 * `auto` scores a filter's matching rows exactly when at most this many match, on a tenant with no
 * tuning to derive it from. Measured (rag-bench filters, 30,000-chunk tenant, 128-d): exact scoring
 * of ~1,000 rows costs about what the filtered HNSW walk does; fewer rows are cheaper, and exact,
 * scored directly.
 */
export const DEFAULT_EXACT_BELOW = 1000

/**
 * Scoring the rows a filter matches costs about this many times an unfiltered exact scan per row:
 * they are read through a bitmap of the metadata index, the filter rechecked on each (measured with
 * rag-bench filters: 2.8 µs a matching row against 0.75 µs a row of the whole tenant's scan).
 */
export const FILTERED_ROW_COST = 4

/** A filtered walk at its budget costs about this many unfiltered searches at the tenant's `ef_search` (rag-bench filters). */
export const FILTERED_WALK_COST = 1.5

/** What a filtered search of one tenant may spend: when to score exactly, and how far to walk. */
export interface FilteredBudget {
  /** Filters matching at most this many of the tenant's rows are scored exactly. */
  exactBelow: number
  /** Rows the walk takes in index order before the exact re-sort (its `ef_search` is at least this). */
  candidates: number
  /** Filters (`filterKey`) tuning found the walk misses on: scored exactly. */
  exactFilters?: readonly string[]
  /** The most a filter's selectivity multiplies the walk's `ef_search` by (1: not scaled, and no estimate asked for). */
  selectivityScale: number
}

/**
 * The filtered budget of a tenant for a search of `k`: what `optimize()` chose for its filtered
 * path when it measured it (its candidates for k = 10, scaled with k; its exact threshold); else
 * derived from its unfiltered tuning — filters are scored exactly up to the number of rows whose
 * exact scoring costs what the walk does ({@link modelExactBelow}); else the defaults
 * ({@link DEFAULT_EXACT_BELOW} rows). Candidates default to max(4k, 40). The walk's `ef_search`
 * is the tenant's tuned one scaled by the filter's selectivity ({@link walkEfSearch}), at most by
 * the scale tuning chose (1 where the unscaled walk met the target at less cost), else
 * {@link MAX_SELECTIVITY_SCALE}. A call's `efSearch` keeps the default candidates and scale (it
 * asks for one setting, not the tenant's).
 *
 * ### Examples
 * ```ts
 * filteredBudget(await cache.get('acme'), 10, false) // { exactBelow: 2250, candidates: 80, selectivityScale: 1 }
 * ```
 */
export function filteredBudget(tuning: TenantTuning | undefined, k: number, callSetsEf: boolean): FilteredBudget {
  const base = Math.max(4 * k, 40)
  const tuned = tuning && !tuning.exact ? tuning : undefined
  const perTen = callSetsEf ? undefined : tuned?.filter?.candidates
  const candidates = Math.min(10_000, Math.max(base, perTen === undefined ? 0 : Math.ceil((perTen * k) / 10)))
  const exactBelow = tuned?.filter?.exactBelow ?? (tuned ? modelExactBelow(tuned) : undefined) ?? DEFAULT_EXACT_BELOW
  const exactFilters = callSetsEf ? undefined : tuned?.filter?.exactFilters
  const selectivityScale = (callSetsEf ? undefined : tuned?.filter?.selectivityScale) ?? MAX_SELECTIVITY_SCALE
  return { exactBelow, candidates, selectivityScale, ...(exactFilters?.length ? { exactFilters } : {}) }
}

/**
 * The matching rows below which exact scoring is cheaper than the filtered walk, from a tenant's
 * unfiltered tuning: its rows × (the walk's cost: {@link FILTERED_WALK_COST} × search p50) ÷
 * (exact cost: {@link FILTERED_ROW_COST} × exact-scan p50), within 100..1,000,000; undefined
 * without the figures.
 *
 * ### Examples
 * ```ts
 * modelExactBelow({ rowsAtTuning: 30_000, searchP50Ms: 4, exactP50Ms: 20, … }) // 2250
 * ```
 */
export function modelExactBelow(tuning: Pick<TenantTuning, 'rowsAtTuning' | 'searchP50Ms' | 'exactP50Ms'>): number | undefined {
  const { rowsAtTuning: rows, searchP50Ms: search, exactP50Ms: exact } = tuning
  if (search === null || exact === null || !(exact > 0) || !(rows > 0)) return undefined
  return Math.round(Math.min(1_000_000, Math.max(100, (rows * FILTERED_WALK_COST * search) / (FILTERED_ROW_COST * exact))))
}

/** The most a filter's selectivity multiplies the walk's `ef_search` by. */
export const MAX_SELECTIVITY_SCALE = 4

/** The selectivity scales `optimize()` measures a tenant's filtered walk at: none, and the most. */
export const SELECTIVITY_SCALES = [1, MAX_SELECTIVITY_SCALE] as const

/**
 * The `ef_search` of a filtered walk: the tenant's (or the call's) `ef_search` scaled by the
 * filter's estimated selectivity — a filter passing a share `s` of the rows leaves about s × ef of
 * the walk's first candidates, so the walk looks 1/s as far (at most `maxScale`×, by default
 * {@link MAX_SELECTIVITY_SCALE}) — at least the candidates it takes, at most 1,000 (pgvector's bound).
 *
 * ### Examples
 * ```ts
 * walkEfSearch(200, 200, 0.5) // 400
 * walkEfSearch(40, 40, 0.01) // 160
 * walkEfSearch(40, 40, 0.01, 1) // 40
 * ```
 */
export function walkEfSearch(efSearch: number, candidates: number, share: number, maxScale: number = MAX_SELECTIVITY_SCALE): number {
  const scale = Math.min(maxScale, MAX_SELECTIVITY_SCALE, 1 / Math.max(share, 1e-9))
  return Math.min(1000, Math.max(candidates, Math.ceil(Math.max(efSearch, 1) * Math.max(1, scale))))
}
