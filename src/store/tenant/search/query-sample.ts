import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Database } from '../../../db/database.js'
import { int32Hash } from '../../../sql/advisory-lock.js'
import { filterFromStored, filterToStored } from '../../../filter/filter-json.js'
import type { MetadataFilter } from '../../../filter/filter-tree.js'
import { type QuerySampleOptions, querySampleTable, type ResolvedStoreConfig } from '../../config/index.js'
import { toVectorLiteral } from '../../ingest/index.js'

/** What one flush did. */
export interface QuerySampleFlush {
  written: number
  /** The flush failed (its buffer is dropped; searches are unaffected): the server's error. */
  error?: Error
}

/** Most floats the process holds between flushes, over all tenants (16 MB; 10,922 embeddings of 384 dimensions). */
const MAX_BUFFERED_FLOATS = 1 << 22

/** A sampled search's filter longer than this (as JSON) is not kept: its embedding is, without it. */
export const MAX_SAMPLED_FILTER_BYTES = 8192

/** Most bytes of filters the process holds between flushes (4 MB); past it, embeddings are kept without their filters. */
const MAX_BUFFERED_FILTER_BYTES = 1 << 22

/** One sampled search, as buffered. */
interface SampledSearch {
  vector: Float32Array
  at: Date
  /** Its filter as stored JSON (`filterToStored`), when it had one that was kept. */
  filter?: string
}

/**
 * A bounded sample of the query embeddings a store's searches receive, per tenant, kept off the
 * hot path: `record` only touches memory (a reservoir of at most `perTenant` per tenant per flush
 * window, 16 MB of floats in all — reaching that starts a flush); a timer (unref'd) and `flush()` write the buffer in
 * one transaction — the touched tenants locked in order, so two processes flushing at once take
 * turns per tenant — and trim each tenant to its newest `perTenant` embeddings younger than
 * `maxAgeDays`. A flush that fails is counted and dropped: it never fails a search. Embeddings,
 * and the metadata filter each was sent with (unless `filters: false`; at most
 * {@link MAX_SAMPLED_FILTER_BYTES} of JSON each, 4 MB buffered in all) — never the query text.
 *
 * ### Examples
 * ```ts
 * const sampler = new QuerySampler(db, config, { perTenant: 256, maxAgeDays: 30, flushIntervalMs: 5000, filters: true })
 * sampler.record('acme', [0.1, 0.2, 0.3], { owner: 'ana' })
 * await sampler.flush() // { written: 1 }
 * ```
 */
export class QuerySampler {
  readonly #db: Database
  readonly #config: ResolvedStoreConfig
  readonly #options: Required<QuerySampleOptions>
  readonly #maxBuffered: number
  readonly #token = randomBytes(6).toString('hex')
  #counter = 0
  #buffered = 0
  #filterBytes = 0
  #buffer = new Map<string, { seen: number; items: SampledSearch[] }>()
  #timer: ReturnType<typeof setInterval> | undefined
  #draining = false
  #flushing: Promise<QuerySampleFlush> = Promise.resolve({ written: 0 })
  /** Flushes that failed since the store opened, and the last error. */
  failures = 0
  lastError: Error | undefined

  constructor(db: Database, config: ResolvedStoreConfig, options: Required<QuerySampleOptions>) {
    this.#db = db
    this.#config = config
    this.#options = options
    this.#maxBuffered = Math.max(64, Math.floor(MAX_BUFFERED_FLOATS / config.dimensions))
  }

  /** Notes a search's (valid) query embedding and filter; memory only, a copy kept only when sampled. */
  record(tenantId: string, embedding: ArrayLike<number>, filter?: MetadataFilter): void {
    const perWindow = this.#options.perTenant
    let entry = this.#buffer.get(tenantId)
    if (!entry) {
      if (this.#full()) return
      entry = { seen: 0, items: [] }
      this.#buffer.set(tenantId, entry)
    }
    entry.seen++
    if (entry.items.length < perWindow) {
      if (this.#full()) return
      entry.items.push(this.#sampled(embedding, filter))
      this.#buffered++
    } else {
      // Reservoir: every query of the window equally likely to be kept.
      const j = Math.floor(Math.random() * entry.seen)
      if (j < perWindow) {
        this.#filterBytes -= entry.items[j]!.filter?.length ?? 0
        entry.items[j] = this.#sampled(embedding, filter)
      }
    }
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.flush(), this.#options.flushIntervalMs)
      this.#timer.unref?.()
    }
  }

  /** A copy of what is kept of one search: its embedding, and its filter when kept and within bounds. */
  #sampled(embedding: ArrayLike<number>, filter: MetadataFilter | undefined): SampledSearch {
    const item: SampledSearch = { vector: Float32Array.from(embedding), at: new Date() }
    if (!this.#options.filters || filter === undefined || filter === null || Object.keys(filter).length === 0) return item
    const text = JSON.stringify(filterToStored(filter))
    if (text.length > MAX_SAMPLED_FILTER_BYTES || this.#filterBytes + text.length > MAX_BUFFERED_FILTER_BYTES) return item
    this.#filterBytes += text.length
    return { ...item, filter: text }
  }

  /** Whether the buffer is at its bound; if so a flush is started (once). */
  #full(): boolean {
    if (this.#buffered < this.#maxBuffered) return false
    if (!this.#draining) {
      this.#draining = true
      void this.flush().finally(() => (this.#draining = false))
    }
    return true
  }

  /** Writes what is buffered (after any flush in flight); never rejects. */
  flush(): Promise<QuerySampleFlush> {
    this.#flushing = this.#flushing.then(() => this.#write())
    return this.#flushing
  }

  /** Stops the timer after a last flush. */
  async close(): Promise<QuerySampleFlush> {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = undefined
    return this.flush()
  }

  async #write(): Promise<QuerySampleFlush> {
    if (this.#buffered === 0) return { written: 0 }
    const buffer = this.#buffer
    this.#buffer = new Map()
    this.#buffered = 0
    this.#filterBytes = 0
    const tenants: string[] = []
    const ids: string[] = []
    const vectors: string[] = []
    const times: Date[] = []
    const filters: Array<string | null> = []
    for (const [tenantId, entry] of buffer) {
      for (const item of entry.items) {
        tenants.push(tenantId)
        ids.push(`${this.#token}-${(this.#counter++).toString(36).padStart(8, '0')}`)
        vectors.push(toVectorLiteral(item.vector))
        times.push(item.at)
        filters.push(item.filter ?? null)
      }
    }
    const touched = [...new Set(tenants)].sort()
    const table = sql.raw(querySampleTable(this.#config))
    try {
      await this.#db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${int32Hash(`pgscale.query-sample:${this.#config.qualified}`)}, hashtext(t))
          from (select t from unnest(${touched}::text[]) t order by t) s`.execute(trx)
        await sql`insert into ${table} (tenant_id, sample_id, embedding, sampled_at, filter)
          select t, i, v::${sql.raw(this.#config.vectors.column)}, a, f::jsonb
          from unnest(${tenants}::text[], ${ids}::text[], string_to_array(${vectors.join(';')}, ';'), ${times}::timestamptz[], ${filters}::text[]) as x(t, i, v, a, f)`.execute(
          trx,
        )
        await sql`delete from ${table} s using (
            select tenant_id, sample_id, sampled_at,
              row_number() over (partition by tenant_id order by sampled_at desc, sample_id desc) as rank
            from ${table} where tenant_id = any(${touched}::text[])) r
          where s.tenant_id = any(${touched}::text[]) and s.tenant_id = r.tenant_id and s.sample_id = r.sample_id
            and (r.rank > ${this.#options.perTenant} or r.sampled_at < now() - make_interval(days => ${this.#options.maxAgeDays}))`.execute(
          trx,
        )
      })
      return { written: ids.length }
    } catch (err) {
      this.failures++
      this.lastError = err instanceof Error ? err : new Error(String(err))
      return { written: 0, error: this.lastError }
    }
  }
}

/** What a tenant's sample holds. */
export interface TenantSample {
  /** Embeddings, newest first. */
  queries: number[][]
  /** The filter each was sent with (null: none, or not kept), in the same order. */
  filters: Array<MetadataFilter | null>
  /** All the tenant's sampled embeddings (≥ queries.length). */
  total: number
  /** Of those, sampled after `since` (when given). */
  newer: number
}

/**
 * Up to `n` of a tenant's sampled query embeddings (newest first), with how many it has and how
 * many are newer than `since`.
 *
 * ### Examples
 * ```ts
 * const { queries, total } = await tenantSample(db, config, 'acme', 200)
 * ```
 */
export async function tenantSample(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  n: number,
  since?: Date,
): Promise<TenantSample> {
  const table = sql.raw(querySampleTable(config))
  // n = 0: only the counts (whether a tuning still holds).
  const { rows } =
    n > 0
      ? await sql<{ v: string; f: unknown }>`select embedding::text as v, filter as f from ${table}
          where tenant_id = ${tenantId} order by sampled_at desc, sample_id desc limit ${n}`.execute(db)
      : { rows: [] }
  const { rows: counts } = await sql<{ total: number; newer: number }>`select count(*)::int as total,
      count(*) filter (where sampled_at > ${since ?? new Date(0)})::int as newer
    from ${table} where tenant_id = ${tenantId}`.execute(db)
  return {
    queries: rows.map((r) => JSON.parse(r.v) as number[]),
    filters: rows.map((r) => (r.f === null || r.f === undefined ? null : filterFromStored(r.f))),
    total: counts[0]!.total,
    newer: counts[0]!.newer,
  }
}

/**
 * Up to `n` of a tenant's newest sampled searches that had a filter: the embedding with the filter
 * it was sent with (the tree as sent, `Date` operands kept).
 *
 * ### Examples
 * ```ts
 * const searches = await tenantFilteredSample(db, config, 'acme', 200) // [{ embedding, filter }, …]
 * ```
 */
export async function tenantFilteredSample(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  n: number,
): Promise<Array<{ embedding: number[]; filter: MetadataFilter }>> {
  const { rows } = await sql<{ v: string; f: unknown }>`select embedding::text as v, filter as f from ${sql.raw(querySampleTable(config))}
    where tenant_id = ${tenantId} and filter is not null order by sampled_at desc, sample_id desc limit ${n}`.execute(db)
  return rows.map((r) => ({ embedding: JSON.parse(r.v) as number[], filter: filterFromStored(r.f) }))
}
