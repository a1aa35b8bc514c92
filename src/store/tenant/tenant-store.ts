import type { QuerySampler } from './search/query-sample.js'
import type { ReadConsistency, WriteJournal } from '../../replicas/index.js'
import type { ReplicaReads } from './replica-reads.js'
import { CompiledQuery, type QueryResult } from 'kysely'
import type { Database } from '../../db/database.js'
import type { LocalSettings } from '../../db/local-settings.js'
import { InvalidArgumentError } from '../../errors.js'
import {
  assertEmbedding,
  assertId,
  assertK,
  assertMetadata,
  type Embedding,
  type IngestOptions,
  type IngestResult,
  ingestRows,
  type TenantIngestRow,
  toVectorLiteral,
} from '../ingest/index.js'
import { matchesEverything, parseFilter, type MetadataFilter } from '../../filter/filter-tree.js'
import { exactFiltered, filteredSearch, type FilterStrategy } from './search/filtered-search.js'
import { filteredBudget, MAX_SELECTIVITY_SCALE } from './search/filtered-budget.js'
import { webSearchText } from './search/web-search-text.js'
import { countChunks, deleteMatching, findChunks, type FindOptions, type FindResult } from './metadata-queries.js'
import { compileForScope, type TenantScope } from './tenant-scope.js'
import type { FilteredStatements } from './search/filtered-sql.js'
import type { DeclaredFields, IndexedTenants, TuningCache } from '../schema/index.js'
import type { FilterVerdicts } from './search/filter-verdicts.js'
import { assertEfSearch, type ResolvedStoreConfig, type StoreStatements } from '../config/index.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { arrayText, inlineParameters } from '../../sql/literal.js'
import { chunkStatements, type ChunkScope } from './writes/chunk-statements.js'
import { documentLocks } from './writes/document-locks.js'
import { assertFlag, getChunks, type GetChunksOptions, type StoredChunk } from './get-chunks.js'
import { marginalRelevanceSearch, type MarginalRelevanceOptions } from './search/marginal-relevance.js'
import { updateMetadata, type MetadataUpdate, type UpdateTarget } from './writes/update-metadata.js'
import { upsertChunks, type UpsertChunkInput, type UpsertChunksOptions } from './writes/upsert-chunks.js'
import { bulkUpsert } from './writes/bulk-upsert.js'

/** One chunk of a document, as `replaceDocument` takes it. */
export interface ChunkInput {
  /** The text (indexed for full-text search). */
  content: string
  /** Its embedding: `dimensions` finite numbers. */
  embedding: Embedding
  /** Any JSON object; filters (`search(..., { filter })`, `find`, `count`, `deleteWhere`) match it. */
  metadata?: Record<string, unknown>
}

/** A search hit, nearest first. */
export interface SearchResult {
  documentId: string
  chunkIndex: number
  content: string
  metadata: Record<string, unknown>
  /** Exact distance under the store's distance function (cosine: 0 = same direction). */
  distance: number
  /** The chunk's stored vector, with `includeEmbedding: true` (`search`, `exactSearch`). */
  embedding?: number[]
}

/** A hybrid search hit: a {@link SearchResult} with its reciprocal-rank-fusion score. */
export interface HybridSearchResult extends SearchResult {
  /** Sum of 1/(rrfK + rank) over the vector and full-text lists it appears in. */
  score: number
}

/** How the HNSW index walks when a filter rejects candidates (pgvector 0.8 iterative scans). */
export type IterativeScan = 'relaxed' | 'strict' | 'off'

/** Options of {@link TenantStore.search}. */
export interface SearchOptions extends ReadConsistency {
  /** How many results, 1..1000. Default 10. */
  k?: number
  /**
   * `hnsw.ef_search` (raised to `k` if lower). Default: the tenant's tuned value
   * (`optimize({ targetRecall })`), else the store's (100). Given, it always wins.
   */
  efSearch?: number
  /** Iterative index scan: `relaxed` (default; results re-sorted by exact distance), `strict`, `off`. */
  iterativeScan?: IterativeScan
  /**
   * Only chunks whose metadata matches this filter: MongoDB's query language (`{ kind: 'invoice',
   * year: { $gte: 2024 } }`; docs/store.md "Filters"). The search keeps its recall under it: a filter
   * that few rows pass is answered exactly, a broad one walks the index with iterative scan.
   */
  filter?: MetadataFilter
  /**
   * How a filtered search runs: `auto` (default) chooses per query from how many rows pass (at most
   * `exactBelow` matching rows are scored exactly, more walk the index); `exact` always scores every
   * matching row; `index` always walks the index. For measuring; `auto` is what to use.
   */
  filterStrategy?: FilterStrategy
  /**
   * `auto`'s threshold: matching rows it scores exactly. Default: what `optimize()` chose for the
   * tenant's filtered path, else derived from its tuning (the rows whose exact scoring costs what
   * the walk does), else 1,000 (`DEFAULT_EXACT_BELOW`); see `filteredBudget`.
   */
  exactBelow?: number
  /**
   * Candidates a filtered walk takes in index order before the exact re-sort. Default: the tenant's
   * tuned budget (`optimize()` measures 40, 80 and 160 for k = 10; scaled with k), else max(4k, 40).
   * The walk's `ef_search` is the tenant's tuned one (or the call's) scaled by the filter's
   * estimated selectivity, at least the candidates, at most 1,000 (`walkEfSearch`).
   */
  filterCandidates?: number
  /**
   * The most a filter's estimated selectivity multiplies the walk's `ef_search` by (1-4; 1: the
   * walk runs at the tenant's `ef_search`, and no estimate is asked for). Default: what
   * `optimize()` measured cheapest at the target for the tenant, else 4 (`MAX_SELECTIVITY_SCALE`).
   */
  selectivityScale?: number
  /**
   * When the index returns fewer than `k` rows, answer with an exact scan of the tenant, so
   * a search never returns silently fewer than `min(k, chunks of the tenant)`. Default true.
   */
  exactFallback?: boolean
  /**
   * Return each hit's stored vector as `embedding` (read in the same statement as the hit, by
   * primary key): for MMR, or a framework that hands vectors back. Default false.
   */
  includeEmbedding?: boolean
}

/** Options of {@link TenantStore.maxMarginalRelevanceSearch}: `k`, `fetchK`, `lambda`, and the search's own. */
export interface MaxMarginalRelevanceOptions extends Omit<SearchOptions, 'k'>, MarginalRelevanceOptions {}

/** Options of {@link TenantStore.hybridSearch}. */
export interface HybridSearchOptions extends ReadConsistency {
  embedding: Embedding
  /** Query text, parsed with `websearch_to_tsquery` ("quoted phrases", -exclusions, or). */
  text: string
  /** How many results, 1..1000. Default 10. */
  k?: number
  /** How many candidates each list contributes. Default max(4k, 40). */
  candidates?: number
  /** The RRF constant. Default 60. */
  rrfK?: number
  /** `hnsw.ef_search` for the vector list. Default: the tenant's tuned value, else the store's. */
  efSearch?: number
  /** Only chunks whose metadata matches, in both lists (docs/store.md "Filters"). */
  filter?: MetadataFilter
}

type Executor = Pick<Database, 'executeQuery'>

const ITERATIVE: Record<IterativeScan, string> = { relaxed: 'relaxed_order', strict: 'strict_order', off: 'off' }

/** One frozen settings object per `ef_search` and scan mode (at most 3,000): `settingsMessage` keeps its text. */
const SEARCH_SETTINGS = new Map<string, LocalSettings>()

function searchSettings(ef: number, scan: string): LocalSettings {
  const key = `${ef}:${scan}`
  let settings = SEARCH_SETTINGS.get(key)
  if (!settings) SEARCH_SETTINGS.set(key, (settings = Object.freeze({ 'hnsw.ef_search': ef, 'hnsw.iterative_scan': scan })))
  return settings
}

/**
 * A store bound to one tenant: every statement it sends filters `tenant_id = $1`, and there is
 * no other read path. Get one from {@link PgVectorStore.forTenant}.
 *
 * ### Examples
 * ```ts
 * const acme = store.forTenant('acme')
 * await acme.replaceDocument('doc-1', [{ content: 'Invoice 42', embedding }])
 * const hits = await acme.search(queryEmbedding, { k: 10 })
 * ```
 */
export class TenantStore {
  readonly #db: Database
  readonly #config: ResolvedStoreConfig
  readonly #sql: StoreStatements
  readonly #tuning: TuningCache
  readonly #indexed: IndexedTenants
  readonly #scope: TenantScope
  readonly #chunks: ChunkScope
  readonly #sampler: QuerySampler | undefined
  readonly #reads: ReplicaReads | undefined
  readonly #journal: WriteJournal | undefined
  readonly #parts: readonly [StoreStatements, TuningCache, IndexedTenants, FilteredStatements, DeclaredFields, FilterVerdicts]

  readonly #tenantId: string

  /** The tenant every statement of this handle is scoped to (fixed: a getter, not a field anyone can reassign). */
  get tenantId(): string {
    return this.#tenantId
  }

  /** @internal use {@link PgVectorStore.forTenant}. */
  constructor(
    db: Database,
    config: ResolvedStoreConfig,
    statements: StoreStatements,
    tenantId: string,
    tuning: TuningCache,
    indexed: IndexedTenants,
    filtered: FilteredStatements,
    fields: DeclaredFields,
    verdicts: FilterVerdicts,
    sampler?: QuerySampler,
    reads?: ReplicaReads,
    journal?: WriteJournal,
  ) {
    this.#db = db
    this.#config = config
    this.#sql = statements
    this.#tuning = tuning
    this.#indexed = indexed
    this.#tenantId = assertId(tenantId, 'tenant id')
    this.#scope = { db, config, tenantId, statements: filtered, fields, verdicts }
    this.#chunks = { ...this.#scope, locks: statements, chunks: chunkStatements(config, statements) }
    this.#sampler = sampler
    this.#reads = reads
    this.#journal = journal
    this.#parts = [statements, tuning, indexed, filtered, fields, verdicts]
  }

  /**
   * Runs a read here, or — with replicas — on a replica that has replayed this tenant's writes
   * (and `options.consistencyToken`), through a handle of this tenant bound to it; never on a replica inside
   * the app's transaction.
   */
  #routed<T>(options: ReadConsistency | undefined, run: (tenant: TenantStore) => Promise<T>): Promise<T> {
    const reads = this.#reads
    if (!reads) return run(this)
    return reads.set.read(this.tenantId, options ?? {}, (db) =>
      run(
        db === reads.set.primary
          ? this
          : new TenantStore(
              reads.bind(db),
              this.#config,
              this.#parts[0],
              this.tenantId,
              ...(this.#parts.slice(1) as [TuningCache, IndexedTenants, FilteredStatements, DeclaredFields, FilterVerdicts]),
            ),
      ),
    )
  }

  /**
   * Every write of this handle ends here once it committed (or, in the app's transaction, once it
   * is part of it): the store's write journal records it (replicas note the tenant's position).
   */
  async #wrote<T>(result: T): Promise<T> {
    await this.#journal?.committed([this.tenantId], this.#db)
    return result
  }

  /**
   * Replaces all chunks of a document with `chunks` (chunk_index 0..n-1) atomically: either all of
   * it is written or nothing changes. An empty array deletes the document. Writers of the same
   * document take turns (a transaction-level advisory lock on tenant and document), so concurrent
   * replaces leave exactly one whole version, never a mix.
   *
   * ### Examples
   * ```ts
   * await acme.replaceDocument('contract-7', [{ content, embedding, metadata: { kind: 'contract' } }])
   * ```
   */
  async replaceDocument(documentId: string, chunks: readonly ChunkInput[]): Promise<{ written: number; removed: number }> {
    assertId(documentId, 'document id')
    if (!Array.isArray(chunks)) throw new InvalidArgumentError('replaceDocument: chunks must be an array')
    const n = chunks.length
    const indexes = new Array<number>(n)
    const contents = new Array<string>(n)
    const metadata = new Array<string>(n)
    const vectors = new Array<string>(n)
    for (let i = 0; i < n; i++) {
      const chunk = chunks[i]!
      const where = `replaceDocument(${JSON.stringify(documentId)}) chunk ${i}`
      if (chunk === null || typeof chunk !== 'object' || typeof chunk.content !== 'string') {
        throw new InvalidArgumentError(`${where}: content must be a string`)
      }
      if (chunk.content.includes('\u0000'))
        throw new InvalidArgumentError(`${where}: content cannot contain NUL (\\u0000), which PostgreSQL text cannot hold`)
      indexes[i] = i
      contents[i] = chunk.content
      metadata[i] = JSON.stringify(assertMetadata(chunk.metadata, where))
      vectors[i] = toVectorLiteral(
        assertEmbedding(chunk.embedding, this.#config.dimensions, this.#config.distance, where, this.#config.vectorType),
      )
    }
    const lock = this.#documentLock(documentId)
    // One round trip where the handle allows: the document lock and the upsert as one message (one
    // implicit transaction), the arrays inlined as array constants; else bound, in a transaction.
    // The inlined text is built only where it can be sent.
    const sent = this.#db.sendsOneMessage
      ? await this.#db.sendAsOneMessage<{ written: number; removed: number }>([
          lock,
          inlineParameters(this.#sql.replaceDocument, [
            this.tenantId,
            documentId,
            arrayText(indexes),
            arrayText(contents),
            arrayText(metadata),
            arrayText(vectors),
          ]),
        ])
      : undefined
    const [row] =
      sent?.rows ??
      (await this.#db.withTransactionConnection(
        (conn) =>
          this.#run<{ written: number; removed: number }>(
            this.#sql.replaceDocument,
            [documentId, indexes, contents, metadata, vectors],
            conn,
          ),
        { prelude: [lock] },
      ))
    return this.#wrote({ written: row?.written ?? 0, removed: row?.removed ?? 0 })
  }

  /**
   * Deletes a document's chunks; resolves to how many were deleted (0 if it did not exist). Takes
   * the document's lock, like `replaceDocument`.
   *
   * ### Examples
   * ```ts
   * const deleted = await acme.deleteDocument('contract-7')
   * ```
   */
  async deleteDocument(documentId: string): Promise<number> {
    assertId(documentId, 'document id')
    const result = await this.#db.withTransactionConnection((conn) => this.#execute(this.#sql.deleteDocument, [documentId], conn), {
      prelude: [this.#documentLock(documentId)],
    })
    return this.#wrote(Number(result.numAffectedRows ?? 0n))
  }

  /**
   * The `k` nearest chunks of this tenant. Runs in one transaction that sets `hnsw.ef_search` and
   * `hnsw.iterative_scan` with `SET LOCAL`; the planner picks the tenant's own HNSW index, the
   * shared one, or (small tenants) the primary key and an exact sort. Returns `min(k, chunks)`
   * rows unless `exactFallback: false`. Without `efSearch`, a tenant tuned by
   * `optimize({ targetRecall })` searches at its tuned `ef_search`, or exactly when no index setting
   * met the target within the latency bound; an explicit `efSearch` always wins.
   *
   * ### Examples
   * ```ts
   * const hits = await acme.search(embedding, { k: 10, filter: { kind: 'invoice' } })
   * ```
   */
  async search(embedding: Embedding, options: SearchOptions = {}): Promise<SearchResult[]> {
    const rows = await this.#routed(options, (t) => t.#search(embedding, options))
    this.#sampler?.record(this.tenantId, embedding, options.filter)
    return rows
  }

  async #search(embedding: Embedding, options: SearchOptions): Promise<SearchResult[]> {
    const k = assertK(options.k ?? 10)
    const vector = toVectorLiteral(
      assertEmbedding(embedding, this.#config.dimensions, this.#config.distance, 'search', this.#config.vectorType),
    )
    const filter = parseFilter(options.filter, 'search filter')
    const includeEmbedding = assertFlag(options, 'includeEmbedding', 'search')
    const tuned = options.efSearch === undefined ? await this.#tuning.get(this.tenantId, this.#db) : undefined
    const settings = this.#searchSettings(k, options.efSearch ?? tuned?.efSearch ?? undefined, options.iterativeScan ?? 'relaxed')
    const exactOnly = tuned?.exact === true || !(await this.#indexSearchPays())
    if (!matchesEverything(filter)) {
      const strategy = options.filterStrategy ?? 'auto'
      if (!['auto', 'exact', 'index'].includes(strategy)) {
        throw new InvalidArgumentError(`filterStrategy must be auto, exact or index, got ${JSON.stringify(strategy)}`)
      }
      const budget = filteredBudget(tuned, k, options.efSearch !== undefined)
      return filteredSearch(this.#scope, vector, filter, {
        k,
        exactOnly,
        strategy,
        exactBelow: assertIntegerIn(options.exactBelow ?? budget.exactBelow, 0, 1_000_000, 'exactBelow'),
        settings,
        candidates: assertIntegerIn(options.filterCandidates ?? budget.candidates, k, 10_000, 'filterCandidates'),
        exactFallback: options.exactFallback !== false,
        includeEmbedding,
        ...(tuned && !tuned.exact ? { tenantRows: tuned.rowsAtTuning } : {}),
        ...(budget.exactFilters ? { exactFilters: budget.exactFilters } : {}),
        selectivityScale: assertIntegerIn(
          options.selectivityScale ?? budget.selectivityScale,
          1,
          MAX_SELECTIVITY_SCALE,
          'selectivityScale',
        ),
      })
    }
    const exact = includeEmbedding ? this.#chunks.chunks.exactSearchWithEmbeddings : this.#sql.exactSearch
    if (exactOnly) return this.#run<SearchResult>(exact, [vector, k])
    // One round trip: the settings and the query in one message (Database.queryWithSettings).
    const nearest = includeEmbedding ? this.#chunks.chunks.searchWithEmbeddings : this.#sql.search
    const rows = await this.#db.queryWithSettings<SearchResult>(nearest, [this.tenantId, vector, k], settings)
    if (rows.length >= k || options.exactFallback === false) return rows
    return this.#run<SearchResult>(exact, [vector, k])
  }

  /**
   * The exact `k` nearest chunks of this tenant: distances computed for every chunk of the tenant
   * (read through the primary key) and sorted; never an ANN index. Ground truth for recall.
   * `includeEmbedding` returns each hit's vector too.
   *
   * ### Examples
   * ```ts
   * const truth = await acme.exactSearch(embedding, { k: 10 })
   * ```
   */
  async exactSearch(
    embedding: Embedding,
    options: Pick<SearchOptions, 'k' | 'filter' | 'includeEmbedding' | 'consistencyToken' | 'consistency'> = {},
  ): Promise<SearchResult[]> {
    const k = assertK(options.k ?? 10)
    const vector = toVectorLiteral(
      assertEmbedding(embedding, this.#config.dimensions, this.#config.distance, 'exactSearch', this.#config.vectorType),
    )
    const filter = parseFilter(options.filter, 'exactSearch filter')
    const includeEmbedding = assertFlag(options, 'includeEmbedding', 'exactSearch')
    return this.#routed(options, (t) => {
      if (!matchesEverything(filter)) return exactFiltered(t.#scope, vector, filter, k, includeEmbedding)
      return t.#run<SearchResult>(includeEmbedding ? t.#chunks.chunks.exactSearchWithEmbeddings : t.#sql.exactSearch, [vector, k])
    })
  }

  /**
   * Search diversified by maximal marginal relevance: `fetchK` candidates (default max(20, k))
   * through {@link search} — the tenant's scope, `filter` and tuning apply — with their vectors,
   * then `k` of them chosen one at a time by `lambda · relevance − (1 − lambda) · similarity to the
   * ones chosen`, cosine on the vectors (`lambda` 1: pure relevance, 0: most diverse; default 0.5).
   * The hits come in the order chosen, without vectors unless `includeEmbedding`.
   *
   * ### Examples
   * ```ts
   * const hits = await acme.maxMarginalRelevanceSearch(embedding, { k: 5, fetchK: 30, lambda: 0.5, filter: { kind: 'faq' } })
   * ```
   */
  async maxMarginalRelevanceSearch(query: Embedding, options: MaxMarginalRelevanceOptions): Promise<SearchResult[]> {
    const { fetchK: _fetchK, lambda: _lambda, ...search } = options ?? ({} as MaxMarginalRelevanceOptions)
    const keep = assertFlag(search, 'includeEmbedding', 'maxMarginalRelevanceSearch')
    return marginalRelevanceSearch((k) => this.search(query, { ...search, k, includeEmbedding: true }), query, options, keep)
  }

  /**
   * Hybrid search: the vector top candidates and the full-text top candidates of this tenant,
   * fused by reciprocal rank (RRF) in one statement. A chunk that matches the words and is near
   * the vector ranks first.
   *
   * ### Examples
   * ```ts
   * const hits = await acme.hybridSearch({ embedding, text: 'termination clause', k: 10 })
   * ```
   */
  async hybridSearch(options: HybridSearchOptions): Promise<HybridSearchResult[]> {
    const rows = await this.#routed(options, (t) => t.#hybridSearch(options))
    this.#sampler?.record(this.tenantId, options.embedding, options.filter)
    return rows
  }

  async #hybridSearch(options: HybridSearchOptions): Promise<HybridSearchResult[]> {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('hybridSearch needs { embedding, text }')
    if (!this.#config.fullText) {
      throw new InvalidArgumentError(`hybridSearch needs full text: ${this.#config.qualified} was created with fullText: false`)
    }
    const k = assertK(options.k ?? 10)
    if (typeof options.text !== 'string') throw new InvalidArgumentError('hybridSearch: text must be a string')
    const vector = toVectorLiteral(
      assertEmbedding(options.embedding, this.#config.dimensions, this.#config.distance, 'hybridSearch', this.#config.vectorType),
    )
    const candidates = options.candidates ?? Math.max(4 * k, 40)
    assertIntegerIn(candidates, k, 10_000, 'hybridSearch: candidates')
    const filter = parseFilter(options.filter, 'hybridSearch filter')
    const rrfK = options.rrfK ?? 60
    if (typeof rrfK !== 'number' || !Number.isFinite(rrfK) || rrfK < 0) {
      throw new InvalidArgumentError(`hybridSearch: rrfK must be a non-negative number, got ${String(rrfK)}`)
    }
    const tuned = options.efSearch === undefined ? await this.#tuning.get(this.tenantId, this.#db) : undefined
    const settings = this.#searchSettings(candidates, options.efSearch ?? tuned?.efSearch ?? undefined, 'relaxed')
    if (options.text.includes('\u0000')) throw new InvalidArgumentError('hybridSearch: text cannot contain NUL (\\u0000)')
    const byIndex = await this.#indexSearchPays()
    const params = [this.tenantId, vector, webSearchText(options.text), k, candidates, rrfK]
    if (matchesEverything(filter)) {
      return this.#db.queryWithSettings<HybridSearchResult>(
        byIndex ? this.#sql.hybridSearch : this.#sql.hybridSearchExact,
        params,
        settings,
      )
    }
    const f = await compileForScope(this.#scope, filter, 7)
    return this.#db.queryWithSettings<HybridSearchResult>(
      this.#scope.statements.hybrid(f.sql, !byIndex),
      [...params, ...f.params],
      settings,
    )
  }

  /**
   * A page of this tenant's chunks (no embeddings) matching a filter, in document and chunk order;
   * `next` continues it. Metadata queries: listing a document's chunks, an export, a check.
   *
   * ### Examples
   * ```ts
   * const { rows, next } = await acme.find({ filter: { kind: 'contract', year: { $gte: 2024 } }, limit: 100 })
   * ```
   */
  find(options: FindOptions & ReadConsistency = {}): Promise<FindResult> {
    return this.#routed(options, (t) => findChunks(t.#scope, options))
  }

  /**
   * How many of this tenant's chunks match a filter (all of them without one).
   *
   * ### Examples
   * ```ts
   * const drafts = await acme.count({ status: 'draft' })
   * ```
   */
  count(filter?: MetadataFilter, options?: ReadConsistency): Promise<number> {
    return this.#routed(options, (t) => countChunks(t.#scope, filter))
  }

  /**
   * Deletes this tenant's chunks that match a filter (an empty filter is refused); resolves to how
   * many. Concurrent `replaceDocument`s of the same documents take turns with it, so no document is
   * left half-replaced and half-deleted.
   *
   * ### Examples
   * ```ts
   * const removed = await acme.deleteWhere({ source: 'import-2024-03', archived: true })
   * ```
   */
  async deleteWhere(filter: MetadataFilter): Promise<number> {
    return this.#wrote(await deleteMatching(this.#scope, this.#sql, filter))
  }

  /**
   * Upserts documents of one chunk each, in one transaction: every row's `id` becomes a document
   * whose only chunk (chunk_index 0) is that row — its other chunks deleted — after the chunks
   * matching `deleteWhere` (if given; never `{}`) are deleted; all of it or nothing. An id given
   * twice: its last row wins (at the place of its first). Every row is checked first (a bad one is a
   * typed error, nothing is sent). Writers of the same documents take turns, the locks taken in key
   * order, so two batches of overlapping ids never deadlock and leave each document one whole
   * version; a batch of more than 64 documents, or with `deleteWhere`, takes the tenant's write lock
   * exclusively instead. Resolves to the ids written, once each, in order.
   *
   * ### Examples
   * ```ts
   * const ids = await acme.upsertChunks([{ id: 'faq-1', content, embedding, metadata: { source: 'faq' } }])
   * await acme.upsertChunks(rows, { deleteWhere: { source: 'faq' } }) // the source's rows replaced atomically
   * ```
   */
  async upsertChunks(rows: readonly UpsertChunkInput[], options: UpsertChunksOptions = {}): Promise<string[]> {
    return this.#wrote(await upsertChunks(this.#chunks, rows, options))
  }

  /**
   * {@link upsertChunks} for large batches: the same rows, the same result (each `id` a document of
   * that one chunk, its other chunks deleted; an id given twice, its last row), the same locks and
   * `deleteWhere`, all of it or nothing — but the batch's documents are deleted and its rows loaded
   * with binary COPY in the same transaction (like {@link bulkIngest}; batched INSERTs where the
   * handle has no COPY or row security refuses it), not as statements of 1,000 rows of vector text.
   *
   * ### Examples
   * ```ts
   * const ids = await acme.bulkUpsert(nodes.map((n) => ({ id: n.id, content: n.text, embedding: n.embedding })))
   * ```
   */
  async bulkUpsert(rows: readonly UpsertChunkInput[], options: UpsertChunksOptions = {}): Promise<string[]> {
    return this.#wrote(await bulkUpsert(this.#chunks, this.#sql.copyRows, rows, options))
  }

  /**
   * The chunks of these documents (ids absent here, or another tenant's, are simply missing), in
   * the order of the ids, each document's by chunk index; `includeEmbedding` adds their vectors.
   * At most 10,000 ids.
   *
   * ### Examples
   * ```ts
   * const [faq] = await acme.getChunks(['faq-1'], { includeEmbedding: true })
   * ```
   */
  getChunks(ids: readonly string[], options: GetChunksOptions & ReadConsistency = {}): Promise<StoredChunk[]> {
    return this.#routed(options, (t) => getChunks(t.#chunks, ids, options))
  }

  /**
   * Updates the metadata (replaced whole by default, `mode: 'merge'` sets top-level keys) and/or the
   * embedding of this tenant's chunks, keeping their content: every chunk of `{ ids }`, or every
   * chunk matching `{ filter }` (`{}` is refused); resolves to how many rows changed. By ids it
   * takes the documents' locks, like `replaceDocument`; by filter the tenant's write lock
   * exclusively, like `deleteWhere`, so a concurrent replace is updated whole or not at all.
   *
   * ### Examples
   * ```ts
   * await acme.updateMetadata({ ids: ['faq-1'] }, { metadata: { reviewed: true }, mode: 'merge' })
   * await acme.updateMetadata({ filter: { source: 'faq' } }, { metadata: { source: 'faq', stale: true } })
   * ```
   */
  async updateMetadata(target: UpdateTarget, update: MetadataUpdate): Promise<number> {
    return this.#wrote(await updateMetadata(this.#chunks, target, update))
  }

  /**
   * Loads this tenant's rows (no `tenantId` in them) like {@link PgVectorStore.bulkIngest}: binary
   * COPY, all or nothing unless `onInvalidRow: 'skip'`; HNSW indexes are kept (loaded through).
   *
   * ### Examples
   * ```ts
   * const { rows, skipped } = await acme.bulkIngest(chunks, { onInvalidRow: 'skip' })
   * ```
   */
  async bulkIngest(rows: AsyncIterable<TenantIngestRow> | Iterable<TenantIngestRow>, options: IngestOptions = {}): Promise<IngestResult> {
    return this.#wrote(
      await ingestRows(this.#db, { config: this.#config, copySql: this.#sql.copyRows, tenantId: this.tenantId }, rows, options),
    )
  }

  /**
   * The locks that make writers of one document take turns (held to the end of the transaction):
   * the tenant's write lock shared (so `deleteWhere`, which takes it exclusively, waits for them),
   * then the document's.
   */
  #documentLock(documentId: string): string {
    return documentLocks(this.#sql, this.tenantId, [documentId])
  }

  /**
   * Whether ordering candidates in the index's order is right for this tenant: always, unless the
   * index holds quantized vectors (halfvec or bits) and no index serves the tenant — then the exact
   * order is (a sort by the quantized distance would be slower and only approximate).
   */
  async #indexSearchPays(): Promise<boolean> {
    return this.#config.quantization === 'none' || this.#indexed.servesByIndex(this.tenantId, this.#db)
  }

  #searchSettings(k: number, efSearch: number | undefined, iterativeScan: IterativeScan): LocalSettings {
    const ef = efSearch === undefined ? this.#config.defaultEfSearch : assertEfSearch(efSearch)
    if (!Object.hasOwn(ITERATIVE, iterativeScan)) {
      throw new InvalidArgumentError(`iterativeScan must be relaxed, strict or off, got ${JSON.stringify(iterativeScan)}`)
    }
    return searchSettings(Math.max(ef, Math.min(k, 1000)), ITERATIVE[iterativeScan])
  }

  async #run<R>(text: string, params: readonly unknown[], executor: Executor = this.#db): Promise<R[]> {
    return (await this.#execute<R>(text, params, executor)).rows
  }

  /** The one path every tenant statement takes: the tenant is always `$1` (`tenant_id = $1`). */
  #execute<R>(text: string, params: readonly unknown[], executor: Executor = this.#db): Promise<QueryResult<R>> {
    return executor.executeQuery<R>(CompiledQuery.raw(text, [this.tenantId, ...params]))
  }
}
