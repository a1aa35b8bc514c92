import { InvalidArgumentError } from '../../errors.js'
import { seededRandom } from '../../util/seeded-random.js'

/**
 * Fewer queries than this and a recall bound says little: `optimize()`'s notes, `pgscale recall`
 * and `pgscale doctor` say the sample is too small. At 30 queries the one-sided 95% margin of a
 * tenant whose per-query recall@10 has a standard deviation of 0.05 (typical here) is ~0.016.
 */
export const MIN_BOUND_QUERIES = 30

/** A one-sided confidence bound on the mean per-query recall of a sample of queries. */
export interface RecallBound {
  /** Mean per-query recall of the sample. */
  mean: number
  /** The true mean per-query recall is at least this, with `confidence`. */
  lower: number
  /** Queries in the sample (the sampling unit). */
  queries: number
  /** One-sided confidence of `lower`, e.g. 0.95. */
  confidence: number
  /** Fewer than {@link MIN_BOUND_QUERIES} queries: the bound is weak. */
  tooSmall: boolean
}

/** Options of {@link recallBound}. */
export interface RecallBoundOptions {
  /** One-sided confidence, 0.5..0.999. Default 0.95. */
  confidence?: number
  /** Seed of the bootstrap's resampling. Default `pgscale`. */
  seed?: string
  /** Bootstrap resamples, 100..100,000. Default 2,000. */
  resamples?: number
  /**
   * The recall of the pseudo-query added when every query of the sample was perfect (see
   * {@link recallBound}): 0.9, one of ten results missed. Default 0.9.
   */
  unseen?: number
}

/**
 * A one-sided lower confidence bound on the mean per-query recall of `perQuery` (each in [0, 1]):
 * the query is the sampling unit — the results of one query are correlated, so a bound over
 * k × n results would be too narrow. Per-query recall is skewed (most queries 1.0, a few 0.7): a
 * sample that happens to hold few of the bad ones looks both better and tighter than the truth, so
 * the sample is first given one pseudo-query as bad as its worst (`unseen` when all were perfect),
 * then the bound is the lower of the percentile bootstrap over queries (seeded; the `1 − confidence`
 * quantile of the resampled means) and a Student-t bound (mean − t·s/√n). Coverage measured on
 * seeded skewed distributions near 0.98 (test/store/tuning/recall-bound.test.ts): 94-97% of
 * 95% bounds held the true mean at 100-200 queries, 85-98% at 50. `mean` is the sample's own. An
 * empty sample has no bound (mean 1, lower 0).
 *
 * ### Examples
 * ```ts
 * const b = recallBound([1, 1, 0.9, 1, 0.8, 1, …])  // { mean: 0.985, lower: 0.979, queries: 200, confidence: 0.95, tooSmall: false }
 * b.lower >= 0.98 // "recall ≥ 0.98 with 95% confidence"
 * ```
 */
export function recallBound(perQuery: readonly number[], options: RecallBoundOptions = {}): RecallBound {
  const confidence = options.confidence ?? 0.95
  if (typeof confidence !== 'number' || !(confidence >= 0.5 && confidence <= 0.999))
    throw new InvalidArgumentError(`confidence must be a number from 0.5 to 0.999, got ${String(confidence)}`)
  const resamples = options.resamples ?? 2000
  if (!Number.isInteger(resamples) || resamples < 100 || resamples > 100_000)
    throw new InvalidArgumentError(`resamples must be an integer from 100 to 100000, got ${String(resamples)}`)
  const unseen = options.unseen ?? 0.9
  if (typeof unseen !== 'number' || !(unseen >= 0 && unseen <= 1))
    throw new InvalidArgumentError(`unseen must be a number in [0, 1], got ${String(unseen)}`)
  const n = perQuery.length
  for (const v of perQuery)
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new InvalidArgumentError(`per-query recall must be in [0, 1], got ${String(v)}`)
  if (n === 0) return { mean: 1, lower: 0, queries: 0, confidence, tooSmall: true }
  const mean = perQuery.reduce((s, v) => s + v, 0) / n
  if (n === 1) return { mean, lower: 0, queries: 1, confidence, tooSmall: true }
  const worst = Math.min(...perQuery)
  const values = [...perQuery, worst < 1 ? worst : unseen]
  const m = values.length
  const augmented = values.reduce((s, v) => s + v, 0) / m
  const variance = values.reduce((s, v) => s + (v - augmented) ** 2, 0) / (m - 1)
  const tLower = augmented - studentT(confidence, m - 1) * Math.sqrt(variance / m)
  const random = fastRandom(`${options.seed ?? 'pgscale'}:bootstrap`)
  const means = new Float64Array(resamples)
  for (let b = 0; b < resamples; b++) {
    let sum = 0
    for (let i = 0; i < m; i++) sum += values[Math.floor(random.next() * m)]!
    means[b] = sum / m
  }
  means.sort()
  const bootLower = means[Math.max(0, Math.floor((1 - confidence) * resamples) - 1)]!
  return { mean, lower: Math.max(0, Math.min(tLower, bootLower, mean)), queries: n, confidence, tooSmall: n < MIN_BOUND_QUERIES }
}

/** Options of {@link freshRecallBound}. */
export interface FreshRecallBoundOptions extends Omit<RecallBoundOptions, 'unseen'> {
  /** Queries in the fresh sample the bound is for, 1..100,000. Default: as many as measured. */
  fresh?: number
  /** The recall of the pseudo-query always added (at most the sample's worst). Default 0: one that finds none of its neighbours. */
  unseen?: number
}

/**
 * A one-sided lower **prediction** bound on the mean recall of `fresh` queries not yet seen, drawn
 * like the measured ones (`perQuery`): what a new sample of queries gets, not the true mean — it
 * carries both the uncertainty of the true mean and the spread of a fresh sample's own mean, so it
 * is wider than {@link recallBound}'s by about √(1 + n / fresh). Per-query recall is mostly 1 with
 * rare queries that miss most of their neighbours, and a sample — above all the query model's,
 * which on the seeded generators held up to 3× fewer imperfect queries than fresh ones did — can
 * hold too few of them: one pseudo-query that found none of its neighbours (`unseen`, default 0)
 * is always added (one as bad as the worst measured, or 0.9 when all were perfect, left fresh
 * queries below the statement on 3-5 of 14 generator tenants). The bound is the lower of a two-stage bootstrap (resample the
 * sample, then draw `fresh` queries from the resample; seeded) and a Student-t prediction bound
 * (mean − t·s·√(1/m + 1/fresh)). An empty sample has no bound (lower 0).
 *
 * ### Examples
 * ```ts
 * freshRecallBound(new Array(200).fill(1)).lower // ≈ 0.98: 200 perfect queries, 200 fresh ones
 * freshRecallBound(perQuery, { fresh: 50 })        // what the next 50 queries average, at least
 * ```
 */
export function freshRecallBound(perQuery: readonly number[], options: FreshRecallBoundOptions = {}): RecallBound {
  const unseen = options.unseen ?? 0
  const checked = recallBound(perQuery, { ...options, unseen, resamples: 100 })
  const n = perQuery.length
  if (n < 2) return checked
  const fresh = options.fresh ?? n
  if (!Number.isInteger(fresh) || fresh < 1 || fresh > 100_000)
    throw new InvalidArgumentError(`fresh must be an integer from 1 to 100000, got ${String(fresh)}`)
  const confidence = checked.confidence
  const resamples = options.resamples ?? 1000
  const values = [...perQuery, Math.min(unseen, ...perQuery)]
  const m = values.length
  const mean = values.reduce((a, v) => a + v, 0) / m
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (m - 1)
  const tLower = mean - studentT(confidence, m - 1) * Math.sqrt(variance * (1 / m + 1 / fresh))
  const random = fastRandom(`${options.seed ?? 'pgscale'}:fresh`)
  const means = new Float64Array(resamples)
  const resample = new Float64Array(m)
  for (let b = 0; b < resamples; b++) {
    for (let i = 0; i < m; i++) resample[i] = values[Math.floor(random.next() * m)]!
    let sum = 0
    for (let i = 0; i < fresh; i++) sum += resample[Math.floor(random.next() * m)]!
    means[b] = sum / fresh
  }
  means.sort()
  const bootLower = means[Math.max(0, Math.floor((1 - confidence) * resamples) - 1)]!
  return { ...checked, lower: Math.max(0, Math.min(tLower, bootLower, checked.mean)) }
}

/**
 * A seeded uniform generator for the bootstraps (mulberry32, seeded from `seededRandom`): hundreds
 * of thousands of draws per bound, several bounds per ladder step — `seededRandom`'s ARC4 took
 * ~0.1-0.5 s a bound on this machine.
 */
function fastRandom(seed: string): { next(): number } {
  let a = Math.floor(seededRandom(seed).next() * 2 ** 32) >>> 0
  return {
    next() {
      a = (a + 0x6d2b79f5) >>> 0
      let t = a
      t = Math.imul(t ^ (t >>> 15), t | 1)
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296
    },
  }
}

/**
 * The one-sided margin a delivered figure of `queries` queries with mean `mean` and bound `lower`
 * carries: `mean − lower` (0 when absent).
 *
 * ### Examples
 * ```ts
 * boundMargin({ mean: 0.985, lower: 0.979 }) // 0.006
 * ```
 */
export function boundMargin(bound: { mean: number; lower: number } | null | undefined): number {
  return bound ? Math.max(0, bound.mean - bound.lower) : 0
}

/**
 * The `confidence` quantile of Student's t with `df` degrees of freedom (Cornish-Fisher expansion
 * around the normal quantile; within 0.5% of tables for df ≥ 3).
 *
 * ### Examples
 * ```ts
 * studentT(0.95, 49) // ≈ 1.677
 * ```
 */
export function studentT(confidence: number, df: number): number {
  const z = normalQuantile(confidence)
  const z3 = z ** 3
  const z5 = z ** 5
  const z7 = z ** 7
  return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df ** 2) + (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df ** 3)
}

/**
 * The standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
 *
 * ### Examples
 * ```ts
 * normalQuantile(0.95) // 1.6449
 * ```
 */
export function normalQuantile(p: number): number {
  const a = [-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.357751867269, -30.66479806614716, 2.506628277459239]
  const b = [-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972, -13.28068155288572]
  const c = [-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783]
  const d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416]
  const low = 0.02425
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p))
    return (
      (((((c[0]! * q + c[1]!) * q + c[2]!) * q + c[3]!) * q + c[4]!) * q + c[5]!) /
      ((((d[0]! * q + d[1]!) * q + d[2]!) * q + d[3]!) * q + 1)
    )
  }
  if (p > 1 - low) return -normalQuantile(1 - p)
  const q = p - 0.5
  const r = q * q
  return (
    ((((((a[0]! * r + a[1]!) * r + a[2]!) * r + a[3]!) * r + a[4]!) * r + a[5]!) * q) /
    (((((b[0]! * r + b[1]!) * r + b[2]!) * r + b[3]!) * r + b[4]!) * r + 1)
  )
}
