import { sql } from 'kysely'
import type { Database } from '../../../db/database.js'
import { partitionName, type ResolvedStoreConfig } from '../../config/index.js'
import { quoteQualified } from '../../../sql/quote.js'

/** What an HNSW index of the store is built with. */
export interface HnswIndexSpec {
  name: string
  m: number
  efConstruction: number
  concurrently: boolean
  /** A tenant's partial index (`WHERE tenant_id = '…'`); absent: the shared index. */
  tenantId?: string
  /** The relation to build on, when not the store's table: a tenant's partition (safe to interpolate). */
  on?: string
}

/**
 * The one place the store's HNSW `CREATE INDEX` is written: rendered by the server with
 * `format()` — the index name as `%I`, the tenant id as `%L` (DDL takes no bound parameters, and
 * the server quotes text exactly as it parses it); the table and opclass come from the validated
 * configuration, `m` and `ef_construction` from checked integers.
 *
 * ### Examples
 * ```ts
 * const ddl = await hnswIndexDdl(db, config, { name: 'chunks_tenant_…', m: 16, efConstruction: 64, concurrently: false, tenantId: 'acme' })
 * ```
 */
export async function hnswIndexDdl(db: Database, config: ResolvedStoreConfig, spec: HnswIndexSpec): Promise<string> {
  const { rows } = await sql<{ ddl: string }>`
    select format('create index %s if not exists %I on %s using hnsw (%s %s) with (m = %s, ef_construction = %s)%s',
      ${spec.concurrently ? 'concurrently' : ''}::text, ${spec.name}::text, ${spec.on ?? config.qualified}::text,
      ${config.vectors.indexExpression}::text, ${config.opclass}::text,
      ${spec.m}::int, ${spec.efConstruction}::int,
      case when ${spec.tenantId ?? null}::text is null then '' else format(' where tenant_id = %L', ${spec.tenantId ?? null}::text) end) as ddl`.execute(
    db,
  )
  return rows[0]!.ddl
}

/**
 * The partition of a partitioned store that holds `tenantId`'s rows (whether or not it has any
 * yet), asked of the server's own hash (`satisfies_hash_partition`); `undefined` for a store that is
 * not partitioned.
 *
 * ### Examples
 * ```ts
 * await tenantPartition(db, config, 'acme') // '"rag_chunks_p5"'
 * ```
 */
export async function tenantPartition(db: Database, config: ResolvedStoreConfig, tenantId: string): Promise<string | undefined> {
  if (config.partitions === 0) return undefined
  const { rows } = await sql<{ remainder: number }>`
    select r as remainder from generate_series(0, ${config.partitions - 1}::int) r
    where satisfies_hash_partition(to_regclass(${config.qualified})::oid, ${config.partitions}::int, r, ${tenantId}::text)`.execute(db)
  return quoteQualified(config.schema, partitionName(config.table, rows[0]!.remainder))
}
