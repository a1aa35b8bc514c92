import { sql } from 'kysely'
import type { Database } from '../../../db/database.js'
import { assertMayAlter } from '../../../db/security/privileges.js'
import { InvalidArgumentError } from '../../../errors.js'
import { parseFilter } from '../../../filter/filter-tree.js'
import { isoInstantFunction } from '../../../filter/iso-instant.js'
import {
  fieldExpression,
  METADATA_FIELD_TYPES,
  MetadataFields,
  sqlTextConstant,
  type MetadataField,
  type MetadataFieldType,
} from '../../../filter/metadata-field.js'
import { quoteQualified } from '../../../sql/quote.js'
import { fitIdentifier, shortHash } from '../../../sql/identifier.js'
import { buildIndex } from './index-build.js'
import { storeRelations } from '../store-catalog.js'
import type { ResolvedStoreConfig } from '../../config/index.js'

/** Options of `store.createMetadataIndex`. */
export interface MetadataIndexOptions {
  /** `CREATE INDEX CONCURRENTLY`: writers are not blocked while it builds (not on a partitioned store). */
  concurrently?: boolean
}

/** A metadata index of the store, as `createMetadataIndex` made it and `stats()` lists it. */
export interface MetadataIndex extends MetadataField {
  /** The index's name. */
  name: string
  /** The dotted path as it was declared. */
  field: string
}

const COMMENT_PREFIX = 'pgscale:metadata '

/** The index name of a field: the table's name, `md`, and a hash of the path and type. */
export function metadataIndexName(table: string, path: readonly string[], type: MetadataFieldType): string {
  return fitIdentifier(table, `md_${shortHash(JSON.stringify([path, type]), 12)}`)
}

/** Checks a declared field: a dotted path (as filters write it) and a type. */
export function assertMetadataField(field: unknown, type: unknown): MetadataField {
  if (typeof field !== 'string') throw new InvalidArgumentError(`createMetadataIndex: the path must be a string, got ${typeof field}`)
  const node = parseFilter({ [field]: { $exists: true } }, 'createMetadataIndex')
  if (node.kind !== 'exists') throw new InvalidArgumentError(`createMetadataIndex: ${JSON.stringify(field)} is not a field path`)
  if (typeof type !== 'string' || !(METADATA_FIELD_TYPES as readonly string[]).includes(type)) {
    throw new InvalidArgumentError(
      `createMetadataIndex: the type must be one of ${METADATA_FIELD_TYPES.join(', ')}, got ${JSON.stringify(type)}`,
    )
  }
  return { path: node.path, type: type as MetadataFieldType }
}

/**
 * Builds the expression index a field's filters use: `(tenant_id, <typed value at the path>)`, the
 * expression exactly as the filter compiler writes it for that path and type, and records the
 * field in the index's comment (so every process of the store finds it). Idempotent.
 *
 * ### Examples
 * ```ts
 * await createMetadataIndex(db, config, { path: ['price'], type: 'number' }, {})
 * ```
 */
export async function createMetadataIndex(
  db: Database,
  config: ResolvedStoreConfig,
  field: MetadataField,
  options: MetadataIndexOptions,
): Promise<MetadataIndex> {
  const concurrently = options.concurrently === true
  if (concurrently && config.partitions > 0) {
    throw new InvalidArgumentError(
      'createMetadataIndex: concurrently is not supported on a partitioned store (PostgreSQL cannot build it so)',
    )
  }
  const name = metadataIndexName(config.table, field.path, field.type)
  const expression = fieldExpression('metadata', field.path, field.type, isoInstantFunction(config.schema))
  // Declared already (its index built and its comment written): nothing to do, whoever asks.
  const declared = (await listMetadataIndexes(db, config)).find((index) => index.name === name)
  if (declared) return declared
  await assertMayAlter(db, config.qualified, 'createMetadataIndex', 'builds an expression index')
  // The index build the HNSW indexes use: builders of one index take turns on its lock, an INVALID
  // leftover of a failed concurrent build is dropped first, and a built index is found and kept.
  const ddl = `create index ${concurrently ? 'concurrently ' : ''}if not exists "${name}" on ${config.qualified} (tenant_id, (${expression}))`
  await buildIndex(db, { schema: config.schema, name, qualifiedTable: config.qualified, ddl }, {}, { concurrently })
  // After the build, on its own: an index whose comment was never written (the connection died
  // between the two) is not listed, and the next call writes it.
  const comment = `${COMMENT_PREFIX}${JSON.stringify({ path: field.path, type: field.type })}`
  await sql.raw(`comment on index ${quoteQualified(config.schema, name)} is ${sqlTextConstant(comment)}`).execute(db)
  return { ...field, name, field: field.path.join('.') }
}

/**
 * The store's metadata indexes, read from the catalog (valid indexes whose comment records a field).
 *
 * ### Examples
 * ```ts
 * const indexes = await listMetadataIndexes(db, config) // [{ name, field: 'price', path: ['price'], type: 'number' }]
 * ```
 */
export async function listMetadataIndexes(db: Database, config: ResolvedStoreConfig): Promise<MetadataIndex[]> {
  const { rows } = await sql<{ name: string; comment: string }>`
    select i.relname as name, d.description as comment
    from pg_index x join pg_class i on i.oid = x.indexrelid
    join pg_description d on d.objoid = i.oid and d.classoid = 'pg_class'::regclass and d.objsubid = 0
    where x.indrelid in ${storeRelations(config)} and not i.relispartition and x.indisvalid
      and starts_with(d.description, ${COMMENT_PREFIX})
    order by i.relname`.execute(db)
  return rows.flatMap((r) => {
    try {
      const { path, type } = JSON.parse(r.comment.slice(COMMENT_PREFIX.length)) as MetadataField
      return [{ name: r.name, path, type, field: path.join('.') }]
    } catch {
      return []
    }
  })
}

/**
 * The declared fields the filter compiler may use, cached for a few seconds (fields other processes
 * declare are seen within `ttlMs`; a field not seen yet is still filtered exactly, only not through
 * its index).
 *
 * ### Examples
 * ```ts
 * const fields = await declared.get()
 * ```
 */
export class DeclaredFields {
  #fields: Promise<MetadataFields> | undefined
  #at = 0

  constructor(
    readonly db: Database,
    readonly config: ResolvedStoreConfig,
    readonly ttlMs = 10_000,
  ) {}

  /**
   * The fields, read again when older than `ttlMs` — through `via` when given: a tenant handle in
   * the app's transaction reads the catalog there (on a one-session database, PGlite, the store's
   * own handle would wait for that session until the transaction ends: forever, since it waits on us).
   */
  get(via: Database = this.db): Promise<MetadataFields> {
    if (!this.#fields || performance.now() - this.#at > this.ttlMs) {
      this.#at = performance.now()
      this.#fields = listMetadataIndexes(via, this.config).then((list) => new MetadataFields(list))
      this.#fields.catch(() => (this.#fields = undefined))
    }
    return this.#fields
  }

  invalidate(): void {
    this.#fields = undefined
  }
}
