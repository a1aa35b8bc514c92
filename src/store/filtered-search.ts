import type { LocalSettings } from '../db/local-settings.js'
import type { FilterNode } from '../filter/filter-tree.js'
import { compileForScope, runScoped, type TenantScope } from './tenant-scope.js'

/** How a filtered search finds its rows: pgscale's choice per query, or one strategy always (benches, checks). */
export type FilterStrategy = 'auto' | 'exact' | 'index'

/** The matching rows below which `auto` answers exactly. */
export const DEFAULT_EXACT_BELOW = 2000

/** A search hit as the statements return it. */
interface Hit {
  documentId: string
  chunkIndex: number
  content: string
  metadata: Record<string, unknown>
  distance: number
}

/** What the caller decided for this search. */
export interface FilteredSearchPlan {
  k: number
  /** The tenant is answered exactly anyway (tuned so, or no index serves it). */
  exactOnly: boolean
  strategy: FilterStrategy
  /** `auto`: at most this many matching rows are scored exactly, more walk the index. */
  exactBelow: number
  /** The walk's settings (`hnsw.ef_search`, iterative scan); ef is raised to the candidates. */
  settings: LocalSettings
  /** Candidates the walk takes in index order before the exact re-sort: at least k. */
  candidates: number
  /** Answer exactly when the walk returns fewer than k rows. */
  exactFallback: boolean
}

/**
 * A filtered k-nearest search that keeps its recall (Qdrant's idea, on PostgreSQL): one statement
 * reads at most `exactBelow + 1` of the tenant's matching rows (through a metadata index where the
 * filter's fields have one) and scores them exactly; when that was all of them, it is the answer —
 * exact, in one round trip. Otherwise the filter is broad enough for the HNSW walk: `candidates` rows
 * in index order under pgvector's iterative scan, re-sorted by exact distance; fewer than k (a
 * filter the walk ran out on) falls back to the exact answer. Never fewer than min(k, matching rows).
 *
 * ### Examples
 * ```ts
 * const hits = await filteredSearch(scope, vector, node, plan)
 * ```
 */
export async function filteredSearch(scope: TenantScope, vector: string, node: FilterNode, plan: FilteredSearchPlan): Promise<Hit[]> {
  const { k } = plan
  if (node.kind === 'const' && !node.value) return []
  if (plan.exactOnly || plan.strategy === 'exact') return exactFiltered(scope, vector, node, k)
  const f = await compileForScope(scope, node, 5)
  if (plan.strategy === 'auto') {
    const { rows } = await runScoped<Hit & { matched: number }>(scope, scope.statements.probe(f.sql), [
      vector,
      k,
      plan.exactBelow + 1,
      ...f.params,
    ])
    if (rows.length === 0 || rows[0]!.matched <= plan.exactBelow) return rows.map(withoutMatched)
  }
  const candidates = Math.max(plan.candidates, k)
  const ef = Math.max(Number(plan.settings['hnsw.ef_search'] ?? 0), Math.min(candidates, 1000))
  const rows = await scope.db.queryWithSettings<Hit>(scope.statements.knn(f.sql), [scope.tenantId, vector, k, candidates, ...f.params], {
    ...plan.settings,
    'hnsw.ef_search': ef,
  })
  if (rows.length >= k || !plan.exactFallback) return rows
  return exactFiltered(scope, vector, node, k)
}

/**
 * The exact k nearest rows of the tenant that match (never an ANN index).
 *
 * ### Examples
 * ```ts
 * const truth = await exactFiltered(scope, vector, node, 10)
 * ```
 */
export async function exactFiltered(scope: TenantScope, vector: string, node: FilterNode, k: number): Promise<Hit[]> {
  if (node.kind === 'const' && !node.value) return []
  const f = await compileForScope(scope, node, 4)
  return (await runScoped<Hit>(scope, scope.statements.exact(f.sql), [vector, k, ...f.params])).rows
}

function withoutMatched({ matched: _matched, ...hit }: Hit & { matched: number }): Hit {
  return hit
}
