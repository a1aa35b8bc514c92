import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { recallMonitorTable, type ResolvedStoreConfig } from '../config/index.js'
import { efSearchInUse, type TenantTuning } from '../schema/index.js'

/**
 * Where a recall figure's queries came from: the tenant's recent real queries (their embeddings),
 * its own chunks (perturbed), or its recent filtered searches (each with the filter it was sent with).
 */
export type QuerySource = 'recent' | 'chunks' | 'filtered'

/** One recorded recall figure. */
export interface RecallFigure {
  recall: number
  queries: number
  /** The `ef_search` it was measured at (null: the exact path). */
  efSearch: number | null
  measuredAt: Date
}

/** One tenant's line of {@link recallReport}. */
export interface TenantRecallReport {
  tenantId: string
  /** What its searches run now: `index` at `efSearch`, or the exact path. */
  path: 'index' | 'exact'
  efSearch: number | null
  /** The queries its tuning was chosen on (null: never tuned). */
  querySource: TenantTuning['querySource'] | null
  /** Tie-aware recall@10 on recent real queries, as last measured (tuning or `measureRecall({ source: 'recent' })`). */
  recent: RecallFigure | null
  /** The same on a sample of its chunks. */
  chunks: RecallFigure | null
  /** Tie-aware recall@10 of its recent filtered searches, each with its own filter (tuning or `measureRecall({ source: 'recent' })`). */
  filtered: RecallFigure | null
  /** chunks − recent, when both were measured: how much the chunk sample flatters. */
  gap: number | null
}

/**
 * Records recall figures (one per tenant and source, the latest kept).
 *
 * ### Examples
 * ```ts
 * await recordRecall(db, config, [{ tenantId: 'acme', source: 'recent', recall: 0.985, queries: 200, efSearch: 100, measuredAt: new Date() }])
 * ```
 */
export async function recordRecall(
  db: Database,
  config: ResolvedStoreConfig,
  figures: ReadonlyArray<RecallFigure & { tenantId: string; source: QuerySource }>,
): Promise<void> {
  for (const f of figures) {
    await sql`insert into ${sql.raw(recallMonitorTable(config))} (tenant_id, source, recall, queries, ef_search, exact, measured_at)
      values (${f.tenantId}, ${f.source}, ${f.recall}, ${f.queries}, ${f.efSearch}, ${f.efSearch === null}, ${f.measuredAt})
      on conflict (tenant_id, source) do update set recall = excluded.recall, queries = excluded.queries,
        ef_search = excluded.ef_search, exact = excluded.exact, measured_at = excluded.measured_at`.execute(db)
  }
}

/**
 * Per tenant (tuned or measured): the setting in use, the source its tuning used, the last recall
 * on recent queries, on chunks and on recent filtered searches, and the gap between the first two.
 *
 * ### Examples
 * ```ts
 * const report = await recallReport(db, config, await tuning.all())
 * ```
 */
export async function recallReport(
  db: Database,
  config: ResolvedStoreConfig,
  tunings: readonly TenantTuning[],
): Promise<TenantRecallReport[]> {
  const { rows } = await sql<{
    tenant_id: string
    source: QuerySource
    recall: number
    queries: number
    ef_search: number | null
    measured_at: Date
  }>`select tenant_id, source, recall, queries, ef_search, measured_at from ${sql.raw(recallMonitorTable(config))}`.execute(db)
  const byTenant = new Map<string, TenantRecallReport>()
  const line = (tenantId: string) => {
    let r = byTenant.get(tenantId)
    if (!r) {
      r = {
        tenantId,
        path: 'index',
        efSearch: config.defaultEfSearch,
        querySource: null,
        recent: null,
        chunks: null,
        filtered: null,
        gap: null,
      }
      byTenant.set(tenantId, r)
    }
    return r
  }
  for (const t of tunings) {
    const r = line(t.tenantId)
    r.path = t.exact ? 'exact' : 'index'
    r.efSearch = efSearchInUse(t, config.defaultEfSearch)
    r.querySource = t.querySource
  }
  for (const row of rows) {
    const figure: RecallFigure = {
      recall: Number(row.recall),
      queries: Number(row.queries),
      efSearch: row.ef_search === null ? null : Number(row.ef_search),
      measuredAt: row.measured_at instanceof Date ? row.measured_at : new Date(String(row.measured_at)),
    }
    if (row.source === 'recent' || row.source === 'chunks' || row.source === 'filtered') line(String(row.tenant_id))[row.source] = figure
  }
  const out = [...byTenant.values()].sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0))
  for (const r of out) r.gap = r.recent && r.chunks ? r.chunks.recall - r.recent.recall : null
  return out
}
