import { sql, type Kysely } from 'kysely'
import { PgVectorStore } from '../src/index.js'

/**
 * A RAG store's table, `rag_chunks` (384-dimensional cosine embeddings): `PgVectorStore.open`
 * creates it, its keys, the full-text index and the tuning table, inside the migration's
 * transaction. Change the name and dimensions to your store's.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await PgVectorStore.open(db, { table: 'rag_chunks', dimensions: 384 })
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists rag_chunks_tenant_tuning, rag_chunks`.execute(db)
  await sql`delete from pgscale_object_version where object = 'store:public.rag_chunks'`.execute(db)
}
