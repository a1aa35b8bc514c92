import { CompiledQuery } from 'kysely'
import { ingestRows, type TenantIngestRow } from '../../ingest/index.js'
import type { ResolvedStoreConfig } from '../../config/index.js'
import type { ChunkScope } from './chunk-statements.js'
import { planUpsert, type UpsertChunkInput, type UpsertChunksOptions } from './upsert-chunks.js'

/**
 * `upsertChunks` through the store's bulk path: each row's `id` becomes a document of exactly that
 * one chunk (chunk_index 0), in one transaction — the documents' locks (the tenant's write lock
 * exclusively for more than 64 documents or with `deleteWhere`), the chunks matching `deleteWhere`
 * deleted, every chunk of the batch's documents deleted, then the rows loaded with binary COPY
 * (`copySql`, the store's `copyRows`; `ingestRows`: batched INSERTs where the handle has no COPY, or row security or PGlite's file
 * rule refuses it). All of it or nothing. An id given twice: its last row wins, at the place of
 * its first. Every row is checked before anything is sent.
 *
 * ### Examples
 * ```ts
 * const ids = await bulkUpsert(scope, statements.copyRows, [{ id: 'a', content: 'A', embedding }], {})
 * ```
 */
export async function bulkUpsert(
  scope: ChunkScope,
  copySql: string,
  rows: readonly UpsertChunkInput[],
  options: UpsertChunksOptions = {},
): Promise<string[]> {
  const plan = await planUpsert(scope, rows, options, 'bulkUpsert')
  if (plan === undefined) return []
  const { deletion, lock } = plan
  const ids = plan.rows.map((row) => row.id)
  const ingest: TenantIngestRow[] = plan.rows.map((row) => ({
    documentId: row.id,
    chunkIndex: 0,
    content: row.content,
    metadata: row.metadata,
    embedding: row.embedding,
  }))
  const { config, tenantId } = scope
  await ingestRows(
    scope.db,
    {
      config,
      copySql,
      tenantId,
      prepare: async (trx) => {
        // Writers of the same documents take turns (locks in key order: no deadlock); each
        // statement after the lock reads what the writer before it committed.
        await trx.executeQuery(CompiledQuery.raw(lock))
        if (deletion) await trx.executeQuery(CompiledQuery.raw(deletion.text, [tenantId, ...deletion.params]))
        if (ids.length > 0) await trx.executeQuery(CompiledQuery.raw(deleteDocuments(config), [tenantId, ids]))
        return []
      },
    },
    ingest,
    {},
  )
  return ids
}

/** $1 tenant, $2 text[] document ids: every chunk of those documents. */
function deleteDocuments(config: ResolvedStoreConfig): string {
  return `delete from ${config.qualified} where tenant_id = $1 and document_id = any($2::text[])`
}
