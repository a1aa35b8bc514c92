import { indexesUsed, type Plan } from '../../src/index.js'

/** How the planner served a tenant's search. */
export type PlanKind = 'tenant HNSW index' | 'shared HNSW index' | 'btree + exact sort' | 'seq scan + sort'

/** Names the plan of a search from the indexes it reads. */
export function planKind(plan: Plan, names: { sharedHnsw: string; tenantPrefix: string; primaryKey: string }): PlanKind {
  const used = indexesUsed(plan)
  if (used.some((n) => n.startsWith(names.tenantPrefix))) return 'tenant HNSW index'
  if (used.includes(names.sharedHnsw)) return 'shared HNSW index'
  if (used.includes(names.primaryKey)) return 'btree + exact sort'
  return 'seq scan + sort'
}
