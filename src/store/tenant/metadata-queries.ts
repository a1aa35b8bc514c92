import { InvalidArgumentError } from '../../errors.js'
import { matchesEverything, parseFilter, type MetadataFilter } from '../../filter/filter-tree.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { assertId } from '../ingest/index.js'
import { tenantWriteLock, type LockClasses } from './writes/document-locks.js'
import { compileForScope, runScoped, type TenantScope } from './tenant-scope.js'

/** A chunk as `find` returns it: no embedding. */
export interface FoundChunk {
  documentId: string
  chunkIndex: number
  content: string
  metadata: Record<string, unknown>
}

/** Where a page of `find` ends; pass it as `after` for the next page. */
export interface FindCursor {
  documentId: string
  chunkIndex: number
}

/** Options of `find`. */
export interface FindOptions {
  /** Only chunks whose metadata matches (docs/store.md "Filters"). Default: every chunk. */
  filter?: MetadataFilter
  /** Rows per page, 1..10,000. Default 100. */
  limit?: number
  /** Start after this chunk (the previous page's `next`). */
  after?: FindCursor
}

/** A page of `find`: rows ordered by document and chunk, and the cursor of the next page (absent on the last). */
export interface FindResult {
  rows: FoundChunk[]
  next?: FindCursor
}

/**
 * A page of the tenant's chunks that match a filter, ordered by document id and chunk index (the
 * primary key's order, so pages are stable and cheap to continue).
 *
 * ### Examples
 * ```ts
 * let page = await findChunks(scope, { filter: { archived: { $ne: true } }, limit: 500 })
 * while (page.next) page = await findChunks(scope, { filter, limit: 500, after: page.next })
 * ```
 */
export async function findChunks(scope: TenantScope, options: FindOptions = {}): Promise<FindResult> {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError('find takes { filter?, limit?, after? }')
  const limit = assertIntegerIn(options.limit ?? 100, 1, 10_000, 'find: limit')
  const node = parseFilter(options.filter, 'find filter')
  const after = options.after === undefined ? undefined : assertCursor(options.after)
  const f = await compileForScope(scope, node, after ? 5 : 3)
  const params = after ? [limit, after.documentId, after.chunkIndex, ...f.params] : [limit, ...f.params]
  const { rows } = await runScoped<FoundChunk>(scope, scope.statements.find(f.sql, after !== undefined), params)
  const last = rows[rows.length - 1]
  return rows.length === limit && last ? { rows, next: { documentId: last.documentId, chunkIndex: last.chunkIndex } } : { rows }
}

/**
 * How many of the tenant's chunks match a filter (all of them without one).
 *
 * ### Examples
 * ```ts
 * const archived = await countChunks(scope, { archived: true })
 * ```
 */
export async function countChunks(scope: TenantScope, filter?: MetadataFilter): Promise<number> {
  const node = parseFilter(filter, 'count filter')
  const f = await compileForScope(scope, node, 2)
  const { rows } = await runScoped<{ n: number }>(scope, scope.statements.count(f.sql), f.params)
  return rows[0]?.n ?? 0
}

/**
 * Deletes the tenant's chunks that match a filter; resolves to how many. An empty filter is
 * refused (`deleteWhere({})` would empty the tenant). Takes the tenant's write lock exclusively —
 * `replaceDocument` and `deleteDocument` hold it shared — so the delete sees every document either
 * before or after a concurrent replace, never half of one; the delete's own snapshot is taken after
 * the lock.
 *
 * ### Examples
 * ```ts
 * const removed = await deleteMatching(scope, statements, { source: 'crawler-2024' })
 * ```
 */
export async function deleteMatching(scope: TenantScope, locks: LockClasses, filter: MetadataFilter): Promise<number> {
  const deletion = await compileDeletion(scope, filter, 'deleteWhere')
  const result = await scope.db.withTransactionConnection((conn) => runScoped(scope, deletion.text, deletion.params, conn), {
    prelude: [tenantWriteLock(locks, scope.tenantId)],
  })
  return Number(result.numAffectedRows ?? 0n)
}

/**
 * The delete statement of the tenant's chunks that match a filter, and its parameters after the
 * tenant: the filter checked (an empty one refused, `what` naming the caller in the error) before
 * anything is sent. For a caller that runs it in its own transaction, under the tenant's write
 * lock ({@link tenantWriteLock}).
 *
 * ### Examples
 * ```ts
 * const deletion = await compileDeletion(scope, { source: 'crawler-2024' }, 'upsertChunks deleteWhere')
 * await runScoped(scope, deletion.text, deletion.params, conn)
 * ```
 */
export async function compileDeletion(
  scope: TenantScope,
  filter: MetadataFilter,
  what: string,
): Promise<{ text: string; params: readonly unknown[] }> {
  const node = parseFilter(filter, `${what} filter`)
  if (matchesEverything(node))
    throw new InvalidArgumentError(`${what}: an empty filter would delete every chunk of the tenant; it is refused`)
  const f = await compileForScope(scope, node, 2)
  return { text: scope.statements.delete(f.sql), params: f.params }
}

function assertCursor(after: unknown): FindCursor {
  const c = after as FindCursor
  if (c === null || typeof c !== 'object') throw new InvalidArgumentError('find: after must be { documentId, chunkIndex }')
  assertId(c.documentId, 'document id')
  assertIntegerIn(c.chunkIndex, 0, 2 ** 31 - 1, 'find: after.chunkIndex')
  return { documentId: c.documentId, chunkIndex: c.chunkIndex }
}
