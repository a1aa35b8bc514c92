import type { TenantSize } from '../synthetic/corpus.js'
import type { TenantClass } from './rag-report.js'

/** Tenants above this many chunks are "large": they get their own index under the tiered strategy. */
export const LARGE_ABOVE = 5000
/** Tenants from this many chunks up are "medium". */
export const MEDIUM_FROM = 1000

/**
 * Which class a tenant of `chunks` chunks belongs to.
 *
 * ### Examples
 * ```ts
 * tenantClass(12_000) // 'large'
 * ```
 */
export function tenantClass(chunks: number): TenantClass {
  return chunks > LARGE_ABOVE ? 'large' : chunks >= MEDIUM_FROM ? 'medium' : 'small'
}

/**
 * Up to `n` tenants of a class, spread over its sizes (largest, smallest, and between).
 *
 * ### Examples
 * ```ts
 * sampleTenants(largeTenants, 4)
 * ```
 */
export function sampleTenants(tenants: readonly TenantSize[], n: number): TenantSize[] {
  if (tenants.length <= n) return [...tenants]
  return Array.from({ length: n }, (_, i) => tenants[Math.round((i * (tenants.length - 1)) / (n - 1 || 1))]!)
}

/**
 * The tenants of each class present, up to `perClass` of each (see {@link sampleTenants}).
 *
 * ### Examples
 * ```ts
 * for (const { cls, tenants } of sampleByClass(config.tenants, 4)) console.log(cls, tenants.length)
 * ```
 */
export function sampleByClass(tenants: readonly TenantSize[], perClass: number): Array<{ cls: TenantClass; tenants: TenantSize[] }> {
  const byClass = new Map<TenantClass, TenantSize[]>()
  for (const t of tenants) byClass.set(tenantClass(t.chunks), [...(byClass.get(tenantClass(t.chunks)) ?? []), t])
  return [...byClass.entries()].map(([cls, list]) => ({ cls, tenants: sampleTenants(list, perClass) }))
}
