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

/** The precision of an `approxPercentiles` sketch. */
export interface PercentileSketchOptions {
  /**
   * The t-digest's compression, 10–10,000 (default 100): about how many centroids it keeps. More
   * keeps percentiles closer (docs/rollup.md has the error measured at 25, 100 and 400) and makes
   * every digest — and every merge in a read — larger and slower.
   */
  compression?: number
}

/**
 * Percentiles that combine across groups and months: a t-digest of `expression` (the `tdigest`
 * extension; compression 100 unless `options.compression` says otherwise). Store it in a
 * `'tdigest'` measure column and ask `read` for the percentiles:
 * `read({ …, percentiles: { latency: [0.5, 0.95] } })` → `latency: [p50, p95]`.
 *
 * @throws {InvalidArgumentError} when `compression` is not an integer from 10 to 10,000.
 *
 * ### Examples
 * ```ts
 * new MonthlyRollup({ …, measures: { latency: approxPercentiles(sql`duration_ms`) } })
 * approxPercentiles(sql`duration_ms`, { compression: 400 }) // closer percentiles, digests ~4× larger
 * ```
 */
export function approxPercentiles(expression: RawBuilder<unknown>, options: PercentileSketchOptions = {}): RawBuilder<unknown> {
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('approxPercentiles: options must be { compression?: number }')
  const compression = options.compression ?? 100
  if (!Number.isInteger(compression) || compression < 10 || compression > 10_000)
    throw new InvalidArgumentError(
      `approxPercentiles: compression must be an integer from 10 to 10,000 (100 is the default), got ${String(options.compression)}`,
    )
  return sql`tdigest((${expression})::double precision, ${sql.lit(compression)})`
}

/** Which percentiles `read` returns for each `'tdigest'` measure: `{ latency: [0.5, 0.95] }`. */
export type PercentileRequest = Readonly<Record<string, readonly number[]>>
