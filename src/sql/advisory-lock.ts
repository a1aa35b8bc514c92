/** A signed 32-bit FNV-1a hash: the integer keys of `pg_advisory_xact_lock(int, int)`. */
export function int32Hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h | 0
}

/**
 * `SELECT pg_advisory_xact_lock(class, key), ...` for the given keys, in the order given (callers
 * pass them sorted so two lockers of overlapping sets never deadlock). The keys are integers this
 * code computed, so the text is safe to send as a trusted prelude.
 *
 * ### Examples
 * ```ts
 * advisoryXactLock(int32Hash('pgscale.store:"chunks"'), [int32Hash('acme\u0000doc-1')])
 * // 'SELECT pg_advisory_xact_lock(-1234, 5678)'
 * ```
 */
export function advisoryXactLock(lockClass: number, keys: readonly number[]): string {
  return `SELECT ${keys.map((k) => `pg_advisory_xact_lock(${lockClass | 0}, ${k | 0})`).join(', ')}`
}

/**
 * `SELECT pg_advisory_xact_lock_shared(class, key), ...`: many holders at once, none beside an
 * exclusive {@link advisoryXactLock} on the same key (which waits for them, and makes new ones
 * wait). Several keys are locked in the order given (pass them sorted).
 *
 * ### Examples
 * ```ts
 * advisoryXactLockShared(int32Hash('pgscale.store-tenant:"chunks"'), int32Hash('acme'))
 * // 'SELECT pg_advisory_xact_lock_shared(-1234, 5678)'
 * ```
 */
export function advisoryXactLockShared(lockClass: number, key: number | readonly number[]): string {
  const keys = typeof key === 'number' ? [key] : key
  return `SELECT ${keys.map((k) => `pg_advisory_xact_lock_shared(${lockClass | 0}, ${k | 0})`).join(', ')}`
}
