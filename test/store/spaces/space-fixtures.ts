import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Database } from '../../../src/index.js'

/** The store's dimensions in the spaces tests, and the new space's. */
export const DIM = 8
export const NEW_DIM = 4

/** A deterministic "model": a hash of the text spread over `dims` values (never all zero; no two texts alike). */
export function hashModel(text: string, dims: number, salt: string): number[] {
  const h = createHash('sha256')
    .update(salt + text)
    .digest()
  return Array.from({ length: dims }, (_, i) => (h[i]! - 127.5) / 128 + (i === 0 ? 0.01 : 0))
}

/** The new space's model and the store's. */
export const newModel = (text: string) => hashModel(text, NEW_DIM, 'new')
export const oldModel = (text: string) => hashModel(text, DIM, 'old')

/** A tenant's rows in a table, in key order: key, content, metadata and the vector as pgvector prints it. */
export async function rowsOf(db: Database, table: string, tenantId: string) {
  const { rows } = await sql<{ key: string; content: string; metadata: Record<string, unknown>; embedding: string }>`
    select document_id || '#' || chunk_index as key, content, metadata, embedding::text as embedding
    from ${sql.table(table)} where tenant_id = ${tenantId} order by document_id, chunk_index`.execute(db)
  return rows
}
