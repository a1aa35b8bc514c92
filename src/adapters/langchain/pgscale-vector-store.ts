import type { Callbacks } from '@langchain/core/callbacks/manager'
import { Document, type DocumentInterface } from '@langchain/core/documents'
import type { EmbeddingsInterface } from '@langchain/core/embeddings'
import { VectorStore, type MaxMarginalRelevanceSearchOptions } from '@langchain/core/vectorstores'
import { InvalidArgumentError } from '../../errors.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'
import {
  assertId,
  COPY_PAYS_FROM_ROWS,
  DEFAULT_MMR_FETCH_K,
  GET_CHUNKS_MAX_IDS,
  metadataJson,
  type Distance,
  type PgVectorStore,
  type SearchOptions,
  type TenantStore,
} from '../../store/index.js'
import { documentIds, toDocument, uniqueIds, withVectors } from './documents.js'
import { checkFilter } from './filters.js'
import { assertScoreNormalization, scoreOf, type ScoreNormalization } from './scores.js'

/** What `store.forTenant(id, { transaction })` takes: the app's Kysely `Transaction`, or a pg client after `BEGIN`. */
export type AppTransaction = NonNullable<Parameters<PgVectorStore['forTenant']>[1]>['transaction']

/** The search options every similarity and MMR search of the adapter uses (`k` and `filter` come per call). */
export type PgScaleSearchOptions = Omit<SearchOptions, 'k' | 'filter' | 'includeEmbedding'>

/** How the adapter is made: the store, the tenant it is bound to, and how it answers. */
export interface PgScaleVectorStoreArgs {
  /** The app's store (`PgVectorStore.open`). The adapter never closes it, nor the pool under it. */
  store: PgVectorStore
  /** The tenant every call reads and writes; fixed for the adapter's life. */
  tenantId: string
  /** Run every call inside the app's transaction, each as a savepoint (see `store.forTenant`). */
  transaction?: AppTransaction
  /** `similarity` (default; higher is nearer) or the raw `distance` (lower is nearer). */
  scoreNormalization?: ScoreNormalization
  /** `efSearch`, `iterativeScan`, `filterStrategy`, … for every search (default: the tenant's tuned settings). */
  searchOptions?: PgScaleSearchOptions
}

/** Options of `addDocuments`/`addVectors`: `ids`, one per document, win over each document's own `id`. */
export interface PgScaleAddOptions {
  ids?: string[]
}

/** What `delete` takes: ids (documents of this tenant; missing ones are no error) or a filter, not both. */
export type PgScaleDeleteParams = { ids: string[]; filter?: undefined } | { filter: MetadataFilter; ids?: undefined }

/**
 * LangChain.js's `VectorStore` over one tenant of a pgscale {@link PgVectorStore}. The tenant is
 * bound when the adapter is made and every call is scoped to it (`tenant_id = $1`): filters match
 * metadata only, so no filter, id or option reaches another tenant's rows. An id names one chunk:
 * a pgscale document whose only chunk is chunk 0 (adding an existing id replaces it whole, in one
 * transaction); documents of several chunks (`replaceDocument`) return every chunk under the
 * document's id. Filters are pgscale's (MongoDB's query language); scores are similarities
 * (higher is nearer) unless `scoreNormalization: 'distance'`.
 *
 * ### Examples
 * ```ts
 * const store = await PgVectorStore.open(pool, { table: 'rag_chunks', dimensions: 1536 })
 * const vectorStore = PgScaleVectorStore.forTenant(store, 'acme', new OpenAIEmbeddings())
 * await vectorStore.addDocuments([new Document({ pageContent: 'Refunds take a week.', metadata: { kind: 'faq' } })])
 * const hits = await vectorStore.similaritySearchWithScore('how long do refunds take?', 4, { kind: { $in: ['faq', 'policy'] } })
 * const docs = await vectorStore.asRetriever({ k: 4, searchType: 'mmr' }).invoke('refunds')
 * ```
 */
export class PgScaleVectorStore extends VectorStore {
  /** pgscale's filter language: MongoDB's query operators over the chunk's metadata (docs/store.md "Filters"). */
  declare FilterType: MetadataFilter

  readonly #tenant: TenantStore
  readonly #distance: Distance
  readonly #normalization: ScoreNormalization
  readonly #searchOptions: PgScaleSearchOptions

  /**
   * The adapter for `args.tenantId` of `args.store`: LangChain's `(embeddings, dbConfig)` shape.
   * {@link PgScaleVectorStore.forTenant} says the same in one line.
   *
   * ### Examples
   * ```ts
   * const vectorStore = new PgScaleVectorStore(embeddings, { store, tenantId: 'acme', scoreNormalization: 'distance' })
   * ```
   */
  constructor(embeddings: EmbeddingsInterface, args: PgScaleVectorStoreArgs) {
    super(embeddings, { tenantId: args?.tenantId })
    if (args === null || typeof args !== 'object' || typeof args.store?.forTenant !== 'function') {
      throw new InvalidArgumentError('PgScaleVectorStore needs { store: PgVectorStore, tenantId }')
    }
    const searchOptions = args.searchOptions ?? {}
    if (searchOptions === null || typeof searchOptions !== 'object') throw new InvalidArgumentError('searchOptions must be an object')
    // Frozen: `TenantStore.tenantId` is a public field the handle reads for every statement, and
    // this handle is handed out (`tenant`); nothing may retarget it.
    const tenant = args.store.forTenant(args.tenantId, args.transaction === undefined ? {} : { transaction: args.transaction })
    this.#tenant = Object.freeze(tenant) as TenantStore
    this.#distance = args.store.config.distance
    this.#normalization = assertScoreNormalization(args.scoreNormalization)
    this.#searchOptions = { ...searchOptions }
  }

  /**
   * The adapter bound to one tenant of a store.
   *
   * ### Examples
   * ```ts
   * const acme = PgScaleVectorStore.forTenant(store, 'acme', embeddings)
   * const inTrx = PgScaleVectorStore.forTenant(store, 'acme', embeddings, { transaction: trx })
   * ```
   */
  static forTenant(
    store: PgVectorStore,
    tenantId: string,
    embeddings: EmbeddingsInterface,
    options: Omit<PgScaleVectorStoreArgs, 'store' | 'tenantId'> = {},
  ): PgScaleVectorStore {
    return new PgScaleVectorStore(embeddings, { ...options, store, tenantId })
  }

  static override lc_name(): string {
    return 'PgScaleVectorStore'
  }

  override _vectorstoreType(): string {
    return 'pgscale'
  }

  /** The tenant every call of this adapter is scoped to. */
  get tenantId(): string {
    return this.#tenant.tenantId
  }

  /**
   * pgscale's own handle on the same tenant, for what LangChain has no method for (`hybridSearch`,
   * `find`, `count`, `updateMetadata`).
   *
   * ### Examples
   * ```ts
   * const hits = await vectorStore.tenant.hybridSearch({ embedding, text: 'refund policy', k: 5 })
   * ```
   */
  get tenant(): TenantStore {
    return this.#tenant
  }

  /**
   * Embeds the documents' `pageContent` and writes each as a chunk under its id
   * ({@link PgScaleVectorStore.addVectors}); resolves to the ids, one per document, in order.
   *
   * ### Examples
   * ```ts
   * const ids = await vectorStore.addDocuments(docs) // new UUIDs, or each doc.id
   * await vectorStore.addDocuments(docs, { ids: ['faq-1', 'faq-2'] }) // replaces faq-1 and faq-2 if they exist
   * ```
   */
  override async addDocuments(documents: DocumentInterface[], options?: PgScaleAddOptions): Promise<string[]> {
    // The ids are settled (and the call checked) before paying for the embeddings.
    const ids = documentIds(documents, options?.ids, 'addDocuments')
    if (documents.length === 0) return []
    const vectors = await this.embeddings.embedDocuments(documents.map((doc) => doc.pageContent))
    return this.#write(vectors, documents, ids, allNew(documents, options))
  }

  /**
   * Writes documents with their precomputed vectors, one chunk each, in one transaction (all or
   * nothing): the id of each is `options.ids[i]`, else its own `id`, else a new UUID. An id that
   * exists is replaced whole (text, metadata, vector; its other chunks removed); an id given twice
   * is written once, with its last document. Resolves to the ids, one per document, in order.
   * The batch is loaded through binary COPY (the store's `bulkUpsert`; without ids — none given,
   * no document with its own — every row is new under a fresh UUID: `bulkIngest`), one transaction.
   *
   * ### Examples
   * ```ts
   * const ids = await vectorStore.addVectors([[0.1, 0.2, 0.3]], [new Document({ pageContent: 'a', metadata: {} })])
   * ```
   */
  override async addVectors(vectors: number[][], documents: DocumentInterface[], options?: PgScaleAddOptions): Promise<string[]> {
    return this.#write(vectors, documents, documentIds(documents, options?.ids, 'addVectors'), allNew(documents, options))
  }

  /**
   * The rows written with binary COPY, one transaction, all or nothing: replacing what is there
   * (the store's `bulkUpsert`: the ids' locks, their old rows deleted, the batch copied), or, when
   * every id is a new UUID (`fresh`: no `ids` given, no document with an id), through `bulkIngest`
   * — nothing to replace and no other writer of them.
   */
  async #write(vectors: number[][], documents: DocumentInterface[], ids: string[], fresh: boolean): Promise<string[]> {
    const rows = withVectors(vectors, documents, 'addVectors')
    if (rows.length === 0) return []
    if (rows.length < COPY_PAYS_FROM_ROWS) {
      // A few rows: upsertChunks' statements cost a round trip less than a COPY.
      await this.#tenant.upsertChunks(rows.map((row, i) => ({ ...row, id: ids[i]! })))
    } else if (fresh) {
      rows.forEach((row, i) => metadataJson(row.metadata, `addVectors document ${i}`)) // upsertChunks' checks, before the COPY
      await this.#tenant.bulkIngest(rows.map((row, i) => ({ ...row, documentId: ids[i]!, chunkIndex: 0 })))
    } else {
      await this.#tenant.bulkUpsert(rows.map((row, i) => ({ ...row, id: ids[i]! })))
    }
    return ids
  }

  /**
   * Writes `documents` as the chunks (0..n-1) of one pgscale document, replacing all of its chunks
   * atomically (an empty array deletes it): for callers who group chunks by source document. Every
   * chunk comes back from searches with `id` = `documentId`, and `delete({ ids: [documentId] })`
   * deletes them all. `options.vectors` skips the embedding. Resolves to the chunks written and
   * the old chunks removed (those past the new count).
   *
   * ### Examples
   * ```ts
   * const chunks = await splitter.splitDocuments([manual])
   * await vectorStore.replaceDocument('manual', chunks) // { written: 12, removed: 0 }; 9 chunks later: { written: 9, removed: 3 }
   * ```
   */
  async replaceDocument(
    documentId: string,
    documents: DocumentInterface[],
    options: { vectors?: number[][] } = {},
  ): Promise<{ written: number; removed: number }> {
    assertId(documentId, 'document id')
    if (!Array.isArray(documents)) throw new InvalidArgumentError('replaceDocument: documents must be an array of Documents')
    const vectors =
      options.vectors ?? (documents.length ? await this.embeddings.embedDocuments(documents.map((doc) => doc.pageContent)) : [])
    return this.#tenant.replaceDocument(documentId, withVectors(vectors, documents, 'replaceDocument'))
  }

  /**
   * The `k` nearest chunks of the tenant to `query` (a vector), nearest first, each as a `Document`
   * (with `id`) and its score: a similarity, higher is nearer (cosine `1 − distance`; inner product:
   * the inner product; l2 `1 / (1 + distance)`), or the raw distance with `scoreNormalization:
   * 'distance'`. `filter` is pgscale's (MongoDB's operators); the search keeps its recall under it.
   *
   * ### Examples
   * ```ts
   * const [[doc, score]] = await vectorStore.similaritySearchVectorWithScore(embedding, 1, { kind: 'faq' })
   * ```
   */
  override async similaritySearchVectorWithScore(query: number[], k: number, filter?: MetadataFilter): Promise<[Document, number][]> {
    const hits = await this.#tenant.search(query, { ...this.#searchOptions, k, filter: checkFilter(filter) })
    return hits.map((hit) => [toDocument(hit), scoreOf(hit.distance, this.#distance, this.#normalization)])
  }

  /**
   * Search diversified by maximal marginal relevance, by the store: `fetchK` candidates (default
   * max(20, k)) through the tenant's search (its `filter`, tuning and scope), then `k` of them
   * chosen for relevance and diversity (`lambda` 1: relevance only, 0: diversity only; default
   * 0.5). As LangChain's other stores, it returns at most `fetchK` documents.
   *
   * ### Examples
   * ```ts
   * const docs = await vectorStore.maxMarginalRelevanceSearch('refunds', { k: 4, fetchK: 20, lambda: 0.5, filter: { kind: 'faq' } })
   * ```
   */
  override async maxMarginalRelevanceSearch(
    query: string,
    options: MaxMarginalRelevanceSearchOptions<MetadataFilter>,
    _callbacks?: Callbacks,
  ): Promise<Document[]> {
    if (options === null || typeof options !== 'object')
      throw new InvalidArgumentError('maxMarginalRelevanceSearch takes { k, fetchK?, lambda?, filter? }')
    const filter = checkFilter(options.filter)
    const k = options.k ?? 4
    const fetchK = options.fetchK ?? Math.max(DEFAULT_MMR_FETCH_K, k)
    const embedding = await this.embeddings.embedQuery(query)
    const hits = await this.#tenant.maxMarginalRelevanceSearch(embedding, {
      ...this.#searchOptions,
      k: Math.min(k, fetchK),
      fetchK,
      lambda: options.lambda,
      filter,
    })
    return hits.map(toDocument)
  }

  /**
   * Deletes documents of this tenant: `{ ids }` (what `index()` sends; an id absent here, or
   * another tenant's, is no error and changes nothing) or `{ filter }` (its matching chunks; `{}`
   * is refused). Ids are deleted one document at a time, each in its own transaction.
   *
   * ### Examples
   * ```ts
   * await vectorStore.delete({ ids: ['faq-1', 'faq-2'] })
   * await vectorStore.delete({ filter: { source: 'import-2024-03' } })
   * ```
   */
  override async delete(params: PgScaleDeleteParams): Promise<void> {
    if (params === null || typeof params !== 'object') throw new InvalidArgumentError('delete takes { ids } or { filter }')
    const { ids, filter } = params as { ids?: unknown; filter?: unknown }
    if (ids !== undefined && filter !== undefined) throw new InvalidArgumentError('delete takes { ids } or { filter }, not both')
    if (ids !== undefined) {
      for (const id of uniqueIds(ids, 'delete')) await this.#tenant.deleteDocument(id)
      return
    }
    if (filter === undefined) throw new InvalidArgumentError('delete takes { ids } or { filter }; to delete nothing pass { ids: [] }')
    await this.#tenant.deleteWhere(checkFilter(filter)!)
  }

  /**
   * The stored documents of these ids (LangChain Python's `get_by_ids`), each chunk as a
   * `Document` with its `id`, in the order of the ids; ids absent here (or another tenant's) are
   * simply not in the result.
   *
   * ### Examples
   * ```ts
   * const [faq] = await vectorStore.getByIds(['faq-1'])
   * ```
   */
  async getByIds(ids: string[]): Promise<Document[]> {
    const wanted = uniqueIds(ids, 'getByIds')
    const out: Document[] = []
    for (let start = 0; start < wanted.length; start += GET_CHUNKS_MAX_IDS) {
      const chunks = await this.#tenant.getChunks(wanted.slice(start, start + GET_CHUNKS_MAX_IDS))
      out.push(...chunks.map(toDocument))
    }
    return out
  }

  /**
   * A new adapter on `args` (store and tenant) with `texts` written as documents: `metadatas` one per
   * text, or one object for all; `args.ids`, if given, one per text.
   *
   * ### Examples
   * ```ts
   * const vectorStore = await PgScaleVectorStore.fromTexts(['a', 'b'], [{ n: 1 }, { n: 2 }], embeddings, { store, tenantId: 'acme' })
   * ```
   */
  static override async fromTexts(
    texts: string[],
    metadatas: object[] | object,
    embeddings: EmbeddingsInterface,
    args: PgScaleVectorStoreArgs & PgScaleAddOptions,
  ): Promise<PgScaleVectorStore> {
    if (!Array.isArray(texts)) throw new InvalidArgumentError('fromTexts: texts must be an array of strings')
    const docs = texts.map(
      (pageContent, i) =>
        new Document({ pageContent, metadata: { ...(Array.isArray(metadatas) ? metadatas[i] : metadatas) } as Record<string, unknown> }),
    )
    return PgScaleVectorStore.fromDocuments(docs, embeddings, args)
  }

  /**
   * A new adapter on `args` (store and tenant) with `docs` written (`args.ids`, if given, one per document).
   *
   * ### Examples
   * ```ts
   * const vectorStore = await PgScaleVectorStore.fromDocuments(docs, embeddings, { store, tenantId: 'acme' })
   * ```
   */
  static override async fromDocuments(
    docs: DocumentInterface[],
    embeddings: EmbeddingsInterface,
    args: PgScaleVectorStoreArgs & PgScaleAddOptions,
  ): Promise<PgScaleVectorStore> {
    const { ids, ...rest } = args ?? ({} as PgScaleVectorStoreArgs)
    const vectorStore = new PgScaleVectorStore(embeddings, rest)
    await vectorStore.addDocuments(docs, { ids })
    return vectorStore
  }
}

/** Whether every id of a write is a new UUID: no `ids` option, no document with its own id. */
function allNew(documents: readonly DocumentInterface[], options: PgScaleAddOptions | undefined): boolean {
  return options?.ids == null && documents.every((doc) => doc.id === undefined || doc.id === null)
}
