import { sql } from 'kysely'
import { PgVectorStore, type Database } from '../../../src/index.js'
import { generateCorpus } from '../../synthetic/corpus.js'
import { hashEmbedding } from './model-migration.js'

/** One way of holding a second model's vectors, measured. */
export interface StorageWay {
  way: string
  /** Seconds to write every chunk's new vector (batches of `batch`, each one statement or COPY). */
  seconds: number
  /** Table (heap + TOAST) and index bytes after, and their growth. */
  heapBytes: number
  indexBytes: number
  heapGrowth: number
  indexGrowth: number
  /** Of the rows updated: how many were HOT (no index entry added). */
  hotUpdates?: number
}

/**
 * Why a space is a table of its own: one tenant with its own HNSW index, its new vectors written
 * (a) into a sibling table through the store's COPY path, (b) into a new column of the chunks
 * table with batched `UPDATE ... FROM unnest(...)` — same vectors, same batches, one after the
 * other on the same server. The column's updates are not HOT (the row grows, no room on its page),
 * so every update adds an entry to every index of the table, the old model's HNSW included.
 */
export async function measureStorageChoice(
  db: Database,
  o: { chunks: number; dim: number; toDim: number; batch: number },
): Promise<StorageWay[]> {
  const table = 'rag_storage_choice'
  await sql.raw(`drop table if exists ${table}, ${table}__next cascade`).execute(db)
  const store = await PgVectorStore.open(db, { table, dimensions: o.dim, querySample: false, fullText: false })
  await store.bulkIngest(generateCorpus({ seed: 'storage', dim: o.dim, tenants: [{ id: 'big', chunks: o.chunks }] }))
  await store.createTenantIndex('big')
  await store.addSpace({ name: 'next', dimensions: o.toDim })
  await sql.raw(`vacuum analyze ${table}`).execute(db)
  const size = (t: string) => tableSize(db, t)
  const ways: StorageWay[] = []
  // (a) the sibling table, through migrateTenant (COPY).
  const before = await size(table)
  const t0 = performance.now()
  await store.migrateTenant('big', {
    to: 'next',
    batchSize: o.batch,
    buildIndex: false,
    embed: async (texts) => texts.map((t) => hashEmbedding(t, o.toDim)),
  })
  const sibling = await size(`${table}__next`)
  ways.push({
    way: 'a table per space (COPY into it)',
    seconds: (performance.now() - t0) / 1000,
    heapBytes: sibling.heap,
    indexBytes: sibling.idx,
    heapGrowth: sibling.heap,
    indexGrowth: sibling.idx,
  })
  ways.push(await writeColumn(db, table, o, before))
  await store.close()
  await sql
    .raw(
      `drop table if exists ${table}, ${table}__next, ${table}_spaces, ${table}_tenant_spaces, ${table}_tenant_tuning, ${table}_query_sample, ${table}_recall_monitor, ${table}__next_tenant_tuning, ${table}__next_query_sample, ${table}__next_recall_monitor cascade`,
    )
    .execute(db)
  await sql`delete from pgscale_object_version where object like ${`store:%${table}%`}`.execute(db).catch(() => {})
  return ways
}

/** (b) the same vectors into a new column of the chunks table, batched `UPDATE ... FROM unnest(...)`. */
async function writeColumn(
  db: Database,
  table: string,
  o: { toDim: number; batch: number },
  before: { heap: number; idx: number },
): Promise<StorageWay> {
  await sql.raw(`alter table ${table} disable trigger pgscale_space_guard`).execute(db)
  await sql.raw(`alter table ${table} add column embedding_next vector(${o.toDim})`).execute(db)
  const updates = async () =>
    (await sql<{ hot: string }>`select n_tup_hot_upd::text as hot from pg_stat_user_tables where relname = ${table}`.execute(db)).rows[0]!
      .hot
  const hot0 = Number(await updates())
  const t0 = performance.now()
  for (let offset = 0; ; offset += o.batch) {
    const { rows } = await sql<{
      d: string
      i: number
      c: string
    }>`select document_id as d, chunk_index as i, content as c from ${sql.table(table)}
      where tenant_id = 'big' order by document_id, chunk_index limit ${o.batch} offset ${offset}`.execute(db)
    if (!rows.length) break
    const vectors = rows.map((r) => `[${hashEmbedding(r.c, o.toDim).join(',')}]`).join(';')
    await sql`update ${sql.table(table)} t set embedding_next = u.e::vector
      from unnest(${rows.map((r) => r.d)}::text[], ${rows.map((r) => r.i)}::int[], string_to_array(${vectors}, ';')) as u(d, i, e)
      where t.tenant_id = 'big' and t.document_id = u.d and t.chunk_index = u.i`.execute(db)
  }
  const seconds = (performance.now() - t0) / 1000
  await new Promise((resolve) => setTimeout(resolve, 600)) // the statistics collector
  const hot = Number(await updates()) - hot0
  const { heap, idx } = await tableSize(db, table)
  return {
    way: 'a column of the chunks table (UPDATE)',
    seconds,
    heapBytes: heap,
    indexBytes: idx,
    heapGrowth: heap - before.heap,
    indexGrowth: idx - before.idx,
    hotUpdates: hot,
  }
}

/** A table's heap (with TOAST) and index bytes. */
async function tableSize(db: Database, table: string): Promise<{ heap: number; idx: number }> {
  const { rows } = await sql<{
    heap: string
    idx: string
  }>`select pg_table_size(${table}::regclass)::text as heap, pg_indexes_size(${table}::regclass)::text as idx`.execute(db)
  return { heap: Number(rows[0]!.heap), idx: Number(rows[0]!.idx) }
}
