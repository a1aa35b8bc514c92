import { InvalidArgumentError } from '../../errors.js'
import { assertIdentifier, assertQualifiedName } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { resolveQuerySample, type QuerySampleOptions, type ResolvedQuerySample } from './query-sample-options.js'
import type { ReplicaOptions, ReplicaSet } from '../../replicas/index.js'

import { resolveVectorOptions, vectorSql, type Distance, type Quantization, type VectorSql, type VectorType } from './vector-type.js'

export type { Distance, Quantization, VectorType } from './vector-type.js'

/** Configuration of {@link PgVectorStore.open}. */
export interface PgVectorStoreConfig {
  /** Table name (optionally `schema.table`); a plain identifier. Default `rag_chunks`. */
  table?: string
  /** Embedding dimensions, 1..16000 (HNSW indexes allow at most 2000). */
  dimensions: number
  /** Distance: `cosine` (default), `l2` or `inner_product`. */
  distance?: Distance
  /** Text search configuration of the generated `tsvector` (`english`, `simple`, ...). Default `english`. */
  textSearchConfig?: string
  /**
   * How the embedding column is stored. `plain` keeps vectors in the heap page, which made exact
   * scans 1.7× faster than TOASTed vectors in our measurement (docs/store.md); it needs a vector
   * to fit in a page, so the default is `plain` up to 1,536 dimensions and `extended` above.
   */
  embeddingStorage?: 'plain' | 'extended'
  /** `hnsw.ef_search` used by `search` unless a call says otherwise. Default 100. */
  defaultEfSearch?: number
  /**
   * Keep a generated `tsvector` column and its GIN index for `hybridSearch`. Default `true`;
   * `false` for stores that only search by vector: no `tsvector` is computed on write and no GIN
   * index maintained (bulk loads measured faster, docs/performance.md), and `hybridSearch` throws.
   * Fixed when the table is created.
   */
  fullText?: boolean
  /**
   * Hash-partition the table by `tenant_id` into this many partitions (2..1024); default none.
   * For many tenants with their own indexes: a search plans only against the indexes of its
   * tenant's partition, not every partial index of the table (docs/store.md, "Planning cost").
   * Fixed when the table is created.
   */
  partitions?: number
  /**
   * The embedding column's type: `vector` (4-byte floats, default) or `halfvec` (2-byte floats: half
   * the heap and index, values within ±65,504, HNSW up to 4,000 dimensions). Fixed when the table is created.
   */
  vectorType?: VectorType
  /**
   * How HNSW indexes hold the vectors. `quantization: 'halfvec'` indexes `embedding::halfvec(D)` (a
   * `vector` column, half the index); `'binary'` indexes `binary_quantize(embedding)::bit(D)` (1 bit
   * per dimension, Hamming) and `search` re-ranks `rerank × k` candidates by the exact distance on
   * the full vectors, in one statement. Default `none`; `rerank` defaults to 8 under binary.
   */
  index?: { quantization?: Quantization; rerank?: number }
  /**
   * Citus distribution by `tenant_id` (`create_distributed_table`, the tuning table colocated with
   * it), so each tenant's statements route to one shard. `'auto'` (the default): a new, empty table
   * is distributed when the database has Citus with a node that holds shards, otherwise nothing
   * happens (plain PostgreSQL, PGlite, `partitions`). `true` / `{ shardCount }`: distribute, also an
   * existing table with rows; without Citus a typed error. `false`: never. Idempotent.
   */
  distributed?: boolean | 'auto' | { shardCount?: number }
  /**
   * A bounded sample of recent query embeddings per tenant (embeddings only, never the query
   * text), which `optimize()` tunes on and `recallReport()` monitors: `{ perTenant: 256,
   * maxAgeDays: 30, flushIntervalMs: 5000 }` by default; `false` keeps none. Written off the hot
   * path, in batches (src/store/query-sample.ts).
   */
  querySample?: QuerySampleOptions | false
  /**
   * Whether `open` may create or upgrade the store's tables. `true` (default): it does when they
   * are missing or older — and only then, so a role with DML rights alone opens a store that is up
   * to date. `false`: never; a store that is not at its version is a `MigrationRequiredError`
   * (deployments that run DDL only at deploy time, through `PgVectorStore.migration` or
   * `pgscale migrate`).
   */
  migrate?: boolean
  /**
   * `'rls'`: row-level security on every table of the store (chunks, tuning, query sample, recall
   * monitor), keyed on `pgscale.tenant_id`, which every statement of a tenant handle sets for its
   * transaction: the app's own SQL on its runtime role then reads and writes only the tenant it
   * set, and a statement without it reads nothing (docs/database.md, "Deploying"). The policies
   * are created with the tables (or by the migration, on a store made before). Default `'none'`.
   */
  isolation?: 'none' | 'rls'
  /**
   * Streaming replicas for the tenant reads (search, exactSearch, hybridSearch, find, count,
   * getChunks): a `ReplicaSet` (shared with rollup reads), or the replicas' handles (a set is made
   * with `replicaOptions`, closed by `store.close()`). A tenant's reads go to a replica only once
   * it has replayed that tenant's writes from this process (and a `consistencyToken` given to the
   * read); writes, index builds, tuning and the query sample stay on the primary, and so do reads
   * inside the app's transaction. Default: none — every read on the primary, no routing code run.
   */
  replicas?: ReplicaSet | ConstructorParameters<typeof ReplicaSet>[1]
  /** Routing options when `replicas` are handles (`maxLagMs`, `waitMs`, …). */
  replicaOptions?: ReplicaOptions
}

/** The validated, complete configuration. */
export interface ResolvedStoreConfig {
  schema?: string
  table: string
  /** `"schema"."table"` or `"table"`, safe to interpolate. */
  qualified: string
  dimensions: number
  distance: Distance
  operator: '<=>' | '<->' | '<#>'
  /** The HNSW opclass (vector-type.ts). */
  opclass: string
  vectorType: VectorType
  quantization: Quantization
  /** Candidates per result fetched through the index before re-ranking (1: none). */
  rerank: number
  /** The SQL of the vectors: column type, index expression and operator (vector-type.ts). */
  vectors: VectorSql
  textSearchConfig: string
  embeddingStorage: 'plain' | 'extended'
  defaultEfSearch: number
  fullText: boolean
  /** Hash partitions by tenant; 0: one table. */
  partitions: number
  /** Citus distribution by tenant_id (shard count, or the cluster's default), none, or when Citus is there. */
  distributed: false | 'auto' | { shardCount?: number }
  querySample: ResolvedQuerySample
  migrate: boolean
  isolation: 'none' | 'rls'
}

const DISTANCES: readonly Distance[] = ['cosine', 'l2', 'inner_product']

/** The most hash partitions a store's table may have. */
export const MAX_PARTITIONS = 1024

/** pgvector's limit on `vector` dimensions. */
export const MAX_VECTOR_DIMENSIONS = 16000
/** pgvector's limit on dimensions of an HNSW-indexed `vector`. */
export const MAX_HNSW_DIMENSIONS = 2000

/** Checks and completes a store configuration; throws before anything is sent. */
export function resolveStoreConfig(config: PgVectorStoreConfig): ResolvedStoreConfig {
  if (config === null || typeof config !== 'object') throw new InvalidArgumentError('PgVectorStore.open needs a configuration object')
  const { schema, name } = assertQualifiedName(config.table ?? 'rag_chunks', 'table name')
  const dimensions = config.dimensions
  assertIntegerIn(dimensions, 1, MAX_VECTOR_DIMENSIONS, 'dimensions')
  const distance = config.distance ?? 'cosine'
  if (!DISTANCES.includes(distance)) {
    throw new InvalidArgumentError(`unknown distance ${JSON.stringify(distance)}: use cosine, l2 or inner_product`)
  }
  const textSearchConfig = assertIdentifier(config.textSearchConfig ?? 'english', 'text search configuration')
  const embeddingStorage = config.embeddingStorage ?? (dimensions <= 1536 ? 'plain' : 'extended')
  if (embeddingStorage !== 'plain' && embeddingStorage !== 'extended') {
    throw new InvalidArgumentError(`embeddingStorage must be "plain" or "extended", got ${JSON.stringify(embeddingStorage)}`)
  }
  const defaultEfSearch = config.defaultEfSearch ?? 100
  assertEfSearch(defaultEfSearch)
  const fullText = config.fullText ?? true
  if (typeof fullText !== 'boolean') throw new InvalidArgumentError(`fullText must be true or false, got ${JSON.stringify(fullText)}`)
  const partitions = config.partitions ?? 0
  if (partitions !== 0) assertIntegerIn(partitions, 2, MAX_PARTITIONS, 'partitions')
  const { vectorType, quantization, rerank } = resolveVectorOptions(config.vectorType, config.index)
  const distributed = resolveDistribution(config.distributed, partitions)
  const vectors = vectorSql(vectorType, quantization, distance, dimensions)
  return {
    schema,
    table: name,
    qualified: quoteQualified(schema, name),
    dimensions,
    distance,
    operator: vectors.operator,
    opclass: vectors.opclass,
    vectorType,
    quantization,
    rerank,
    vectors,
    textSearchConfig,
    embeddingStorage,
    defaultEfSearch,
    fullText,
    partitions,
    distributed,
    querySample: resolveQuerySample(config.querySample),
    migrate: resolveBoolean(config.migrate, true, 'migrate'),
    isolation: resolveIsolation(config.isolation),
  }
}

function resolveDistribution(value: PgVectorStoreConfig['distributed'], partitions: number): ResolvedStoreConfig['distributed'] {
  if (value === false) return false
  if (value === undefined || value === 'auto') return partitions > 0 ? false : 'auto'
  if (partitions > 0)
    throw new InvalidArgumentError('distributed and partitions cannot be combined: Citus shards the table by tenant already')
  if (value === true) return {}
  if (value === null || typeof value !== 'object')
    throw new InvalidArgumentError(`distributed must be 'auto', true, false or { shardCount }, got ${JSON.stringify(value)}`)
  if (value.shardCount !== undefined) assertIntegerIn(value.shardCount, 1, 64_000, 'distributed.shardCount')
  return value.shardCount === undefined ? {} : { shardCount: value.shardCount }
}

function resolveIsolation(value: unknown): 'none' | 'rls' {
  if (value === undefined || value === 'none' || value === 'rls') return value ?? 'none'
  throw new InvalidArgumentError(`isolation must be 'none' or 'rls', got ${JSON.stringify(value)}`)
}

function resolveBoolean(value: unknown, fallback: boolean, what: string): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${what} must be true or false, got ${JSON.stringify(value)}`)
  return value
}

/** `hnsw.ef_search` accepts 1..1000. */
export function assertEfSearch(value: unknown): number {
  return assertIntegerIn(value, 1, 1000, 'efSearch')
}
