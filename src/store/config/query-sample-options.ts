import { InvalidArgumentError } from '../../errors.js'
import { assertIntegerIn } from '../../util/assert-integer.js'

/** Store option `querySample`: how many recent query embeddings each tenant keeps, and for how long. */
export interface QuerySampleOptions {
  /** Embeddings kept per tenant (the newest), 16..10,000. Default 256. */
  perTenant?: number
  /** Embeddings older than this are dropped at the next flush, 1..3,650 days. Default 30. */
  maxAgeDays?: number
  /** How often the process writes its buffer, 100..600,000 ms. Default 5,000. */
  flushIntervalMs?: number
  /**
   * Keep the metadata filter a sampled search was sent with (its tree, values included), next to
   * its embedding, so `optimize()` tunes the filtered path on the filters users send. Default true;
   * false stores embeddings only. Never the query text.
   */
  filters?: boolean
}

/** The resolved option: off, or every value set. */
export type ResolvedQuerySample = false | Required<QuerySampleOptions>

/**
 * Checks the `querySample` store option (`false` turns sampling off).
 *
 * ### Examples
 * ```ts
 * resolveQuerySample(undefined) // { perTenant: 256, maxAgeDays: 30, flushIntervalMs: 5000, filters: true }
 * ```
 */
export function resolveQuerySample(value: QuerySampleOptions | false | undefined): ResolvedQuerySample {
  if (value === false) return false
  if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value)))
    throw new InvalidArgumentError(
      `querySample must be false or { perTenant, maxAgeDays, flushIntervalMs, filters }, got ${JSON.stringify(value)}`,
    )
  const o = value ?? {}
  if (o.filters !== undefined && typeof o.filters !== 'boolean')
    throw new InvalidArgumentError(`querySample.filters must be a boolean, got ${JSON.stringify(o.filters)}`)
  return {
    perTenant: assertIntegerIn(o.perTenant ?? 256, 16, 10_000, 'querySample.perTenant'),
    maxAgeDays: assertIntegerIn(o.maxAgeDays ?? 30, 1, 3650, 'querySample.maxAgeDays'),
    flushIntervalMs: assertIntegerIn(o.flushIntervalMs ?? 5000, 100, 600_000, 'querySample.flushIntervalMs'),
    filters: o.filters ?? true,
  }
}
