import { InvalidArgumentError, MigrationRequiredError } from '../../errors.js'
import { PgVectorStore, type Distance, type PgVectorStoreConfig } from '../../store/index.js'

/** What pgscale takes as a database: its own `Database`, the app's `Kysely`, or the app's `pg.Pool`. */
export type DatabaseHandle = Parameters<typeof PgVectorStore.open>[0]

/** Mastra's metrics. */
export type MastraMetric = 'cosine' | 'euclidean' | 'dotproduct'

/** The store options every index's table is opened with (all but what `createIndex` decides). */
export type IndexStoreOptions = Omit<PgVectorStoreConfig, 'table' | 'dimensions' | 'distance'>

/** pgscale's distance for each of Mastra's metrics. */
export const DISTANCE: Readonly<Record<MastraMetric, Distance>> = { cosine: 'cosine', euclidean: 'l2', dotproduct: 'inner_product' }

/** What the registry holds of one tenant's index. */
export interface IndexRecord {
  /** The index name, as `listIndexes` returns it (lower case: names fold like unquoted SQL identifiers). */
  name: string
  dimension: number
  metric: MastraMetric
}

/** Where the adapter keeps its tables. */
export interface IndexCatalogOptions {
  db: DatabaseHandle
  /** The schema of the index tables and the registry. Default: the connection's `search_path` (`public`). */
  schema?: string
  /** Prefix of each index's table: index `docs` is table `mastra_docs`. Default `mastra_`. */
  tablePrefix?: string
  /** Options of every index's `PgVectorStore` (`fullText`, `querySample`, `migrate`, ...). Default `{ fullText: false }`. */
  store?: IndexStoreOptions
}

/** The registry's table: which tenant has which index (a pgscale store: its rows are tenant-scoped like any chunk). */
export const REGISTRY_TABLE = 'pgscale_mastra_indexes'

const INDEX_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const MAX_IDENTIFIER = 63

/**
 * The adapter's tables, shared by every tenant's adapter made from one {@link PgScaleVectors}: each
 * Mastra index is one pgscale store table (`<prefix><name>`), opened once per process; and the
 * registry of which tenant has which index, itself a pgscale store keyed by tenant, so its rows
 * are reached only through `forTenant` like every chunk. Only DDL paths create tables: `open`
 * with `create` (createIndex); reads open with `migrate: false`.
 *
 * ### Examples
 * ```ts
 * const catalog = new IndexCatalog({ db })
 * const store = await catalog.open({ name: 'docs', dimension: 384, metric: 'cosine' }, true)
 * ```
 */
export class IndexCatalog {
  readonly #options: IndexCatalogOptions
  readonly #stores = new Map<string, Promise<PgVectorStore>>()
  #registry: Promise<PgVectorStore> | undefined

  constructor(options: IndexCatalogOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('the Mastra adapter needs options { id, db, ... }')
    if (
      options.tablePrefix !== undefined &&
      (typeof options.tablePrefix !== 'string' || !/^[a-z_][a-z0-9_]*$|^$/.test(options.tablePrefix))
    ) {
      throw new InvalidArgumentError(
        `tablePrefix must be lower-case letters, digits and underscores, got ${JSON.stringify(options.tablePrefix)}`,
      )
    }
    this.#options = options
  }

  /**
   * The index name as the registry keys it (folded to lower case, as @mastra/pg's unquoted table
   * names fold) and its table; a name that is not `^[A-Za-z_][A-Za-z0-9_]*$`, or whose table name
   * would pass 63 bytes or be the registry's, is an {@link InvalidArgumentError}.
   */
  name(indexName: unknown): { key: string; table: string } {
    if (typeof indexName !== 'string' || !INDEX_NAME.test(indexName)) {
      throw new InvalidArgumentError(`index name ${JSON.stringify(indexName)} must match ${INDEX_NAME} (letters, digits, underscores)`)
    }
    const key = indexName.toLowerCase()
    const table = `${this.#options.tablePrefix ?? 'mastra_'}${key}`
    if (table.length > MAX_IDENTIFIER) {
      throw new InvalidArgumentError(
        `index name ${JSON.stringify(indexName)} is too long: its table ${table} passes ${MAX_IDENTIFIER} characters`,
      )
    }
    if (table === REGISTRY_TABLE)
      throw new InvalidArgumentError(`index name ${JSON.stringify(indexName)} is reserved: its table is the registry's`)
    return { key, table: this.#qualified(table) }
  }

  /**
   * The store of an index's table, opened once (per table, dimension and metric). `create`: it may
   * create or upgrade the table (createIndex, a DDL path; unless the store options say `migrate:
   * false`); otherwise it runs no DDL, and a table that is missing or older is a
   * `MigrationRequiredError`.
   */
  open(record: IndexRecord, create: boolean): Promise<PgVectorStore> {
    const { table } = this.name(record.name)
    const key = `${table}/${record.dimension}/${record.metric}`
    let store = this.#stores.get(key)
    if (!store) {
      const { store: options = {} } = this.#options
      store = PgVectorStore.open(this.#options.db, {
        fullText: false,
        ...options,
        migrate: create && options.migrate !== false,
        table,
        dimensions: record.dimension,
        distance: DISTANCE[record.metric],
      })
      this.#stores.set(key, store)
      store.catch(() => this.#stores.get(key) === store && this.#stores.delete(key))
    }
    return store
  }

  /** The registry, opened as a store; `undefined` when it does not exist yet and `create` is false. */
  async registry(create: boolean): Promise<IndexRegistry | undefined> {
    let store = this.#registry
    if (!store) {
      const { distributed, migrate } = this.#options.store ?? {}
      const opening = PgVectorStore.open(this.#options.db, {
        ...REGISTRY_STORE,
        ...(distributed === undefined ? {} : { distributed }),
        table: this.#qualified(REGISTRY_TABLE),
        migrate: create && migrate !== false,
      })
      try {
        await opening
      } catch (err) {
        if (!create && err instanceof MigrationRequiredError) return undefined
        throw err
      }
      store = this.#registry ??= opening
    }
    return new IndexRegistry(await store)
  }

  /** Closes every store opened (their query samples are written first). */
  async close(): Promise<void> {
    const stores = [...this.#stores.values(), ...(this.#registry ? [this.#registry] : [])]
    this.#stores.clear()
    this.#registry = undefined
    await Promise.all(stores.map(async (s) => (await s.catch(() => undefined))?.close()))
  }

  #qualified(table: string): string {
    return this.#options.schema === undefined ? table : `${this.#options.schema}.${table}`
  }
}

/** The registry's store: one-dimension rows, never searched by vector, no text, no query sample. */
const REGISTRY_STORE = {
  dimensions: 1,
  distance: 'l2',
  fullText: false,
  querySample: false,
} as const satisfies Partial<PgVectorStoreConfig>

/** Every registry row's embedding: the registry is read by id, never by vector. */
const REGISTRY_EMBEDDING = [1]

/** Registry rows per page when listing a tenant's indexes. */
const PAGE = 1000

/**
 * Which indexes each tenant has, with their dimension and metric: a pgscale store of one row per
 * (tenant, index), its document id the index name. Read and written through `forTenant`, so a
 * tenant's registry rows are as isolated as its chunks.
 *
 * ### Examples
 * ```ts
 * const names = (await registry.list('acme')).map((r) => r.name)
 * ```
 */
export class IndexRegistry {
  constructor(readonly store: PgVectorStore) {}

  /** The tenant's indexes, by name. */
  async list(tenantId: string): Promise<IndexRecord[]> {
    const tenant = this.store.forTenant(tenantId)
    const records: IndexRecord[] = []
    let page = await tenant.find({ limit: PAGE })
    for (;;) {
      for (const row of page.rows) records.push(toRecord(row.documentId, row.metadata))
      if (!page.next) return records
      page = await tenant.find({ limit: PAGE, after: page.next })
    }
  }

  /** The tenant's index of that name, if it has one. */
  async get(tenantId: string, name: string): Promise<IndexRecord | undefined> {
    const [row] = await this.store.forTenant(tenantId).getChunks([name])
    return row && toRecord(row.documentId, row.metadata)
  }

  /** Records that the tenant has this index (idempotent). */
  async add(tenantId: string, record: IndexRecord): Promise<void> {
    const metadata = { dimension: record.dimension, metric: record.metric }
    await this.store.forTenant(tenantId).upsertChunks([{ id: record.name, content: '', embedding: REGISTRY_EMBEDDING, metadata }])
  }

  /** Forgets the tenant's index. */
  async remove(tenantId: string, name: string): Promise<void> {
    await this.store.forTenant(tenantId).deleteDocument(name)
  }
}

function toRecord(name: string, metadata: Record<string, unknown>): IndexRecord {
  return { name, dimension: Number(metadata.dimension), metric: metadata.metric as MastraMetric }
}
