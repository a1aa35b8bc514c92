import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { recallMonitorTable, type ResolvedStoreConfig, tuningTable } from '../config/index.js'

/** What `optimize({ targetRecall })` chose for one tenant, kept in the store's tuning table. */
export interface TenantTuning {
  tenantId: string
  /** The `hnsw.ef_search` its searches use unless a call passes `efSearch`; null: the store's default. */
  efSearch: number | null
  /** Its searches take the exact path: no index setting met the target within the latency bound. */
  exact: boolean
  /** The tenant's chunks when it was tuned (re-tuned when that changes by more than `retuneAbove`). */
  rowsAtTuning: number
  targetRecall: number
  /** Tie-aware recall@10 measured for the choice, on the tuning sample. */
  recall: number
  searchP50Ms: number | null
  exactP50Ms: number | null
  /** The index parameters, when tuning rebuilt the tenant's index. */
  indexM: number | null
  indexEfConstruction: number | null
  tunedAt: Date
  /** The queries it was tuned on: its recent real queries (the query sample), the ones `optimize({ queries })` gave, or its own chunks. */
  querySource: 'recent' | 'given' | 'chunks'
  /** How many queries the tuning measured. */
  tuningQueries: number | null
  /** What tuning chose for the tenant's filtered searches (null: not tuned for filters; the search derives its budget). */
  filter: FilterTuning | null
  /** The other ways tuning tried before settling (index rebuilds, quantized paths), and why each lost. */
  alternatives: TunedAlternative[] | null
  /**
   * The stated interval: with `confidence` (one-sided), the mean per-query recall@10 is at least
   * `lower`; `mean` is the sample's, over `queries` queries (before traffic, the worst query
   * family's). Absent: tuned before it was recorded (kept in the recall monitor's table, source `stated`).
   */
  recallBound?: { lower: number; mean: number; queries: number; confidence: number }
}

/** The filtered path of one tenant, as tuning chose it (`optimize()`): its walk's budget and when the exact branch is taken. */
export interface FilterTuning {
  /** Candidates a filtered walk takes in index order for k = 10 (scaled with k; at least 4k), re-sorted exactly; its `ef_search` is the tuned one scaled by the filter's selectivity, at least this. */
  candidates: number
  /** Filters matching at most this many of the tenant's rows are scored exactly; more walk the index. */
  exactBelow: number
  /**
   * The filters it was measured on: those the tenant's searches sent (the query sample), synthetic
   * ones over the store's declared metadata fields, or none (`model`: derived from the unfiltered
   * tuning's costs, nothing measured).
   */
  source: 'recent' | 'synthetic' | 'model'
  /** Distinct filters measured, and filtered searches. */
  filters: number
  queries: number
  /** Tie-aware recall@10 of the filtered path at the choice over those searches (null: nothing measured). */
  recall: number | null
  /** Filtered walk p50 and exact-branch cost per matching row, measured (null: modelled). */
  walkP50Ms: number | null
  exactMsPerRow: number | null
  /**
   * Filters (their `filterKey`) of the tenant's sampled searches whose walk missed the target at
   * the chosen budget: a search with one of them is scored exactly, whatever it matches (at most 50).
   */
  exactFilters?: string[]
  /**
   * The most a filter's selectivity multiplies the walk's `ef_search` by at the choice: 1 where the
   * unscaled walk met the target at less cost, else 4. Absent (tuned before it was measured): 4.
   */
  selectivityScale?: number
}

/** One alternative tuning tried for a tenant, and what came of it. */
export interface TunedAlternative {
  /** `rebuild`: the tenant's index rebuilt with `m` / `efConstruction`; `binary-rerank`, `halfvec-exact`: quantized paths. */
  kind: 'rebuild' | 'binary-rerank' | 'halfvec-exact'
  m?: number
  efConstruction?: number
  /** Seconds the rebuild (or the trial index's build) took (measured). */
  buildSeconds?: number
  /** `binary-rerank` measured: the re-rank factor (`rerank × k` binary candidates re-ranked exactly). */
  rerank?: number
  /** The cheapest setting on it that met the target, if any. */
  efSearch?: number | null
  recall?: number
  p50Ms?: number
  /**
   * `chosen`, or why it lost: `slower`, `missed the target`, `not available` (with `reason`);
   * `faster`: a binary trial met the target faster than the chosen setting, usable through a space
   * of that quantization (`reason` says so).
   */
  outcome: 'chosen' | 'slower' | 'missed the target' | 'not available' | 'not needed' | 'faster'
  reason?: string
}

/**
 * The `ef_search` a tenant's searches use: its tuned one, the store's default when untuned (or
 * tuned without one), null on the exact path.
 *
 * ### Examples
 * ```ts
 * efSearchInUse(await cache.get('acme'), config.defaultEfSearch) // 200
 * ```
 */
export function efSearchInUse(tuning: TenantTuning | undefined, defaultEfSearch: number): number | null {
  return tuning?.exact ? null : (tuning?.efSearch ?? defaultEfSearch)
}

/** How long a store trusts its cached tuning before reading the table again (another process may have tuned). */
const CACHE_MS = 60_000

/**
 * The store's per-tenant tuning, cached in memory: a search reads the cache, not the table. The
 * cache is read at `open()`, after `optimize()`, and again when older than a minute.
 */
export class TuningCache {
  #byTenant = new Map<string, TenantTuning>()
  #loadedAt = 0
  #loading: Promise<void> | undefined

  constructor(
    private readonly db: Database,
    private readonly config: ResolvedStoreConfig,
  ) {}

  /**
   * The tenant's tuning, if it has one. A stale cache is read again through `via` (a handle inside
   * an app's transaction reads through that transaction: on PGlite's one connection, another
   * reader would wait for the transaction that waits for it).
   */
  async get(tenantId: string, via: Database = this.db): Promise<TenantTuning | undefined> {
    if (performance.now() - this.#loadedAt > CACHE_MS) await this.reload(via)
    return this.#byTenant.get(tenantId)
  }

  /** Every tenant's tuning. */
  async all(): Promise<TenantTuning[]> {
    await this.reload()
    return [...this.#byTenant.values()]
  }

  /** Reads the table again (one reader at a time). */
  reload(via: Database = this.db): Promise<void> {
    this.#loading ??= this.#read(via).finally(() => (this.#loading = undefined))
    return this.#loading
  }

  async #read(via: Database): Promise<void> {
    const { rows } = await sql<Record<string, unknown>>`
      select tenant_id, ef_search, exact, rows_at_tuning, target_recall, recall, search_p50_ms, exact_p50_ms,
        index_m, index_ef_construction, tuned_at, query_source, tuning_queries, filter_tuning, alternatives
      from ${sql.raw(tuningTable(this.config))}`.execute(via)
    // The stated interval is a recall figure of its tuning (src/store/tuning/recall-monitor.ts).
    const { rows: stated } = await sql<{ tenant_id: string; source: string; recall: number; queries: number; measured_at: unknown }>`
      select tenant_id, source, recall, queries, measured_at from ${sql.raw(recallMonitorTable(this.config))}
      where source in ('stated', 'stated:lower')`.execute(via)
    const bounds = new Map<string, { lower?: number; mean?: number; queries: number; at: number }>()
    for (const r of stated) {
      const at = r.measured_at instanceof Date ? r.measured_at : new Date(String(r.measured_at))
      const b = bounds.get(String(r.tenant_id)) ?? { queries: Number(r.queries), at: at.getTime() }
      if (r.source === 'stated') b.mean = Number(r.recall)
      else b.lower = Number(r.recall)
      bounds.set(String(r.tenant_id), b)
    }
    this.#byTenant = new Map(
      rows.map((r) => {
        const tuning = fromRow(r)
        const b = bounds.get(tuning.tenantId)
        // Only the interval of this tuning (recorded with its tunedAt).
        if (b?.lower !== undefined && b.mean !== undefined && b.at === tuning.tunedAt.getTime())
          tuning.recallBound = { lower: b.lower, mean: b.mean, queries: b.queries, confidence: 0.95 }
        return [tuning.tenantId, tuning]
      }),
    )
    this.#loadedAt = performance.now()
  }

  /** Records a tenant's tuning (an upsert keyed by the tenant) and updates the cache. */
  async save(tuning: TenantTuning): Promise<void> {
    await sql`
      insert into ${sql.raw(tuningTable(this.config))} (tenant_id, ef_search, exact, rows_at_tuning, target_recall, recall,
        search_p50_ms, exact_p50_ms, index_m, index_ef_construction, tuned_at, query_source, tuning_queries, filter_tuning, alternatives)
      values (${tuning.tenantId}, ${tuning.efSearch}, ${tuning.exact}, ${tuning.rowsAtTuning}, ${tuning.targetRecall}, ${tuning.recall},
        ${tuning.searchP50Ms}, ${tuning.exactP50Ms}, ${tuning.indexM}, ${tuning.indexEfConstruction}, ${tuning.tunedAt},
        ${tuning.querySource}, ${tuning.tuningQueries}, ${jsonOrNull(tuning.filter)}::jsonb, ${jsonOrNull(tuning.alternatives)}::jsonb)
      on conflict (tenant_id) do update set ef_search = excluded.ef_search, exact = excluded.exact,
        rows_at_tuning = excluded.rows_at_tuning, target_recall = excluded.target_recall, recall = excluded.recall,
        search_p50_ms = excluded.search_p50_ms, exact_p50_ms = excluded.exact_p50_ms, index_m = excluded.index_m,
        index_ef_construction = excluded.index_ef_construction, tuned_at = excluded.tuned_at,
        query_source = excluded.query_source, tuning_queries = excluded.tuning_queries,
        filter_tuning = excluded.filter_tuning, alternatives = excluded.alternatives`.execute(this.db)
    this.#byTenant.set(tuning.tenantId, tuning)
  }
}

function fromRow(r: Record<string, unknown>): TenantTuning {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v))
  return {
    tenantId: String(r.tenant_id),
    efSearch: num(r.ef_search),
    exact: r.exact === true,
    rowsAtTuning: Number(r.rows_at_tuning),
    targetRecall: Number(r.target_recall),
    recall: Number(r.recall),
    searchP50Ms: num(r.search_p50_ms),
    exactP50Ms: num(r.exact_p50_ms),
    indexM: num(r.index_m),
    indexEfConstruction: num(r.index_ef_construction),
    tunedAt: r.tuned_at instanceof Date ? r.tuned_at : new Date(String(r.tuned_at)),
    querySource: r.query_source === 'recent' || r.query_source === 'given' ? r.query_source : 'chunks',
    tuningQueries: num(r.tuning_queries),
    filter: (parsedJson(r.filter_tuning) as FilterTuning | null) ?? null,
    alternatives: (parsedJson(r.alternatives) as TunedAlternative[] | null) ?? null,
  }
}

function jsonOrNull(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value)
}

/** A jsonb value as the driver returns it: parsed already (node-postgres, PGlite) or as text. */
function parsedJson(value: unknown): unknown {
  return typeof value === 'string' ? JSON.parse(value) : (value ?? null)
}
