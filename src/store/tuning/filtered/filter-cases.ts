import type { Database } from '../../../db/database.js'
import type { MetadataField } from '../../../filter/metadata-field.js'
import type { ResolvedStoreConfig } from '../../config/index.js'
import type { Embedding } from '../../ingest/index.js'
import type { FilteredSearchCase } from './filtered-tuning.js'
import { syntheticFilters } from './tuning-filters.js'
import { filterKey, parseFilter } from '../../../filter/filter-tree.js'

/** Where a tenant's filtered tuning gets its searches. */
export interface FilterCaseSources {
  db: Database
  config: ResolvedStoreConfig
  /** Up to `n` of the tenant's newest sampled searches that had a filter. */
  recentFiltered(tenantId: string, n: number): Promise<Array<{ embedding: Embedding; filter: Record<string, unknown> }>>
  /** The store's declared metadata fields. */
  fields(): Promise<readonly MetadataField[]>
}

/**
 * The filtered searches a tenant's filtered path is tuned on: its own recent filtered searches
 * (the query sample keeps each search's filter) when it has at least `minRecent`, up to `sample`
 * of the newest — the filters its users send, an ACL that repeats, a date range — each distinct
 * filter topped up to `perFilter` searches with the tenant's tuning queries (a filter that repeats
 * meets other queries than the few it was sampled with: one that follows the content may serve most
 * of them well and some badly), within 2 × `sample` searches in all; else synthetic
 * filters over the store's declared fields at a few selectivities, each with the first `perFilter`
 * of the tenant's tuning queries; else none (no declared field and no filtered traffic).
 *
 * ### Examples
 * ```ts
 * const found = await filterCases(sources, 'acme', 30_000, queries, { minRecent: 20, sample: 200, perFilter: 20 })
 * ```
 */
export async function filterCases(
  sources: FilterCaseSources,
  tenantId: string,
  rows: number,
  queries: readonly Embedding[],
  limits: { minRecent: number; sample: number; perFilter: number },
): Promise<{ source: 'recent' | 'synthetic'; cases: FilteredSearchCase[] } | undefined> {
  const recent = await sources.recentFiltered(tenantId, limits.sample)
  if (recent.length >= limits.minRecent) return { source: 'recent', cases: toppedUp(recent, queries, limits) }
  const fields = await sources.fields()
  if (fields.length === 0 || queries.length === 0) return undefined
  const filters = await syntheticFilters(sources.db, sources.config, tenantId, fields, rows)
  if (filters.length === 0) return undefined
  const some = queries.slice(0, limits.perFilter)
  return { source: 'synthetic', cases: filters.flatMap((filter) => some.map((embedding) => ({ embedding, filter }))) }
}

/**
 * Each distinct filter of `recent` with its own searches, then the tenant's `queries` in turn (each
 * filter taking the next ones) until it has `perFilter` (or the share of 2 × `sample` searches each
 * filter gets, if smaller).
 */
function toppedUp(
  recent: ReadonlyArray<{ embedding: Embedding; filter: Record<string, unknown> }>,
  queries: readonly Embedding[],
  limits: { sample: number; perFilter: number },
): FilteredSearchCase[] {
  const byKey = new Map<string, FilteredSearchCase[]>()
  for (const c of recent) {
    const key = filterKey(parseFilter(c.filter, 'sampled filter'))
    const list = byKey.get(key) ?? []
    list.push({ ...c, sent: true })
    byKey.set(key, list)
  }
  const each = Math.min(limits.perFilter, Math.floor((2 * limits.sample) / Math.max(1, byKey.size)))
  // Each filter's top-ups start where the previous filter's ended: a query the tenant's index serves
  // badly (with or without a filter) weighs on one filter, not on all of them.
  const out: FilteredSearchCase[] = []
  let next = 0
  for (const own of byKey.values()) {
    out.push(...own)
    const filter = own[0]!.filter
    for (let i = 0; own.length + i < each && i < queries.length; i++) out.push({ embedding: queries[next++ % queries.length]!, filter })
  }
  return out
}
