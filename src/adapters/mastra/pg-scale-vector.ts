import {
  type CreateIndexParams,
  type DeleteIndexParams,
  type DeleteVectorParams,
  type DeleteVectorsParams,
  type DescribeIndexParams,
  type IndexStats,
  MastraVector,
  type QueryResult,
  type UpdateVectorParams,
  type UpsertVectorParams,
} from '@mastra/core/vector'
import { SchemaMismatchError } from '../../errors.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'
import { assertId, COPY_PAYS_FROM_ROWS, metadataJson, type PgVectorStore, type TenantStore } from '../../store/index.js'
import { IndexCatalog, type IndexCatalogOptions, type IndexRecord } from './index-catalog.js'
import { asMastraError, userError, type VectorOperation } from './mastra-errors.js'
import { PgScaleFilterTranslator, type PgScaleVectorFilter } from './mastra-filter.js'
import {
  checkCreateIndex,
  checkDeleteVectors,
  checkQuery,
  checkUpdate,
  checkUpsert,
  type PgScaleQueryVectorParams,
  type QueryRequest,
  scoredResults,
  toQueryResult,
} from './vector-requests.js'

/** Options of {@link PgScaleVectors}: where the tables are, and Mastra's own. */
export interface PgScaleVectorsOptions extends IndexCatalogOptions {
  /** The vector store's id in Mastra (required by `MastraVector`). */
  id: string
  /**
   * As in Mastra's stores: `createIndex` runs no DDL. The index's table and the registry must
   * exist (made by a role that may run DDL, or by migrations); `createIndex` then only records that
   * the tenant has the index.
   */
  disableInit?: boolean
}

/** Options of {@link PgScaleVector}: {@link PgScaleVectorsOptions} and the tenant it is bound to. */
export interface PgScaleVectorOptions extends PgScaleVectorsOptions {
  /** Every statement of this adapter is scoped to this tenant (`tenant_id = $1`). */
  tenantId: string
}

/** An index of this tenant, open. */
interface OpenIndex {
  record: IndexRecord
  store: PgVectorStore
  tenant: TenantStore
}

/**
 * A filter every row matches that the store accepts for a delete (`{}` is refused on purpose): the
 * negation of `$in` of nothing, which compiles to `not false`. `deleteIndex` deletes the tenant's
 * rows of an index with it.
 */
const EVERY_ROW: MetadataFilter = { $nor: [{ _: { $in: [] } }] }

/**
 * Mastra's `MastraVector` on pgscale, bound to one tenant: every statement it sends is scoped to
 * `tenantId` — a filter, an id or an index name never reaches another tenant's rows. A Mastra index
 * is a pgscale store table (`mastra_<name>`) shared by the tenants that create it; the tenant's
 * indexes are recorded in a tenant-keyed registry, so `listIndexes` lists this tenant's,
 * `describeIndex` counts its rows, and `deleteIndex` deletes its rows and forgets the index, never
 * touching other tenants'. Scores are similarities as @mastra/pg computes them. For many tenants,
 * make adapters from one {@link PgScaleVectors}, which opens each table once.
 *
 * ### Examples
 * ```ts
 * const vector = new PgScaleVector({ id: 'pgscale', db, tenantId: 'acme' }) // instead of new PgVector({ id, connectionString })
 * await vector.createIndex({ indexName: 'docs', dimension: 1536 })
 * await vector.upsert({ indexName: 'docs', vectors, metadata })
 * const results = await vector.query({ indexName: 'docs', queryVector, topK: 5, filter: { source: 'faq' } })
 * ```
 */
export class PgScaleVector extends MastraVector<PgScaleVectorFilter> {
  /** The tenant every statement of this adapter is scoped to. */
  readonly tenantId: string
  readonly #catalog: IndexCatalog
  readonly #ownsCatalog: boolean
  readonly #indexes = new Map<string, Promise<OpenIndex>>()
  readonly #filters = new PgScaleFilterTranslator()

  /** `catalog` is internal: {@link PgScaleVectors.forTenant} shares its own. */
  constructor(options: PgScaleVectorOptions, catalog?: IndexCatalog) {
    super({ id: options?.id, disableInit: options?.disableInit })
    try {
      this.tenantId = assertId(options.tenantId, 'tenant id')
      this.#catalog = catalog ?? new IndexCatalog(options)
    } catch (err) {
      throw asMastraError('INITIALIZATION', err)
    }
    this.#ownsCatalog = catalog === undefined
  }

  /**
   * Creates the index for this tenant: its table if missing (dimension and metric fixed when the
   * table is first created, by whichever tenant), and the registry's record. Asking again with the
   * same dimension does nothing (another metric: a warning, the existing one stays, as Mastra's
   * stores do); another dimension is a `MastraError`.
   *
   * ### Examples
   * ```ts
   * await vector.createIndex({ indexName: 'docs', dimension: 1536, metric: 'cosine' })
   * ```
   */
  async createIndex(params: CreateIndexParams): Promise<void> {
    return this.#run('CREATE_INDEX', params?.indexName, async () => {
      const record = checkCreateIndex(params, this.#catalog)
      const registry = await this.#catalog.registry(!this.disableInit)
      if (!registry) {
        const text = `the index registry does not exist; with disableInit, create it first with a role that may run DDL (createIndex without disableInit)`
        throw userError('CREATE_INDEX', 'REGISTRY_MISSING', text, { indexName: record.name })
      }
      if (await registry.get(this.tenantId, record.name)) {
        await this.validateExistingIndex(record.name, record.dimension, record.metric)
        return
      }
      await this.#catalog.open(record, !this.disableInit).catch((err: unknown) => {
        if (!(err instanceof SchemaMismatchError)) throw err
        const text = `Index "${record.name}" exists with another dimension or metric than ${record.dimension} dimensions, ${record.metric}: ${err.message}`
        throw userError('CREATE_INDEX', 'CONFIG_MISMATCH', text, { indexName: record.name }, err)
      })
      await registry.add(this.tenantId, record)
      this.#indexes.delete(record.name)
    })
  }

  /**
   * The names of this tenant's indexes (lower case), none before the first `createIndex`.
   *
   * ### Examples
   * ```ts
   * const names = await vector.listIndexes() // ['docs']
   * ```
   */
  async listIndexes(): Promise<string[]> {
    return this.#run('LIST_INDEXES', undefined, async () => {
      const registry = await this.#catalog.registry(false)
      return registry ? (await registry.list(this.tenantId)).map((r) => r.name) : []
    })
  }

  /**
   * The index's dimension and metric, and how many vectors this tenant has in it.
   *
   * ### Examples
   * ```ts
   * const { dimension, count, metric } = await vector.describeIndex({ indexName: 'docs' })
   * ```
   */
  async describeIndex(params: DescribeIndexParams): Promise<IndexStats> {
    return this.#run('DESCRIBE_INDEX', params?.indexName, async () => {
      const index = await this.#open('DESCRIBE_INDEX', params?.indexName, { fresh: true })
      return { dimension: index.record.dimension, count: await index.tenant.count(), metric: index.record.metric }
    })
  }

  /**
   * Deletes this tenant's vectors of the index and forgets the index for this tenant; the table
   * and other tenants' vectors stay. An index this tenant does not have: nothing happens.
   *
   * ### Examples
   * ```ts
   * await vector.deleteIndex({ indexName: 'docs' })
   * ```
   */
  async deleteIndex(params: DeleteIndexParams): Promise<void> {
    return this.#run('DELETE_INDEX', params?.indexName, async () => {
      const { key } = this.#catalog.name(params?.indexName)
      const registry = await this.#catalog.registry(false)
      const record = await registry?.get(this.tenantId, key)
      this.#indexes.delete(key)
      if (!registry || !record) return
      const store = await this.#catalog.open(record, false)
      await store.forTenant(this.tenantId).deleteWhere(EVERY_ROW)
      await registry.remove(this.tenantId, key)
    })
  }

  /**
   * Upserts vectors: each id's vector and metadata replaced whole (ids default to random UUIDs),
   * after the vectors matching `deleteFilter` are deleted, in one transaction, all or nothing, the
   * rows loaded with binary COPY: with `ids` or `deleteFilter` through the store's `bulkUpsert`
   * (the ids' locks, their old rows deleted, the batch copied); without them every vector is new
   * (fresh random UUIDs: nothing to replace, no writer of the same ids), so through `bulkIngest`.
   *
   * ### Examples
   * ```ts
   * const ids = await vector.upsert({ indexName: 'docs', vectors, metadata, deleteFilter: { source_id: 'guide.pdf' } })
   * ```
   */
  async upsert(params: UpsertVectorParams<PgScaleVectorFilter>): Promise<string[]> {
    return this.#run('UPSERT', params?.indexName, async () => {
      const { rows, deleteWhere } = checkUpsert(params, this.#filters)
      const index = await this.#open('UPSERT', params.indexName)
      if (rows.length < COPY_PAYS_FROM_ROWS) {
        // A few rows: upsertChunks' statements cost a round trip less than a COPY.
        await index.tenant.upsertChunks(rows, deleteWhere === undefined ? {} : { deleteWhere })
      } else if (params.ids == null && deleteWhere === undefined) {
        // The checks upsertChunks makes of metadata (JSON, jsonb's NUL and lone surrogates), before the COPY starts.
        rows.forEach((row, i) => metadataJson(row.metadata, `upsert vector ${i}`))
        await index.tenant.bulkIngest(rows.map(({ id, ...row }) => ({ ...row, documentId: id, chunkIndex: 0 })))
      } else {
        await index.tenant.bulkUpsert(rows, deleteWhere === undefined ? {} : { deleteWhere })
      }
      return rows.map((r) => r.id)
    })
  }

  /**
   * The `topK` vectors nearest `queryVector` (scores descending) that match `filter`; without a
   * `queryVector`, the first `topK` vectors matching `filter` by id (score 0). `minScore` keeps
   * scores above it; `includeVector` returns the vectors.
   *
   * ### Examples
   * ```ts
   * const results = await vector.query({ indexName: 'docs', queryVector, topK: 10, filter: { thread_id: 't-1' }, minScore: 0.5 })
   * ```
   */
  async query(params: PgScaleQueryVectorParams): Promise<QueryResult[]> {
    return this.#run('QUERY', params?.indexName, async () => {
      const request = checkQuery(params, this.#filters)
      const index = await this.#open('QUERY', request.indexName)
      if (request.queryVector === undefined) return metadataQuery(index, request)
      const hits = await index.tenant.search(request.queryVector, {
        k: request.topK,
        filter: request.filter,
        includeEmbedding: request.includeVector,
        efSearch: request.ef,
      })
      return scoredResults(index.record, hits, request)
    })
  }

  /**
   * Updates the vector and/or metadata (replaced whole) of the vector `id`, or of every vector
   * matching `filter`.
   *
   * ### Examples
   * ```ts
   * await vector.updateVector({ indexName: 'docs', filter: { userId: 'u1' }, update: { metadata: { userId: 'u1', archived: true } } })
   * ```
   */
  async updateVector(params: UpdateVectorParams<PgScaleVectorFilter>): Promise<void> {
    return this.#run('UPDATE_VECTOR', params?.indexName, async () => {
      const { target, update } = checkUpdate(params, this.#filters)
      const index = await this.#open('UPDATE_VECTOR', params.indexName)
      await index.tenant.updateMetadata(target, update)
    })
  }

  /**
   * Deletes one vector by id (nothing happens if there is none).
   *
   * ### Examples
   * ```ts
   * await vector.deleteVector({ indexName: 'docs', id })
   * ```
   */
  async deleteVector(params: DeleteVectorParams): Promise<void> {
    return this.#run('DELETE_VECTOR', params?.indexName, async () => {
      const index = await this.#open('DELETE_VECTOR', params.indexName)
      await index.tenant.deleteDocument(params.id)
    })
  }

  /**
   * Deletes vectors by ids or by filter (exactly one of them; an empty one is refused).
   *
   * ### Examples
   * ```ts
   * await vector.deleteVectors({ indexName: 'docs', filter: { source_id: 'guide.pdf' } })
   * ```
   */
  async deleteVectors(params: DeleteVectorsParams<PgScaleVectorFilter>): Promise<void> {
    return this.#run('DELETE_VECTORS', params?.indexName, async () => {
      const target = checkDeleteVectors(params, this.#filters)
      const index = await this.#open('DELETE_VECTORS', params.indexName)
      if ('filter' in target) await index.tenant.deleteWhere(target.filter)
      else for (const id of target.ids) await index.tenant.deleteDocument(id)
    })
  }

  /**
   * Closes the tables this adapter opened (their query samples are written first), unless it was
   * made by {@link PgScaleVectors.forTenant}, whose `close` does. The database handle stays open.
   *
   * ### Examples
   * ```ts
   * await vector.disconnect()
   * ```
   */
  async disconnect(): Promise<void> {
    this.#indexes.clear()
    if (this.#ownsCatalog) await this.#catalog.close()
  }

  /** This tenant's index, opened once per adapter (`fresh`: the registry read again). */
  #open(operation: VectorOperation, indexName: unknown, options: { fresh?: boolean } = {}): Promise<OpenIndex> {
    const { key } = this.#catalog.name(indexName)
    let index = options.fresh ? undefined : this.#indexes.get(key)
    if (!index) {
      index = this.#load(operation, key)
      this.#indexes.set(key, index)
      index.catch(() => this.#indexes.get(key) === index && this.#indexes.delete(key))
    }
    return index
  }

  async #load(operation: VectorOperation, key: string): Promise<OpenIndex> {
    const record = await (await this.#catalog.registry(false))?.get(this.tenantId, key)
    if (!record) throw userError(operation, 'INDEX_NOT_FOUND', `Index "${key}" does not exist`, { indexName: key })
    const store = await this.#catalog.open(record, false)
    return { record, store, tenant: store.forTenant(this.tenantId) }
  }

  /** Runs an operation; whatever it throws reaches Mastra as a `MastraError`. */
  async #run<T>(operation: VectorOperation, indexName: unknown, work: () => Promise<T>): Promise<T> {
    try {
      return await work()
    } catch (err) {
      throw asMastraError(operation, err, typeof indexName === 'string' ? { indexName } : {})
    }
  }
}

/** A query without a vector: the first `topK` vectors matching the filter, by id, score 0 (as @mastra/pg). */
async function metadataQuery(index: OpenIndex, request: QueryRequest): Promise<QueryResult[]> {
  const { rows } = await index.tenant.find({ filter: request.filter, limit: request.topK })
  if (!request.includeVector) return rows.map((row) => toQueryResult(row, 0, false))
  const chunks = await index.tenant.getChunks(
    rows.map((r) => r.documentId),
    { includeEmbedding: true },
  )
  return chunks.map((chunk) => toQueryResult(chunk, 0, true))
}

/**
 * Adapters for many tenants over one set of tables: each index's table is opened once and shared by
 * every tenant's {@link PgScaleVector}; `forTenant` is cheap (make one per request). Also the
 * operator's way to a whole index: `store(indexName, { tenantId })` is its {@link PgVectorStore},
 * across tenants (`optimize()`, `createMetadataIndex`, `stats()`), never handed to a tenant's adapter.
 *
 * ### Examples
 * ```ts
 * const vectors = new PgScaleVectors({ id: 'pgscale', db })
 * const acme = vectors.forTenant('acme') // a MastraVector scoped to acme
 * await (await vectors.store('docs', { tenantId: 'acme' })).optimize()
 * ```
 */
export class PgScaleVectors {
  readonly #options: PgScaleVectorsOptions
  readonly #catalog: IndexCatalog

  constructor(options: PgScaleVectorsOptions) {
    try {
      this.#catalog = new IndexCatalog(options)
    } catch (err) {
      throw asMastraError('INITIALIZATION', err)
    }
    this.#options = options
  }

  /**
   * The adapter of one tenant, sharing this object's open tables.
   *
   * ### Examples
   * ```ts
   * const vector = vectors.forTenant(request.tenantId)
   * ```
   */
  forTenant(tenantId: string): PgScaleVector {
    return new PgScaleVector({ ...this.#options, tenantId }, this.#catalog)
  }

  /**
   * The `PgVectorStore` of an index's table, across tenants, opened as it was created: for
   * operations (`optimize()`, `createMetadataIndex`, `measureRecall`, `stats`). Needs a tenant that
   * created the index, to read its dimension and metric from the registry.
   *
   * ### Examples
   * ```ts
   * const store = await vectors.store('docs', { tenantId: 'acme' })
   * await store.optimize()
   * ```
   */
  async store(indexName: string, options: { tenantId: string }): Promise<PgVectorStore> {
    const { key } = this.#catalog.name(indexName)
    const record = await (await this.#catalog.registry(false))?.get(options.tenantId, key)
    if (!record) throw userError('DESCRIBE_INDEX', 'INDEX_NOT_FOUND', `Index "${key}" does not exist`, { indexName: key })
    return this.#catalog.open(record, false)
  }

  /**
   * Closes every table opened through this object (query samples written first); the database handle stays open.
   *
   * ### Examples
   * ```ts
   * await vectors.close()
   * ```
   */
  async close(): Promise<void> {
    await this.#catalog.close()
  }
}
