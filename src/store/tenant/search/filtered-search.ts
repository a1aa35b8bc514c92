import type { LocalSettings } from '../../../db/local-settings.js'
import { filterKey, type FilterNode } from '../../../filter/filter-tree.js'
import { withEmbeddings } from '../writes/chunk-statements.js'
import { compileForScope, runScoped, type TenantScope } from '../tenant-scope.js'
import { MAX_SELECTIVITY_SCALE, walkEfSearch } from './filtered-budget.js'

/** How a filtered search finds its rows: pgscale's choice per query, or one strategy always (benches, checks). */
export type FilterStrategy = 'auto' | 'exact' | 'index'

/** A search hit as the statements return it. */
interface Hit {
  documentId: string
  chunkIndex: number
  content: string
  metadata: Record<string, unknown>
  distance: number
  /** With `includeEmbedding`. */
  embedding?: number[]
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
  /** Return each hit's embedding (read in the same statement). Default false. */
  includeEmbedding?: boolean
  /**
   * The tenant's rows when it is tuned: the walk's `ef_search` is then scaled by the filter's
   * estimated selectivity (the planner's estimate of its matching rows over these;
   * {@link walkEfSearch}). Absent: the walk runs at the settings' `ef_search` (raised to the candidates).
   */
  tenantRows?: number
  /** `auto`: filters (`filterKey`) the tenant's tuning found the walk misses on — scored exactly. */
  exactFilters?: readonly string[]
  /** The most the filter's selectivity multiplies the walk's `ef_search` by; 1: not scaled, no estimate asked for. Default {@link MAX_SELECTIVITY_SCALE}. */
  selectivityScale?: number
}

/**
 * A filtered k-nearest search that keeps its recall (Qdrant's idea, on PostgreSQL), in one
 * statement: it first counts at most `exactBelow + 1` of the tenant's matching rows (through a
 * metadata index where the filter's fields have one, reading no vectors); when fewer match, it
 * scores them all exactly — the exact answer. Otherwise the filter is broad enough for the HNSW walk:
 * `candidates` rows in index order under pgvector's iterative scan, re-sorted by exact distance;
 * fewer than k (a filter the walk ran out on) falls back to the exact answer. Never fewer than
 * min(k, matching rows). Which branch a filter took is remembered per tenant for a minute
 * (`FilterVerdicts`), so a filter that repeats runs its branch directly.
 *
 * ### Examples
 * ```ts
 * const hits = await filteredSearch(scope, vector, node, plan)
 * ```
 */
export async function filteredSearch(scope: TenantScope, vector: string, node: FilterNode, plan: FilteredSearchPlan): Promise<Hit[]> {
  const { k } = plan
  const embeddings = plan.includeEmbedding === true
  const statement = (text: string) => (embeddings ? withEmbeddings(scope.config, text) : text)
  if (node.kind === 'const' && !node.value) return []
  if (plan.exactOnly || plan.strategy === 'exact') return exactFiltered(scope, vector, node, k, embeddings)
  const candidates = Math.max(plan.candidates, k)
  if (plan.strategy === 'auto' && plan.exactFilters?.includes(filterKey(node))) return exactFiltered(scope, vector, node, k, embeddings)
  const key = `${plan.exactBelow}:${filterKey(node)}`
  const verdict = plan.strategy === 'auto' ? scope.verdicts.get(scope.tenantId, key) : 'walk'
  if (verdict === 'exact') return exactFiltered(scope, vector, node, k, embeddings)
  const maxScale = plan.selectivityScale ?? MAX_SELECTIVITY_SCALE
  const share = plan.tenantRows === undefined || maxScale <= 1 ? 1 : await estimatedShare(scope, node, plan.tenantRows)
  const settings = {
    ...plan.settings,
    'hnsw.ef_search': walkEfSearch(Number(plan.settings['hnsw.ef_search'] ?? 0), candidates, share, maxScale),
  }
  let rows: Array<Hit & { exact?: boolean }>
  if (verdict === undefined) {
    const f = await compileForScope(scope, node, 6)
    rows = await scope.db.queryWithSettings<Hit & { exact: boolean }>(
      statement(scope.statements.auto(f.sql)),
      [scope.tenantId, vector, k, plan.exactBelow + 1, candidates, ...f.params],
      settings,
    )
    // The exact branch answered (or nothing matched): complete as it is.
    const exact = rows.length === 0 || rows[0]!.exact
    scope.verdicts.set(scope.tenantId, key, exact ? 'exact' : 'walk')
    if (exact) return rows.map(withoutExact)
  } else {
    const w = await compileForScope(scope, node, 5)
    rows = await scope.db.queryWithSettings<Hit>(
      statement(scope.statements.knn(w.sql)),
      [scope.tenantId, vector, k, candidates, ...w.params],
      settings,
    )
  }
  if (rows.length >= k || !plan.exactFallback) return rows.map(withoutExact)
  // The walk ran out (fewer matching rows than counted, or than k): answer exactly, and remember it.
  if (plan.strategy === 'auto') scope.verdicts.set(scope.tenantId, key, 'exact')
  return exactFiltered(scope, vector, node, k, embeddings)
}

/**
 * The exact k nearest rows of the tenant that match (never an ANN index); with their embeddings
 * when `includeEmbedding`.
 *
 * ### Examples
 * ```ts
 * const truth = await exactFiltered(scope, vector, node, 10)
 * ```
 */
export async function exactFiltered(
  scope: TenantScope,
  vector: string,
  node: FilterNode,
  k: number,
  includeEmbedding = false,
): Promise<Hit[]> {
  if (node.kind === 'const' && !node.value) return []
  const f = await compileForScope(scope, node, 4)
  const text = scope.statements.exact(f.sql)
  return (await runScoped<Hit>(scope, includeEmbedding ? withEmbeddings(scope.config, text) : text, [vector, k, ...f.params])).rows
}

/**
 * The share of a tenant's `rows` a filter is estimated to match: the planner's row estimate for the
 * tenant's matching rows (`EXPLAIN`, no rows read) over `rows`, within [1/rows, 1]; remembered per
 * filter for a minute with the verdicts. 1 when the plan says nothing.
 */
async function estimatedShare(scope: TenantScope, node: FilterNode, rows: number): Promise<number> {
  const key = filterKey(node)
  const known = scope.verdicts.selectivity(scope.tenantId, key)
  if (known !== undefined) return known
  const f = await compileForScope(scope, node, 2)
  const { rows: plan } = await runScoped<{ 'QUERY PLAN': unknown }>(
    scope,
    `explain (format json) select 1 from ${scope.config.qualified} where tenant_id = $1 and (${f.sql})`,
    f.params,
  )
  const raw = plan[0]?.['QUERY PLAN']
  const tree = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<{ Plan?: { 'Plan Rows'?: number } }> | undefined
  const estimate = Number(tree?.[0]?.Plan?.['Plan Rows'])
  const share = Number.isFinite(estimate) && rows > 0 ? Math.min(1, Math.max(1 / rows, estimate / rows)) : 1
  scope.verdicts.setSelectivity(scope.tenantId, key, share)
  return share
}

function withoutExact({ exact: _exact, ...hit }: Hit & { exact?: boolean }): Hit {
  return hit
}
