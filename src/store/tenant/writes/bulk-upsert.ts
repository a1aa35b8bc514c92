import { CompiledQuery } from 'kysely'
import { InvalidArgumentError } from '../../../errors.js'
import { assertEmbedding, assertId, ingestRows, metadataJson, type Embedding, type TenantIngestRow } from '../../ingest/index.js'
import type { ResolvedStoreConfig } from '../../config/index.js'
import type { ChunkScope } from './chunk-statements.js'
import { documentLocks, tenantWriteLock } from './document-locks.js'
import { compileDeletion } from '../metadata-queries.js'
import type { UpsertChunkInput, UpsertChunksOptions } from './upsert-chunks.js'

/** A checked batch: one row per document, in the order of its first row, each the id's last row. */
interface CheckedRows {
  ids: string[]
  rows: TenantIngestRow[]
}

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
  if (!Array.isArray(rows)) throw new InvalidArgumentError('bulkUpsert: rows must be an array')
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('bulkUpsert takes { deleteWhere? }')
  const batch = checkRows(scope.config, rows)
  const deletion =
    options.deleteWhere === undefined ? undefined : await compileDeletion(scope, options.deleteWhere, 'bulkUpsert deleteWhere')
  if (batch.ids.length === 0 && deletion === undefined) return []
  const lock = deletion ? tenantWriteLock(scope.locks, scope.tenantId) : documentLocks(scope.locks, scope.tenantId, batch.ids)
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
        if (batch.ids.length > 0) await trx.executeQuery(CompiledQuery.raw(deleteDocuments(config), [tenantId, batch.ids]))
        return []
      },
    },
    batch.rows,
    {},
  )
  return batch.ids
}

/** $1 tenant, $2 text[] document ids: every chunk of those documents. */
function deleteDocuments(config: ResolvedStoreConfig): string {
  return `delete from ${config.qualified} where tenant_id = $1 and document_id = any($2::text[])`
}

/** `upsertChunks`' checks of every row (typed errors, nothing sent); each id's last row, at the place of its first. */
function checkRows(config: ResolvedStoreConfig, rows: readonly UpsertChunkInput[]): CheckedRows {
  const batch: CheckedRows = { ids: [], rows: [] }
  const slot = new Map<string, number>()
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]
    const where = `bulkUpsert row ${i}`
    if (row === null || typeof row !== 'object') throw new InvalidArgumentError(`${where}: expected { id, content, embedding, metadata? }`)
    const id = assertId(row.id, 'document id')
    if (typeof row.content !== 'string') throw new InvalidArgumentError(`${where}: content must be a string`)
    if (row.content.includes('\u0000'))
      throw new InvalidArgumentError(`${where}: content cannot contain NUL (\\u0000), which PostgreSQL text cannot hold`)
    metadataJson(row.metadata, where)
    const embedding: Embedding = assertEmbedding(row.embedding, config.dimensions, config.distance, where, config.vectorType)
    const checked: TenantIngestRow = { documentId: id, chunkIndex: 0, content: row.content, metadata: row.metadata ?? {}, embedding }
    const at = slot.get(id)
    if (at === undefined) {
      slot.set(id, batch.ids.push(id) - 1)
      batch.rows.push(checked)
    } else batch.rows[at] = checked
  }
  return batch
}
