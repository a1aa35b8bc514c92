import { advisoryXactLock, advisoryXactLockShared, int32Hash } from '../../../sql/advisory-lock.js'

/** The advisory-lock classes of a store's writers (its `StoreStatements` carry them). */
export interface LockClasses {
  /** Writers of one document. */
  readonly documentLockClass: number
  /** A tenant's writes: shared by document writers, exclusive for writes that choose rows by filter. */
  readonly tenantLockClass: number
}

/**
 * Most document locks one write takes; a write of more documents takes the tenant's write lock
 * exclusively instead (every document of the tenant at once). Advisory locks live in the server's
 * shared lock table, sized `max_locks_per_transaction` (64 by default) per connection: a few
 * batches of thousands of locks at once would exhaust it ("out of shared memory").
 */
export const DOCUMENT_LOCKS_MAX = 64

/**
 * The locks that make writers of the same documents take turns, held to the end of the
 * transaction, as one trusted prelude statement: the tenant's write lock shared (so a write by
 * filter, which takes it exclusively, waits for them), then each document's lock in ascending key
 * order, each key once — two writers of overlapping sets take their common locks in the same
 * order, so they never deadlock. More than {@link DOCUMENT_LOCKS_MAX} documents: the tenant's
 * write lock exclusively instead.
 *
 * ### Examples
 * ```ts
 * const prelude = documentLocks(statements, 'acme', ['doc-2', 'doc-1'])
 * await db.withTransactionConnection((conn) => ..., { prelude: [prelude] })
 * ```
 */
export function documentLocks(classes: LockClasses, tenantId: string, documentIds: readonly string[]): string {
  if (documentIds.length > DOCUMENT_LOCKS_MAX) return tenantWriteLock(classes, tenantId)
  const keys = [...new Set(documentIds.map((id) => int32Hash(`${tenantId}\u0000${id}`)))].sort((a, b) => a - b)
  const shared = advisoryXactLockShared(classes.tenantLockClass, int32Hash(tenantId))
  return keys.length === 0 ? shared : `${shared}; ${advisoryXactLock(classes.documentLockClass, keys)}`
}

/**
 * The tenant's write lock, exclusive: it waits for every document writer of the tenant and makes
 * new ones wait, so a write that chooses its rows by filter (`deleteWhere`, `updateMetadata` by
 * filter, `upsertChunks` with `deleteWhere`) sees every document whole, before or after a
 * concurrent replace — its statements' snapshots are taken after the lock.
 *
 * ### Examples
 * ```ts
 * await db.withTransactionConnection((conn) => ..., { prelude: [tenantWriteLock(statements, 'acme')] })
 * ```
 */
export function tenantWriteLock(classes: LockClasses, tenantId: string): string {
  return advisoryXactLock(classes.tenantLockClass, [int32Hash(tenantId)])
}
