/** Latency percentiles of a sample, in the sample's unit. */
export interface Percentiles {
  n: number
  p50: number
  p95: number
  p99: number
  mean: number
}

/** The p-th percentile (0..100) of `values` by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

/** Median of `values`. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/**
 * p50/p95/p99 and mean of a sample.
 *
 * ### Examples
 * ```ts
 * summarize([1.2, 0.9, 1.4]) // { n: 3, p50: 1.2, p95: 1.4, p99: 1.4, mean: 1.17 }
 * ```
 */
export function summarize(values: readonly number[]): Percentiles {
  const mean = values.reduce((s, v) => s + v, 0) / (values.length || 1)
  return { n: values.length, p50: percentile(values, 50), p95: percentile(values, 95), p99: percentile(values, 99), mean }
}

/** Rounds for display: 3 significant digits below 100, integers above. */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return '—'
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US')
  return Number(value.toPrecision(digits)).toString()
}
