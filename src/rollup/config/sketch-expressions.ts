import { sql, type RawBuilder } from 'kysely'

/** The measure column types that hold a sketch instead of a number: they combine by union. */
export type SketchKind = 'hll' | 'tdigest'

/** The sketch a measure column type holds, or undefined for a plain number. */
export function sketchKind(type: string): SketchKind | undefined {
  return type === 'hll' || type === 'tdigest' ? type : undefined
}

/**
 * A distinct count that combines across groups and months: a HyperLogLog sketch of `expression`
 * (the `hll` extension's `hll_add_agg(hll_hash_any(…))`, log2m 11: a relative standard error of
 * about 2.3%). Store it in a `'hll'` measure column; `read` returns its estimate, and unions the
 * sketches (never adds the counts) when it folds groups (`groupBy`) or months (`combineMonths`).
 *
 * ### Examples
 * ```ts
 * const monthly = rollupTable('visits_monthly', { groupBy: { page: 'text' }, measures: { users: 'hll' } })
 * new MonthlyRollup({ …, target: monthly, measures: { users: approxCountDistinct(sql`user_id`) } })
 * ```
 */
export function approxCountDistinct(expression: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`hll_add_agg(hll_hash_any(${expression}))`
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
