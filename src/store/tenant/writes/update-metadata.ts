import { InvalidArgumentError } from '../../../errors.js'
import { matchesEverything, parseFilter, type FilterNode, type MetadataFilter } from '../../../filter/filter-tree.js'
import { assertEmbedding, assertId, metadataJson, toVectorLiteral, type Embedding } from '../../ingest/index.js'
import type { ChunkScope } from './chunk-statements.js'
import { documentLocks, tenantWriteLock } from './document-locks.js'
import { compileForScope, runScoped } from '../tenant-scope.js'

/** Which rows `updateMetadata` changes: every chunk of these documents, or the chunks that match a filter (not `{}`). */
export type UpdateTarget = { ids: readonly string[]; filter?: undefined } | { filter: MetadataFilter; ids?: undefined }

/** How `updateMetadata` writes metadata: the whole object replaced, or its top-level keys merged in (jsonb `||`). */
export type MetadataUpdateMode = 'replace' | 'merge'

/** What `updateMetadata` writes: metadata, an embedding, or both; content is kept. */
export interface MetadataUpdate {
  /** The new metadata (`mode: 'replace'`, the default), or the keys to set (`mode: 'merge'`). */
  metadata?: Record<string, unknown>
  /** The new embedding of every matching chunk. */
  embedding?: Embedding
  /** How `metadata` is written. Default `replace`. */
  mode?: MetadataUpdateMode
}

/** A checked update: its SET clauses and their values, from `$2`. */
interface CheckedUpdate {
  set: string[]
  values: string[]
}

/** A checked target: document ids (distinct), or a filter tree that is not `{}`. */
type CheckedTarget = { ids: string[] } | { node: FilterNode }

/**
 * Updates the metadata and/or the embedding of this tenant's chunks without their content: every
 * chunk of the given documents, or every chunk matching a filter; resolves to how many rows
 * changed. By ids, it takes the documents' locks as `replaceDocument` does (so a concurrent replace
 * is updated whole or not at all). By filter, it takes the tenant's write lock exclusively as
 * `deleteWhere` does: the rows are chosen after every concurrent replace of the tenant has
 * committed, so no document is half updated (rows a replace wrote after the update's snapshot).
 *
 * ### Examples
 * ```ts
 * await updateMetadata(scope, { ids: ['doc-1'] }, { metadata: { reviewed: true }, mode: 'merge' })
 * await updateMetadata(scope, { filter: { source: 'crawl-7' } }, { metadata: { stale: true }, mode: 'merge' })
 * ```
 */
export async function updateMetadata(scope: ChunkScope, target: UpdateTarget, update: MetadataUpdate): Promise<number> {
  const checkedTarget = checkTarget(target)
  const checked = checkUpdate(scope, update)
  const first = 2 + checked.values.length
  let where: string
  let params: readonly unknown[]
  let lock: string
  if ('ids' in checkedTarget) {
    if (checkedTarget.ids.length === 0) return 0
    where = `document_id = any($${first}::text[])`
    params = [...checked.values, checkedTarget.ids]
    lock = documentLocks(scope.locks, scope.tenantId, checkedTarget.ids)
  } else {
    const f = await compileForScope(scope, checkedTarget.node, first)
    where = f.sql
    params = [...checked.values, ...f.params]
    lock = tenantWriteLock(scope.locks, scope.tenantId)
  }
  const text = scope.chunks.update(checked.set, where)
  const result = await scope.db.withTransactionConnection((conn) => runScoped(scope, text, params, conn), { prelude: [lock] })
  return Number(result.numAffectedRows ?? 0n)
}

function checkTarget(target: UpdateTarget): CheckedTarget {
  if (target === null || typeof target !== 'object') throw new InvalidArgumentError('updateMetadata: target must be { ids } or { filter }')
  const { ids, filter } = target as { ids?: unknown; filter?: unknown }
  if (ids !== undefined && filter !== undefined) {
    throw new InvalidArgumentError('updateMetadata: give ids or a filter, not both')
  }
  if (ids !== undefined) {
    if (!Array.isArray(ids)) throw new InvalidArgumentError('updateMetadata: ids must be an array of document ids')
    return { ids: [...new Set(ids.map((id) => assertId(id, 'document id')))] }
  }
  if (filter === undefined) throw new InvalidArgumentError('updateMetadata: target must be { ids } or { filter }')
  const node = parseFilter(filter, 'updateMetadata filter')
  if (matchesEverything(node)) {
    throw new InvalidArgumentError('updateMetadata: an empty filter would update every chunk of the tenant; use a real filter')
  }
  return { node }
}

function checkUpdate(scope: ChunkScope, update: MetadataUpdate): CheckedUpdate {
  if (update === null || typeof update !== 'object')
    throw new InvalidArgumentError('updateMetadata: update must be { metadata?, embedding?, mode? }')
  const { metadata, embedding, mode } = update
  if (metadata === undefined && embedding === undefined) {
    throw new InvalidArgumentError('updateMetadata: the update has neither metadata nor an embedding')
  }
  if (mode !== undefined && mode !== 'replace' && mode !== 'merge') {
    throw new InvalidArgumentError(`updateMetadata: mode must be replace or merge, got ${JSON.stringify(mode)}`)
  }
  if (mode !== undefined && metadata === undefined)
    throw new InvalidArgumentError('updateMetadata: mode applies to metadata, and none is given')
  const set: string[] = []
  const values: string[] = []
  if (metadata !== undefined) {
    values.push(metadataJson(metadata, 'updateMetadata'))
    set.push(mode === 'merge' ? `metadata = metadata || $${1 + values.length}::jsonb` : `metadata = $${1 + values.length}::jsonb`)
  }
  if (embedding !== undefined) {
    const { dimensions, distance, vectorType } = scope.config
    values.push(toVectorLiteral(assertEmbedding(embedding, dimensions, distance, 'updateMetadata', vectorType)))
    set.push(`embedding = $${1 + values.length}::${vectorType}`)
  }
  return { set, values }
}
