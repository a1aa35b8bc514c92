import { InvalidArgumentError } from '../../../errors.js'
import type { MetadataFilter } from '../../../filter/filter-tree.js'
import { assertEmbedding, assertId, metadataJson, toVectorLiteral, type Embedding } from '../../ingest/index.js'
import type { ResolvedStoreConfig } from '../../config/index.js'
import type { ChunkScope } from './chunk-statements.js'
import { documentLocks, tenantWriteLock } from './document-locks.js'
import { compileDeletion } from '../metadata-queries.js'
import { runScoped } from '../tenant-scope.js'

/** One row of `upsertChunks`: a document of one chunk, named by `id`. */
export interface UpsertChunkInput {
  /** The document id (`document_id`); the chunk is its chunk 0. */
  id: string
  /** The text (indexed for full-text search). */
  content: string
  /** Any JSON object; filters match it. Default `{}`. */
  metadata?: Record<string, unknown>
  /** Its embedding: `dimensions` finite numbers. */
  embedding: Embedding
}

/** Options of `upsertChunks`. */
export interface UpsertChunksOptions {
  /**
   * First delete the tenant's chunks that match this filter, in the same transaction as the
   * upsert (an empty filter is refused, as by `deleteWhere`): replacing a set of rows atomically.
   */
  deleteWhere?: MetadataFilter
}

/** Rows per upsert statement: a batch of any size runs in one transaction, in statements of this many rows. */
export const UPSERT_ROWS_PER_STATEMENT = 1000

/**
 * The batch size from which the COPY paths (`bulkUpsert`, `bulkIngest`) beat `upsertChunks`'
 * statements: a COPY costs a round trip more, which only pays from about ten rows (measured, one
 * to sixteen 384-d rows a call, both interleaved, load 14 on 2 cores: 1 row 40 vs 58 ms, 8 rows
 * 51 vs 56, 16 rows 81 vs 69). The adapters send smaller batches through `upsertChunks`.
 *
 * ### Examples
 * ```ts
 * rows.length < COPY_PAYS_FROM_ROWS ? tenant.upsertChunks(rows) : tenant.bulkUpsert(rows)
 * ```
 */
export const COPY_PAYS_FROM_ROWS = 10

/** A checked batch as the statement's arrays: one entry per document, in the order of its first row. */
interface CheckedBatch {
  ids: string[]
  contents: string[]
  metadata: string[]
  vectors: string[]
}

/**
 * Upserts single-chunk documents in one transaction: each row's `id` becomes a document of exactly
 * that one chunk (chunk_index 0; its other chunks are deleted), after the rows matching
 * `deleteWhere`, if given, are deleted — all of it or nothing. An id given twice: its last row
 * wins. Every row is checked before anything is sent. Writers of the same documents take turns
 * (see {@link documentLocks}; with `deleteWhere`, the tenant's write lock exclusively).
 *
 * ### Examples
 * ```ts
 * const ids = await upsertChunks(scope, [{ id: 'a', content: 'A', embedding }], { deleteWhere: { source: 'crawl-7' } })
 * ```
 */
export async function upsertChunks(
  scope: ChunkScope,
  rows: readonly UpsertChunkInput[],
  options: UpsertChunksOptions = {},
): Promise<string[]> {
  const plan = await planUpsert(scope, rows, options, 'upsertChunks')
  if (plan === undefined) return []
  const { deletion, lock } = plan
  const batch: CheckedBatch = { ids: [], contents: [], metadata: [], vectors: [] }
  for (const row of plan.rows) {
    batch.ids.push(row.id)
    batch.contents.push(row.content)
    batch.metadata.push(row.metadataText)
    batch.vectors.push(toVectorLiteral(row.embedding))
  }
  await scope.db.withTransactionConnection(
    async (conn) => {
      if (deletion) await runScoped(scope, deletion.text, deletion.params, conn)
      for (let start = 0; start < batch.ids.length; start += UPSERT_ROWS_PER_STATEMENT) {
        const end = start + UPSERT_ROWS_PER_STATEMENT
        const slice = [batch.ids, batch.contents, batch.metadata, batch.vectors].map((column) => column.slice(start, end))
        await runScoped(scope, scope.chunks.upsertSingleChunk, slice, conn)
      }
    },
    { prelude: [lock] },
  )
  return batch.ids
}

/** One row of an upsert, checked: each id's last row (at the place of its first). */
export interface CheckedUpsertRow {
  id: string
  content: string
  /** The metadata object (`{}` when none was given) and its JSON text. */
  metadata: Record<string, unknown>
  metadataText: string
  embedding: Embedding
}

/** What both upsert paths do before sending: the rows checked, `deleteWhere` compiled, the lock chosen. */
export interface UpsertPlan {
  rows: CheckedUpsertRow[]
  deletion: Awaited<ReturnType<typeof compileDeletion>> | undefined
  /** The documents' locks, or the tenant's write lock exclusively with `deleteWhere`. */
  lock: string
}

/**
 * The checks and preparation `upsertChunks` and `bulkUpsert` share: every row checked (typed
 * errors naming `method` and the row, nothing sent), each id's last row kept at the place of its
 * first, `deleteWhere` compiled, the lock chosen. Undefined when there is nothing to do.
 *
 * ### Examples
 * ```ts
 * const plan = await planUpsert(scope, rows, { deleteWhere: { source: 'crawl-7' } }, 'bulkUpsert')
 * ```
 */
export async function planUpsert(
  scope: ChunkScope,
  rows: readonly UpsertChunkInput[],
  options: UpsertChunksOptions,
  method: 'upsertChunks' | 'bulkUpsert',
): Promise<UpsertPlan | undefined> {
  if (!Array.isArray(rows)) throw new InvalidArgumentError(`${method}: rows must be an array`)
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`${method} takes { deleteWhere? }`)
  const checked = checkRows(scope.config, rows, method)
  const deletion =
    options.deleteWhere === undefined ? undefined : await compileDeletion(scope, options.deleteWhere, `${method} deleteWhere`)
  if (checked.length === 0 && deletion === undefined) return undefined
  const lock = deletion
    ? tenantWriteLock(scope.locks, scope.tenantId)
    : documentLocks(
        scope.locks,
        scope.tenantId,
        checked.map((row) => row.id),
      )
  return { rows: checked, deletion, lock }
}

/** Checks every row (typed errors, nothing sent) and keeps each id's last row, at the place of its first. */
function checkRows(config: ResolvedStoreConfig, rows: readonly UpsertChunkInput[], method: string): CheckedUpsertRow[] {
  const checked: CheckedUpsertRow[] = []
  const slot = new Map<string, number>()
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]
    const where = `${method} row ${i}`
    if (row === null || typeof row !== 'object') throw new InvalidArgumentError(`${where}: expected { id, content, embedding, metadata? }`)
    const id = assertId(row.id, 'document id')
    if (typeof row.content !== 'string') throw new InvalidArgumentError(`${where}: content must be a string`)
    if (row.content.includes('\u0000'))
      throw new InvalidArgumentError(`${where}: content cannot contain NUL (\\u0000), which PostgreSQL text cannot hold`)
    const metadataText = metadataJson(row.metadata, where)
    const embedding = assertEmbedding(row.embedding, config.dimensions, config.distance, where, config.vectorType)
    const entry: CheckedUpsertRow = { id, content: row.content, metadata: row.metadata ?? {}, metadataText, embedding }
    const at = slot.get(id)
    if (at === undefined) slot.set(id, checked.push(entry) - 1)
    else checked[at] = entry
  }
  return checked
}
