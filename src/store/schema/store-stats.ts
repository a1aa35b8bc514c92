import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import { storeRelations } from './store-catalog.js'
import { distributedSizes } from './citus-distribution.js'

/** Sizes of the store's table and indexes. */
export interface StoreStats {
  rows: number
  tenants: number
  bytes: { heap: number; toast: number; indexes: Record<string, number>; total: number }
  /** The declared metadata fields and their indexes (`createMetadataIndex`); their sizes are in `bytes.indexes`. */
  metadataIndexes?: Array<{ name: string; field: string; path: readonly string[]; type: string }>
}

/**
 * Rows, tenants and bytes of a store's table: heap, TOAST, each index, total.
 *
 * ### Examples
 * ```ts
 * const { rows, bytes } = await storeStats(db, store.config)
 * ```
 */
export async function storeStats(db: Database, config: ResolvedStoreConfig): Promise<StoreStats> {
  const t = sql.raw(config.qualified)
  const { rows: counts } = await sql<{ rows: number; tenants: number }>`
    select count(*)::int as rows, count(distinct tenant_id)::int as tenants from ${t}`.execute(db)
  // Sums over the partitions when the table is partitioned (the parent itself holds nothing).
  const { rows: rel } = await sql<{ heap: string; toast: string; total: string }>`
    select coalesce(sum(pg_relation_size(c.oid)), 0)::text as heap,
      coalesce(sum(case when c.reltoastrelid = 0 then 0 else pg_total_relation_size(c.reltoastrelid) end), 0)::text as toast,
      coalesce(sum(pg_total_relation_size(c.oid)), 0)::text as total
    from pg_class c where c.oid in ${storeRelations(config)} and c.relkind = 'r'`.execute(db)
  const { rows: idx } = await sql<{ name: string; bytes: string }>`
    select i.relname as name,
      (select coalesce(sum(pg_relation_size(c.oid)), 0) from pg_class c
        where c.oid = i.oid or c.oid in (select relid from pg_partition_tree(i.oid)))::text as bytes
    from pg_index x join pg_class i on i.oid = x.indexrelid
    where x.indrelid in ${storeRelations(config)} and not i.relispartition order by i.relname`.execute(db)
  const distributed = await distributedSizes(db, config)
  if (distributed) {
    // On Citus the coordinator's table is an empty shell: the sizes are the shards', summed (each index by its name).
    return {
      rows: counts[0]?.rows ?? 0,
      tenants: counts[0]?.tenants ?? 0,
      bytes: {
        heap: distributed.heap,
        toast: distributed.toast,
        indexes: distributed.indexes,
        total: distributed.total,
      },
    }
  }
  return {
    rows: counts[0]?.rows ?? 0,
    tenants: counts[0]?.tenants ?? 0,
    bytes: {
      heap: Number(rel[0]?.heap ?? 0),
      toast: Number(rel[0]?.toast ?? 0),
      indexes: Object.fromEntries(idx.map((r) => [r.name, Number(r.bytes)])),
      total: Number(rel[0]?.total ?? 0),
    },
  }
}
