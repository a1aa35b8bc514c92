import { hybridStatement, nearestStatements, type ResolvedStoreConfig, RESULT_COLUMNS, walkOrder } from '../../config/index.js'

/**
 * The statements that take a compiled metadata filter (`filter`: a SQL boolean expression whose
 * placeholders start where each statement says). In every one the tenant is `$1` and the filter is
 * ANDed after `tenant_id = $1`, in parentheses, so no filter can widen the tenant's scope.
 */
export interface FilteredStatements {
  /** $1 tenant, $2 vector, $3 k; filter from $4 → the exact k nearest matching rows. */
  exact(filter: string): string
  /**
   * $1 tenant, $2 vector, $3 k, $4 cap, $5 candidates; filter from $6 → one statement that counts
   * at most `cap` matching rows first (no vectors read), then runs one branch only: fewer than `cap`
   * match → the exact k nearest of them; else the walk (`knn`). Each row says which (`exact`).
   */
  auto(filter: string): string
  /** $1 tenant, $2 vector, $3 k, $4 candidates; filter from $5 → candidates in index order, re-sorted by exact distance, k of them. */
  knn(filter: string): string
  /** The hybrid statement with the filter in both lists; filter from $7. */
  hybrid(filter: string, exactOrder: boolean): string
  /** $1 tenant, $2 limit[, $3 document, $4 chunk after which to start]; filter from $3 (or $5). */
  find(filter: string, after: boolean): string
  /** $1 tenant; filter from $2 → `n`. */
  count(filter: string): string
  /** $1 tenant; filter from $2 → deleted rows. */
  delete(filter: string): string
}

export function renderFilteredStatements(c: ResolvedStoreConfig): FilteredStatements {
  const t = c.qualified
  const op = c.operator
  const { exact } = nearestStatements(c)
  /** The tenant's matching rows with their exact distance. */
  const matching = (filter: string) => `
        select ${RESULT_COLUMNS}, embedding ${op} $2 as distance
        from ${t}
        where tenant_id = $1 and (${filter})`
  /** The first `limit` matching rows in the HNSW index's order (the walk). */
  const walked = (filter: string, limit: string) => `${matching(filter)}
        order by ${walkOrder(c)}
        limit ${limit}`
  return {
    exact: (filter) => exact(` and (${filter})`),
    // The probe is an InitPlan: each branch's `where` on it is a one-time filter, so the branch
    // whose condition is false never runs its scan.
    auto: (filter) => `
      with probe as materialized (
        select count(*)::int as matched from (select 1 from ${t} where tenant_id = $1 and (${filter}) limit $4) capped
      )
      (select "documentId", "chunkIndex", content, metadata, distance, true as exact from (${matching(filter)}
        offset 0
      ) scored
      where (select matched from probe) < $4
      order by distance
      limit $3)
      union all
      (select "documentId", "chunkIndex", content, metadata, distance, false as exact from (${walked(filter, '$5')}
      ) nearest
      where (select matched from probe) >= $4
      order by distance + 0
      limit $3)`,
    knn: (filter) => `
      select "documentId", "chunkIndex", content, metadata, distance from (${walked(filter, '$4')}
      ) nearest
      order by distance + 0
      limit $3`,
    hybrid: (filter, exactOrder) => hybridStatement(c, exactOrder ? `embedding ${op} $2` : walkOrder(c), ` and (${filter})`),
    find: (filter, after) => `
      select ${RESULT_COLUMNS} from ${t}
      where tenant_id = $1${after ? ' and (document_id, chunk_index) > ($3, $4::int)' : ''} and (${filter})
      order by document_id, chunk_index
      limit $2`,
    count: (filter) => `select count(*)::int as n from ${t} where tenant_id = $1 and (${filter})`,
    delete: (filter) => `delete from ${t} where tenant_id = $1 and (${filter})`,
  }
}
