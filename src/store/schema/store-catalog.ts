import { CompiledQuery, sql, type Kysely, type RawBuilder } from 'kysely'
import type { Database } from '../../db/database.js'
import { quoteQualified } from '../../sql/quote.js'
import type { ResolvedStoreConfig, StoreStatements } from '../config/index.js'

/** A tenant and how many chunks it holds. */
export interface TenantSize {
  tenantId: string
  rows: number
}

/**
 * The store's table and, when it is partitioned, its partitions: a subquery of `regclass` oids
 * (`pg_partition_tree` lists nothing for a table that is not partitioned).
 *
 * ### Examples
 * ```ts
 * await sql`select count(*) from pg_index where indrelid in ${storeRelations(config)}`.execute(db)
 * ```
 */
export function storeRelations(config: ResolvedStoreConfig): RawBuilder<unknown> {
  return sql`(select to_regclass(${config.qualified}) union select relid from pg_partition_tree(to_regclass(${config.qualified})))`
}

/**
 * The names of the store's HNSW indexes. Names only: `pg_get_indexdef` reads the catalog's latest
 * state, so on an index another session drops meanwhile it fails ("cache lookup failed") — the
 * definitions are read by {@link deferrableIndexes}, under the rebuild lock.
 *
 * ### Examples
 * ```ts
 * const names = await hnswIndexNames(db, config) // ['rag_chunks_embedding_hnsw', …]
 * ```
 */
export async function hnswIndexNames(db: Kysely<any>, config: ResolvedStoreConfig): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
    where x.indrelid in ${storeRelations(config)} and am.amname = 'hnsw' and not i.relispartition order by i.relname`.execute(db)
  return rows.map((r) => r.name)
}

/**
 * The store's indexes a bulk load is cheaper without (dropped and rebuilt around it): HNSW and the
 * full-text GIN; on a partitioned store, the partitioned indexes (rebuilt on every partition) and
 * the tenant indexes of single partitions.
 *
 * ### Examples
 * ```ts
 * const deferred = await deferrableIndexes(db, config) // [{ name: 'rag_chunks_search_text', definition: 'CREATE INDEX … USING gin …' }, …]
 * ```
 */
export async function deferrableIndexes(
  db: Kysely<any>,
  config: ResolvedStoreConfig,
): Promise<Array<{ name: string; definition: string }>> {
  const { rows } = await sql<{ name: string; definition: string }>`
    select i.relname as name, regexp_replace(pg_get_indexdef(i.oid), ' ON ONLY ', ' ON ') as definition
    from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
    where x.indrelid in ${storeRelations(config)} and am.amname in ('hnsw', 'gin') and not i.relispartition
    order by i.relname`.execute(db)
  return rows
}

/**
 * The planner's row estimate of the store's table (`reltuples`), or undefined if it has none.
 *
 * ### Examples
 * ```ts
 * const rows = (await estimatedRows(db, config)) ?? 0
 * ```
 */
export async function estimatedRows(db: Database, config: ResolvedStoreConfig): Promise<number | undefined> {
  const { rows } = await sql<{
    n: number
  }>`select sum(greatest(reltuples, 0))::float8 as n from pg_class where oid in ${storeRelations(config)} and relkind = 'r'`.execute(db)
  return rows[0]?.n ?? undefined
}

/**
 * Every tenant with its chunk count, largest first (ties by id).
 *
 * ### Examples
 * ```ts
 * const [largest] = await tenantSizes(db, config)
 * ```
 */
export async function tenantSizes(db: Database, config: ResolvedStoreConfig): Promise<TenantSize[]> {
  const { rows } = await sql<{ tenant_id: string; rows: number }>`
    select tenant_id, count(*)::int as rows from ${sql.raw(config.qualified)} group by tenant_id order by count(*) desc, tenant_id`.execute(
    db,
  )
  return rows.map((r) => ({ tenantId: r.tenant_id, rows: r.rows }))
}

/**
 * Whether the plan of a tenant's search (at the store's default settings, relaxed iterative scan)
 * uses `index`.
 *
 * ### Examples
 * ```ts
 * if (await planUsesIndex(db, config, statements, 'acme', 'rag_chunks_embedding_hnsw')) console.log('shared index')
 * ```
 */
export async function planUsesIndex(
  db: Database,
  config: ResolvedStoreConfig,
  statements: StoreStatements,
  tenantId: string,
  index: string,
): Promise<boolean> {
  const probe = new Array<number>(config.dimensions).fill(0)
  probe[0] = 1
  const text = `explain (format json) ${statements.search}`
  const plan = await db.transaction(
    async (trx) => {
      const result = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(text, [tenantId, `[${probe.join(',')}]`, 10]))
      return JSON.stringify(result.rows[0]?.['QUERY PLAN'])
    },
    { settings: { 'hnsw.ef_search': config.defaultEfSearch, 'hnsw.iterative_scan': 'relaxed_order' } },
  )
  if (config.partitions === 0) return plan.includes(`"Index Name":"${index}"`)
  // A partitioned index shows in plans by the names of its partitions' indexes.
  const { rows } = await sql<{ name: string }>`
    select ${index}::text as name union
    select c.relname from pg_class c where c.oid in (select relid from pg_partition_tree(to_regclass(${quoteQualified(config.schema, index)})))`.execute(
    db,
  )
  return rows.some((r) => plan.includes(`"Index Name":"${r.name}"`))
}
