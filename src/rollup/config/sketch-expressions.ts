import { sql, type RawBuilder } from 'kysely'
import { InvalidArgumentError } from '../../errors.js'

/** The measure column types that hold a sketch instead of a number: they combine by union. */
export type SketchKind = 'hll' | 'tdigest'

/** The sketch a measure column type holds, or undefined for a plain number. */
export function sketchKind(type: string): SketchKind | undefined {
  return type === 'hll' || type === 'tdigest' ? type : undefined
}

/** The precision of an `approxCountDistinct` sketch. */
export interface DistinctSketchOptions {
  /**
   * log2 of the sketch's register count, 4–16 (default 11, the `hll` extension's): the relative
   * standard error is about 1.04 / √2^log2m — 2.3% at 11, 1.6% at 12, 0.81% at 14 — and a dense
   * sketch takes 2^log2m × 5 bits (1.3 KB at 11, 10 KB at 14; small sets stay sparse and smaller).
   */
  log2m?: number
}

/**
 * A distinct count that combines across groups and months: a HyperLogLog sketch of `expression`
 * (the `hll` extension's `hll_add_agg(hll_hash_any(…))`; log2m 11 unless `options.log2m` says
 * otherwise: a relative standard error of about 2.3%). Store it in a `'hll'` measure column; `read`
 * returns its estimate, and unions the sketches (never adds the counts) when it folds groups
 * (`groupBy`), months (`combineMonths`) or tenants (`readAcross`).
 *
 * @throws {InvalidArgumentError} when `log2m` is not an integer from 4 to 16.
 *
 * ### Examples
 * ```ts
 * const monthly = rollupTable('visits_monthly', { groupBy: { page: 'text' }, measures: { users: 'hll' } })
 * new MonthlyRollup({ …, target: monthly, measures: { users: approxCountDistinct(sql`user_id`) } })
 * approxCountDistinct(sql`user_id`, { log2m: 14 }) // ±0.8% (1 σ) for fleet-wide counts
 * ```
 */
export function approxCountDistinct(expression: RawBuilder<unknown>, options: DistinctSketchOptions = {}): RawBuilder<unknown> {
  const { log2m } = options
  if (log2m === undefined) return sql`hll_add_agg(hll_hash_any(${expression}))`
  if (!Number.isInteger(log2m) || log2m < 4 || log2m > 16)
    throw new InvalidArgumentError(`approxCountDistinct: log2m must be an integer from 4 to 16 (11 is the default), got ${String(log2m)}`)
  return sql`hll_add_agg(hll_hash_any(${expression}), ${sql.lit(log2m)})`
}

/**
 * Percentiles that combine across groups and months: a t-digest of `expression` (the `tdigest`
 * extension, 100 centroids). Store it in a `'tdigest'` measure column and ask `read` for the
 * percentiles: `read({ …, percentiles: { latency: [0.5, 0.95] } })` → `latency: [p50, p95]`.
 *
 * ### Examples
 * ```ts
 * new MonthlyRollup({ …, measures: { latency: approxPercentiles(sql`duration_ms`) } })
 * ```
 */
export function approxPercentiles(expression: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`tdigest((${expression})::double precision, 100)`
}

/** Which percentiles `read` returns for each `'tdigest'` measure: `{ latency: [0.5, 0.95] }`. */
export type PercentileRequest = Readonly<Record<string, readonly number[]>>
