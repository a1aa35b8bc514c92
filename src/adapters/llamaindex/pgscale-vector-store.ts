import type { BaseEmbedding } from '@llamaindex/core/embeddings'
import type { BaseNode } from '@llamaindex/core/schema'
import { BaseVectorStore, type VectorStoreQuery, type VectorStoreQueryResult } from '@llamaindex/core/vector-store'
import { InvalidArgumentError } from '../../errors.js'
import { assertEmbedding, COPY_PAYS_FROM_ROWS, type PgVectorStore, type TenantStore, type VectorType } from '../../store/index.js'
import { chunkToNode, nodeIdOf, nodeToChunk, REF_DOC_ID_KEY } from './nodes.js'
import { planQuery } from './query-plan.js'
import { searchDocIds, searchTenant } from './search.js'

/** Options of {@link PgScaleVectorStore.forTenant}. */
export interface PgScaleVectorStoreOptions {
  /**
   * The model LlamaIndex embeds nodes with before `add` (`VectorStoreIndex` uses the store's), and
   * that embeds `queryStr` when a query comes without `queryEmbedding`. Default: `Settings.embedModel`
   * (LlamaIndex throws when neither is set).
   */
  embedModel?: BaseEmbedding
  /**
   * The app's transaction (a Kysely `Transaction`, or a pg client after `BEGIN`): every call of the
   * adapter then runs inside it, as a savepoint (`PgVectorStore.forTenant`'s option).
   */
  transaction?: NonNullable<Parameters<PgVectorStore['forTenant']>[1]>['transaction']
}

/**
 * LlamaIndex.TS's `BaseVectorStore` on a pgscale store, bound to one tenant when it is made: every
 * read and write goes through that tenant's `TenantStore`, whose statements all carry
 * `tenant_id = $1`, so no filter, `docIds` or ref doc id can reach another tenant's rows.
 *
 * - `add(nodes)`: each node is one row (its id the document id; re-adding an id replaces it),
 *   all of them in one transaction, with LlamaIndex's `nodeToMetadata` as metadata.
 * - `delete(refDocId)`: every node whose source document is `refDocId` (the nodes `Document` split
 *   into), in one statement — SimpleVectorStore's meaning; @llamaindex/postgres deletes one row by
 *   id instead.
 * - `query`: `similarityTopK`, `filters` (mapped exactly to pgscale's filters, or refused:
 *   {@link toPgScaleFilter}), `docIds` (node ids), modes `default`, `hybrid` (needs `queryStr`) and
 *   `mmr` (`mmrThreshold` as lambda); `similarities` are 1 − cosine distance (higher is nearer).
 *
 * ### Examples
 * ```ts
 * const store = await PgVectorStore.open(db, { table: 'llama_chunks', dimensions: 384 })
 * const vectorStore = PgScaleVectorStore.forTenant(store, 'acme', { embedModel })
 * const index = await VectorStoreIndex.fromVectorStore(vectorStore)
 * await index.insert(new Document({ id_: 'handbook', text }))
 * const hits = await index.asRetriever({ similarityTopK: 5 }).retrieve('parental leave')
 * await index.deleteRefDoc('handbook', false)
 * ```
 */
export class PgScaleVectorStore extends BaseVectorStore<TenantStore> {
  /** pgscale stores each node's text: `VectorStoreIndex` reads nodes back from `query`. */
  storesText = true
  readonly #tenant: TenantStore
  readonly #dimensions: number
  readonly #vectorType: VectorType

  private constructor(tenant: TenantStore, dimensions: number, vectorType: VectorType, embedModel: BaseEmbedding | undefined) {
    super({ embedModel })
    this.#tenant = tenant
    this.#dimensions = dimensions
    this.#vectorType = vectorType
  }

  /**
   * The adapter for one tenant of `store`, a store of cosine distance (LlamaIndex's stores score by
   * cosine similarity; another distance is an {@link InvalidArgumentError}).
   *
   * ### Examples
   * ```ts
   * const acme = PgScaleVectorStore.forTenant(store, 'acme', { embedModel: new OpenAIEmbedding() })
   * await db.transaction().execute(async (trx) => {
   *   await PgScaleVectorStore.forTenant(store, 'acme', { embedModel, transaction: trx }).add(nodes)
   * })
   * ```
   */
  static forTenant(store: PgVectorStore, tenantId: string, options: PgScaleVectorStoreOptions = {}): PgScaleVectorStore {
    if (store === null || typeof store !== 'object' || typeof store.forTenant !== 'function') {
      throw new InvalidArgumentError('PgScaleVectorStore.forTenant(store, tenantId, options?) needs a PgVectorStore (PgVectorStore.open)')
    }
    if (options === null || typeof options !== 'object') {
      throw new InvalidArgumentError('PgScaleVectorStore.forTenant takes { embedModel?, transaction? }')
    }
    const { distance, dimensions, vectorType } = store.config
    if (distance !== 'cosine') {
      throw new InvalidArgumentError(
        `PgScaleVectorStore needs a store of cosine distance (similarities are 1 − cosine distance), ${store.config.qualified} uses ${distance}`,
      )
    }
    const tenant = store.forTenant(tenantId, options.transaction === undefined ? {} : { transaction: options.transaction })
    return new PgScaleVectorStore(tenant, dimensions, vectorType, options.embedModel)
  }

  /**
   * The tenant every read and write of this adapter is scoped to.
   *
   * ### Examples
   * ```ts
   * PgScaleVectorStore.forTenant(store, 'acme', { embedModel }).tenantId // 'acme'
   * ```
   */
  get tenantId(): string {
    return this.#tenant.tenantId
  }

  /**
   * The pgscale tenant handle under the adapter: its `search`, `find`, `count`, `deleteWhere`… on
   * the same rows.
   *
   * ### Examples
   * ```ts
   * const rows = await vectorStore.client().count({ ref_doc_id: 'handbook' })
   * ```
   */
  client(): TenantStore {
    return this.#tenant
  }

  /**
   * Writes embedded nodes, each as one row whose document id is the node id, in one transaction
   * (all or nothing; an id already stored is replaced whole), loaded with binary COPY (the store's
   * `bulkUpsert`). Resolves to the node ids, in order.
   * A node without an embedding, or of other dimensions, is a typed error and nothing is written.
   *
   * ### Examples
   * ```ts
   * const ids = await vectorStore.add([new TextNode({ id_: 'n-1', text: 'Leave policy', embedding })])
   * ```
   */
  async add(nodes: BaseNode[]): Promise<string[]> {
    if (!Array.isArray(nodes)) throw new InvalidArgumentError('add: expected an array of nodes')
    const rows = nodes.map((node, i) => nodeToChunk(node, `add: node ${i}`))
    // A few rows: upsertChunks' statements cost a round trip less than a COPY.
    if (rows.length >= COPY_PAYS_FROM_ROWS) await this.#tenant.bulkUpsert(rows)
    else if (rows.length > 0) await this.#tenant.upsertChunks(rows)
    return rows.map((row) => row.id)
  }

  /**
   * Deletes every node of the ref document `refDocId` (the nodes whose SOURCE is it) in this
   * tenant, atomically; nothing if there is none. `deleteOptions` is not used.
   *
   * ### Examples
   * ```ts
   * await vectorStore.delete('handbook') // or index.deleteRefDoc('handbook', false)
   * ```
   */
  async delete(refDocId: string, _deleteOptions?: object): Promise<void> {
    if (typeof refDocId !== 'string' || refDocId.length === 0) throw new InvalidArgumentError('delete: refDocId must be a non-empty string')
    await this.#tenant.deleteWhere({ [REF_DOC_ID_KEY]: { $eq: refDocId } })
  }

  /**
   * The `similarityTopK` nodes of this tenant nearest to the query, nearest first (`hybrid`: in
   * fused order; `mmr`: in pick order), with `similarities` = 1 − cosine distance and `ids` the
   * node ids. Without `queryEmbedding`, `queryStr` is embedded with the adapter's `embedModel`.
   * `customParams` takes pgscale's own settings of the query (`PgScaleQueryParams`: efSearch, mmrFetchK).
   *
   * ### Examples
   * ```ts
   * const { nodes, similarities, ids } = await vectorStore.query({
   *   queryEmbedding, similarityTopK: 5, mode: VectorStoreQueryMode.DEFAULT,
   *   filters: { filters: [{ key: 'year', operator: '>=', value: 2024 }] },
   * })
   * ```
   */
  async query(query: VectorStoreQuery, _options?: object): Promise<VectorStoreQueryResult> {
    const plan = planQuery(query)
    if (plan.empty) return { nodes: [], similarities: [], ids: [] }
    const embedding = await this.#queryEmbedding(query.queryEmbedding, plan.text)
    const hits = plan.docIds ? await searchDocIds(this.#tenant, plan, embedding) : await searchTenant(this.#tenant, plan, embedding)
    return {
      nodes: hits.map((hit) => chunkToNode(hit.chunk)),
      similarities: hits.map((hit) => hit.similarity),
      ids: hits.map((hit) => nodeIdOf(hit.chunk)),
    }
  }

  async #queryEmbedding(given: unknown, text: string | undefined): Promise<number[]> {
    let embedding = given
    if (embedding === undefined || embedding === null) {
      if (text === undefined) throw new InvalidArgumentError('query needs queryEmbedding, or queryStr to embed with the embedModel')
      embedding = await this.embedModel.getQueryEmbedding({ type: 'text', text })
    }
    return Array.from(assertEmbedding(embedding, this.#dimensions, 'cosine', 'query: queryEmbedding', this.#vectorType))
  }
}
