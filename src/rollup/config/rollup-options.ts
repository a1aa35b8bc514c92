import type { ReadConsistency } from '../../replicas/index.js'
import type { PercentileRequest } from './sketch-expressions.js'
import { tenantInput } from './tenant-input.js'
import { InvalidArgumentError } from '../../errors.js'
import { assertIdentifier } from '../../sql/identifier.js'
import type { RollupMigrationOptions } from './rollup-parts.js'

/** Options of {@link MonthlyRollup.refreshAt}. */
export interface RefreshAtOptions {
  tenantId: string | number
  /** Any moment in the bucket's local month (a Date, ISO string or epoch ms). */
  moment: Date | string | number
}

/** Options of {@link MonthlyRollup.rebuild}. */
export interface RebuildOptions {
  tenantId: string | number
  /** First moment of the range (its local month is the first rebuilt). */
  since: Date | string | number
  /** Last moment of the range (its local month is the last rebuilt). */
  until: Date | string | number
}

/** Options of {@link MonthlyRollup.refreshDirty}. */
export interface RefreshDirtyOptions {
  /** At most this many log rows claimed (default 1000); their distinct keys are the buckets refreshed. */
  limit?: number
  /** Only this tenant's keys. */
  tenantId?: string | number
}

/** What {@link MonthlyRollup.refreshDirty} did. */
export interface RefreshDirtyResult {
  /** Buckets refreshed. */
  buckets: number
  /** Log rows still pending, counted up to 10,000 (a bounded count: cheap whatever the backlog). */
  remaining: number
  /** Set when more than 10,000 rows are pending (`remaining` is then 10,000). */
  moreRemaining?: true
}

/** Options of {@link MonthlyRollup.drain}. */
export interface DrainOptions extends RefreshDirtyOptions {
  /** Wait this long when the log is empty before looking again (default 1000 ms). */
  intervalMs?: number
  /** Stops the loop (after the refresh in flight commits). */
  signal?: AbortSignal
}

/** Options of {@link MonthlyRollup.markDirty}: one tenant's moments whose buckets a write changed. */
export interface MarkDirtyOptions {
  tenantId: string | number
  /**
   * The source's `at` values the write touched (old and new for an update): Dates, ISO 8601 dates or
   * date-times, or epoch ms — the month grammar of every rollup method without bare `'YYYY-MM'`.
   */
  at: ReadonlyArray<Date | string | number>
}

/** Options of {@link MonthlyRollup.read}. */
export interface ReadOptions extends ReadConsistency {
  tenantId: string | number
  /** First month (any moment in it, or `'YYYY-MM'`). */
  from: Date | string | number
  /** Last month, inclusive. */
  to: Date | string | number
  /** Keep only these group columns, re-aggregating the measures over the others (`[]`: one row per month). */
  groupBy?: readonly string[]
  /**
   * Months the dirty-key log holds (tracked writes not drained yet) are aggregated live from the
   * source instead of read from the rollup table, in the same statement: right after a committed
   * write, without waiting for a drain. Needs `track` to have run.
   */
  fresh?: boolean
  /** One row per group for the whole range (the measures combined over its months; `month` is `'YYYY-MM..YYYY-MM'`). */
  combineMonths?: boolean
  /** The percentiles to return for each `'tdigest'` measure (`approxPercentiles`): `{ latency: [0.5, 0.95] }`. */
  percentiles?: PercentileRequest
}

/** A row of {@link MonthlyRollup.read}: `{ month: '2025-03', category: 'travel', total: '1234.50', count: 7 }`. */
export type RollupRow = { month: string } & Record<string, unknown>

/**
 * Checks a tenant id against the rollup's declared tenant type ({@link tenantInput}); without a
 * type, a non-empty string (at most 256 characters) or a safe integer.
 *
 * ### Examples
 * ```ts
 * assertTenantId(42, 'bigint') // 42
 * ```
 */
export function assertTenantId(value: unknown, tenantType = 'text'): string | number {
  return tenantInput(value, tenantType)
}

/**
 * Checks a migration's options before anything is sent or created: an object whose `runtimeRole`
 * (if any) is an identifier and whose `track` (if any) is a boolean.
 *
 * ### Examples
 * ```ts
 * assertMigrationOptions({ runtimeRole: 'app' }, 'migrationSql') // ok
 * assertMigrationOptions({ runtimeRole: 'app; drop role x' }, 'migrationSql') // throws InvalidIdentifierError
 * ```
 */
export function assertMigrationOptions(options: unknown, method: string): void {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`${method}: options must be an object`)
  const { runtimeRole, track } = options as RollupMigrationOptions & { track?: unknown }
  if (runtimeRole !== undefined) assertIdentifier(runtimeRole, 'runtime role')
  if (track !== undefined && typeof track !== 'boolean') throw new InvalidArgumentError(`${method}: track must be a boolean`)
}

/** Options of {@link MonthlyRollup.readAcross}: an admin read across tenants (`consistency`/`consistencyToken` through a `ReplicaSet`). */
export interface ReadAcrossOptions extends ReadConsistency {
  /** First month (any moment in it, or `'YYYY-MM'`). */
  from: Date | string | number
  /** Last month, inclusive. */
  to: Date | string | number
  /** Only these tenants. Default: every tenant. */
  tenants?: ReadonlyArray<string | number>
  /** Keep only these group columns (`[]`: none); the measures combine over the rest. Default: every group. */
  groupBy?: readonly string[]
  /** One row per tenant (its `tenant_id` in the row) instead of the fleet combined. Implied by `top`. */
  perTenant?: boolean
  /** The `n` tenants with the largest (or smallest) `by` in each month (or the range, with `combineMonths`) and kept group. */
  top?: { by: string; n: number; order?: 'desc' | 'asc' }
  /** One row per group (and tenant) for the whole range, `month` being `'YYYY-MM..YYYY-MM'`. */
  combineMonths?: boolean
  /** Buckets the dirty-key log holds, of any tenant, aggregated live from the source. Needs `track`. */
  fresh?: boolean
  /** Percentiles of `'tdigest'` measures: `{ latency: [0.5, 0.95] }`. */
  percentiles?: PercentileRequest
}

/** A row of {@link MonthlyRollup.readAcross}: `{ month, tenant_id?, rank?, ...groups, ...measures }`. */
export type RollupAcrossRow = { month: string; tenant_id?: string | number; rank?: number } & Record<string, unknown>
