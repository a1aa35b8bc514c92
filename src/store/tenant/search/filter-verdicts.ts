/**
 * What `auto` learned about a filter: whether its matching rows were few enough to score exactly.
 * Filters repeat (an ACL, a "not archived"): remembering the answer for a minute spares the next
 * searches the count. A stale verdict costs time, never results — the exact path is always right,
 * and a walk that finds fewer than k rows falls back to it.
 *
 * ### Examples
 * ```ts
 * const verdicts = new FilterVerdicts()
 * verdicts.set('acme', key, 'walk')
 * verdicts.get('acme', key) // 'walk' (for ttlMs)
 * ```
 */
export class FilterVerdicts {
  readonly #entries = new Map<string, { verdict: 'exact' | 'walk'; at: number }>()
  readonly #selectivity = new Map<string, { share: number; at: number }>()

  constructor(
    readonly maxEntries = 1000,
    readonly ttlMs = 60_000,
  ) {}

  get(tenantId: string, filterKey: string): 'exact' | 'walk' | undefined {
    const key = `${tenantId}\u0000${filterKey}`
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    if (performance.now() - entry.at > this.ttlMs) {
      this.#entries.delete(key)
      return undefined
    }
    return entry.verdict
  }

  set(tenantId: string, filterKey: string, verdict: 'exact' | 'walk'): void {
    const key = `${tenantId}\u0000${filterKey}`
    this.#entries.delete(key)
    this.#entries.set(key, { verdict, at: performance.now() })
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!)
  }

  /** The estimated share of the tenant's rows a filter matches (the planner's estimate), while fresh. */
  selectivity(tenantId: string, filterKey: string): number | undefined {
    const key = `${tenantId}\u0000${filterKey}`
    const entry = this.#selectivity.get(key)
    if (!entry) return undefined
    if (performance.now() - entry.at > this.ttlMs) {
      this.#selectivity.delete(key)
      return undefined
    }
    return entry.share
  }

  setSelectivity(tenantId: string, filterKey: string, share: number): void {
    const key = `${tenantId}\u0000${filterKey}`
    this.#selectivity.delete(key)
    this.#selectivity.set(key, { share, at: performance.now() })
    if (this.#selectivity.size > this.maxEntries) this.#selectivity.delete(this.#selectivity.keys().next().value!)
  }

  /** Forgets every verdict (after writes that may change what filters match, e.g. a bulk load). */
  clear(): void {
    this.#entries.clear()
    this.#selectivity.clear()
  }
}
