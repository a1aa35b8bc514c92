import { InvalidArgumentError } from '../../errors.js'
import { assertIdentifier, fitIdentifier } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import type { Distance, PgVectorStoreConfig, ResolvedStoreConfig, VectorType } from '../config/index.js'

/** The name of a store's own embedding column as a space: every tenant starts in it. */
export const DEFAULT_SPACE = 'default'

/** What {@link PgVectorStore.addSpace} takes: a second embedding space beside the store's own. */
export interface EmbeddingSpaceConfig {
  /** A lower-case identifier (`[a-z][a-z0-9_]{0,29}`), not `default`. */
  name: string
  /** The new model's dimensions. */
  dimensions: number
  /** The new model's distance; default the store's. */
  distance?: Distance
  /** `vector` or `halfvec`; default the store's. */
  vectorType?: VectorType
  /** What embeds this space (a note kept in the catalog and shown by `migrationStatus`), e.g. `text-embedding-3-small@256`. */
  model?: string
  /** HNSW quantization of the space's indexes (as the store's `index` option); default none. */
  index?: PgVectorStoreConfig['index']
}

/** A space as recorded in the store's catalog. */
export interface EmbeddingSpace {
  name: string
  dimensions: number
  distance: Distance
  vectorType: VectorType
  model: string | null
  /** The table that holds the space's chunks (`default`: the store's own). */
  table: string
}

const SPACE_NAME = /^[a-z][a-z0-9_]{0,29}$/

/**
 * Checks a space name: a short lower-case identifier, and — unless `allowDefault` — not the
 * store's own space.
 *
 * ### Examples
 * ```ts
 * assertSpaceName('minilm_256') // 'minilm_256'
 * ```
 */
export function assertSpaceName(name: unknown, allowDefault = true): string {
  if (typeof name !== 'string' || !SPACE_NAME.test(name)) {
    throw new InvalidArgumentError(
      `an embedding space name is a lower-case identifier of at most 30 characters ([a-z][a-z0-9_]*), got ${JSON.stringify(name)}`,
    )
  }
  if (!allowDefault && name === DEFAULT_SPACE)
    throw new InvalidArgumentError(`"${DEFAULT_SPACE}" is the store's own space and always exists`)
  return name
}

/** The tables of a store's spaces bookkeeping: the spaces and each tenant's state. */
export interface SpaceTables {
  /** `<table>_spaces`: one row per added space. */
  spaces: string
  /** `<table>_tenant_spaces`: each tenant's active space, migration target, previous space and progress. */
  tenants: string
  /** The guard function every space's table calls on writes. */
  guard: string
  /**
   * `<table>_space_changes`: the keys (tenant, document, chunk index) written to any space while
   * their tenant migrates, logged by the guard — what a switch must look at under its lock.
   */
  changes: string
}

/**
 * The qualified names of a store's spaces bookkeeping.
 *
 * ### Examples
 * ```ts
 * spaceTables(resolveStoreConfig({ table: 'rag_chunks', dimensions: 384 })).tenants // '"rag_chunks_tenant_spaces"'
 * ```
 */
export function spaceTables(config: ResolvedStoreConfig): SpaceTables {
  return {
    spaces: quoteQualified(config.schema, fitIdentifier(config.table, 'spaces')),
    tenants: quoteQualified(config.schema, fitIdentifier(config.table, 'tenant_spaces')),
    guard: quoteQualified(config.schema, fitIdentifier(config.table, 'space_guard')),
    changes: quoteQualified(config.schema, fitIdentifier(config.table, 'space_changes')),
  }
}

/** The table (unqualified, schema-qualified name in the config) of a space other than the default: `<table>__<space>`. */
export function spaceTableName(config: ResolvedStoreConfig, space: string): string {
  const name = `${config.table}__${space}`
  return assertIdentifier(name.length <= 40 ? name : fitIdentifier(config.table.slice(0, 20), `_${space}`), 'space table name')
}

/**
 * The configuration a space's own store opens with: the base store's, with the space's table,
 * dimensions, distance, vector type and index; the same schema, isolation, partitions, full text,
 * query sample and replicas, so every search feature works in it as in the store.
 */
export function spaceStoreConfig(
  given: PgVectorStoreConfig,
  base: ResolvedStoreConfig,
  space: EmbeddingSpaceConfig | EmbeddingSpace,
): PgVectorStoreConfig {
  const table = spaceTableName(base, space.name)
  return {
    ...given,
    table: base.schema ? `${base.schema}.${table}` : table,
    dimensions: space.dimensions,
    distance: space.distance ?? base.distance,
    vectorType: space.vectorType ?? base.vectorType,
    index: 'index' in space && space.index ? space.index : undefined,
    distributed: false,
  }
}
