import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { recallMonitorTable, type ResolvedStoreConfig } from '../config/index.js'
import { efSearchInUse, type TenantTuning } from '../schema/index.js'
import { studentT } from './recall-bound.js'

/**
 * Where a recall figure's queries came from: the tenant's recent real queries (their embeddings),
 * the query model around its chunks, or its recent filtered searches (each with the filter it was
 * sent with); `stated` is the interval its tuning stated (the worst query family's before traffic).
 */
export type QuerySource = 'recent' | 'chunks' | 'filtered' | 'stated'

/** One recorded recall figure. */
export interface RecallFigure {
  /** Mean per-query tie-aware recall@10. */
  recall: number
  /** Its one-sided 95% lower bound over queries, when recorded with it. */
  lower?: number
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
  /** The target its tuning aimed at (null: never tuned). */
  targetRecall: number | null
  /** What its last tuning stated: the mean and (`lower`) the one-sided bound, over `queries` queries. */
  stated: RecallFigure | null
  /** Tie-aware recall@10 on recent real queries, as last measured (tuning or `measureRecall({ source: 'recent' })`): the delivered recall. */
  recent: RecallFigure | null
  /** The same on the query model's queries around its chunks. */
  chunks: RecallFigure | null
  /** Tie-aware recall@10 of its recent filtered searches, each with its own filter (tuning or `measureRecall({ source: 'recent' })`). */
  filtered: RecallFigure | null
  /** chunks − recent, when both were measured: how much the tuning queries flatter. */
  gap: number | null
  /**
   * Delivered recall below what was stated: the recent figure, measured since the tuning, plus its
   * own one-sided margin is below the target (`deliveredBelowStated`). `optimize()` re-tunes
   * such a tenant from its query sample; `pgscale recall` and `pgscale doctor` fail it.
   */
  belowStated: boolean
}

/** Suffix of the monitor row that keeps a figure's lower bound (the table has one recall column). */
const LOWER = ':lower'

/**
 * Records recall figures (one per tenant and source, the latest kept); a figure's `lower` bound
 * beside it, in a row of its own (`<source>:lower`; tuning and `measureRecall` give it for the
 * `recent` and `stated` figures, what the monitor compares).
 *
 * ### Examples
 * ```ts
 * await recordRecall(db, config, [{ tenantId: 'acme', source: 'recent', recall: 0.985, lower: 0.979, queries: 200, efSearch: 100, measuredAt: new Date() }])
 * ```
 */
export async function recordRecall(
  db: Database,
  config: ResolvedStoreConfig,
  figures: ReadonlyArray<RecallFigure & { tenantId: string; source: QuerySource }>,
): Promise<void> {
  const rows = figures.flatMap((f) => [
    { ...f, key: f.source as string },
    // The bound beside it; a delivered or stated figure without one must not keep an older one.
    ...(f.lower !== undefined || f.source === 'recent' || f.source === 'stated'
      ? [{ ...f, key: f.source + LOWER, recall: f.lower ?? Number.NaN }]
      : []),
  ])
  for (const f of rows) {
    if (Number.isNaN(f.recall)) {
      await sql`delete from ${sql.raw(recallMonitorTable(config))} where tenant_id = ${f.tenantId} and source = ${f.key}`.execute(db)
      continue
    }
    await sql`insert into ${sql.raw(recallMonitorTable(config))} (tenant_id, source, recall, queries, ef_search, exact, measured_at)
      values (${f.tenantId}, ${f.key}, ${f.recall}, ${f.queries}, ${f.efSearch}, ${f.efSearch === null}, ${f.measuredAt})
      on conflict (tenant_id, source) do update set recall = excluded.recall, queries = excluded.queries,
        ef_search = excluded.ef_search, exact = excluded.exact, measured_at = excluded.measured_at`.execute(db)
  }
}

/**
 * The one-sided 95% margin of a delivered figure: `recall − lower` when its bound was recorded;
 * else that of a t-bound with a per-query standard deviation of 0.1 (a conservative guess: 0.03-0.08
 * measured on tuned tenants here).
 *
 * ### Examples
 * ```ts
 * deliveredMargin({ recall: 0.97, lower: 0.962, queries: 200, efSearch: 100, measuredAt }) // 0.008
 * ```
 */
export function deliveredMargin(figure: RecallFigure): number {
  if (figure.lower !== undefined) return Math.max(0, figure.recall - figure.lower)
  const n = Math.max(2, figure.queries)
  return (studentT(0.95, n - 1) * 0.1) / Math.sqrt(n)
}

/**
 * Whether a tenant's delivered recall (its recent real queries, measured at or after its last
 * tuning) is credibly below what tuning stated: delivered mean + its own margin < the target.
 *
 * ### Examples
 * ```ts
 * deliveredBelowStated({ recent: { recall: 0.93, lower: 0.92, queries: 200, … }, stated: { … }, targetRecall: 0.98 }) // true
 * ```
 */
export function deliveredBelowStated(line: Pick<TenantRecallReport, 'recent' | 'stated' | 'targetRecall'>): boolean {
  const { recent, stated, targetRecall } = line
  if (!recent || targetRecall === null) return false
  if (stated && recent.measuredAt.getTime() < stated.measuredAt.getTime()) return false
  return recent.recall + deliveredMargin(recent) < targetRecall
}

/**
 * Per tenant (tuned or measured): the setting in use, the source its tuning used, what tuning
 * stated, the last recall on recent queries (delivered), on the query model's and on recent
 * filtered searches, the gap between the first two, and whether delivered is below stated.
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
    source: string
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
        targetRecall: null,
        stated: null,
        recent: null,
        chunks: null,
        filtered: null,
        gap: null,
        belowStated: false,
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
    r.targetRecall = t.targetRecall
  }
  const sources = ['recent', 'chunks', 'filtered', 'stated'] as const
  const lowers = new Map<string, number>()
  for (const row of rows) {
    const source = String(row.source)
    if (source.endsWith(LOWER)) {
      lowers.set(`${row.tenant_id}\u0000${source.slice(0, -LOWER.length)}`, Number(row.recall))
      continue
    }
    if (!(sources as readonly string[]).includes(source)) continue
    line(String(row.tenant_id))[source as (typeof sources)[number]] = {
      recall: Number(row.recall),
      queries: Number(row.queries),
      efSearch: row.ef_search === null ? null : Number(row.ef_search),
      measuredAt: row.measured_at instanceof Date ? row.measured_at : new Date(String(row.measured_at)),
    }
  }
  const out = [...byTenant.values()].sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0))
  for (const r of out) {
    for (const source of sources) {
      const lower = lowers.get(`${r.tenantId}\u0000${source}`)
      if (r[source] && lower !== undefined) r[source] = { ...r[source], lower }
    }
    r.gap = r.recent && r.chunks ? r.chunks.recall - r.recent.recall : null
    r.belowStated = deliveredBelowStated(r)
  }
  return out
}
