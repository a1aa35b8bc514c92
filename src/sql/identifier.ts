import { createHash } from 'node:crypto'
import { InvalidIdentifierError } from '../errors.js'

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Checks that `name` is a plain, unquoted-safe SQL identifier and returns it. pgscale never
 * interpolates a name that has not passed through here (values always go as parameters).
 *
 * ### Examples
 * ```ts
 * assertIdentifier('rag_chunks', 'table name') // 'rag_chunks'
 * assertIdentifier('x; drop table y', 'table name') // throws InvalidIdentifierError
 * ```
 */
export function assertIdentifier(name: unknown, what: string): string {
  if (typeof name !== 'string' || !IDENTIFIER.test(name)) {
    throw new InvalidIdentifierError(String(name), what)
  }
  return name
}

/**
 * Checks a possibly schema-qualified name (`table` or `schema.table`) and returns its parts.
 *
 * ### Examples
 * ```ts
 * assertQualifiedName('analytics.expenses', 'source table') // { schema: 'analytics', name: 'expenses' }
 * ```
 */
export function assertQualifiedName(name: unknown, what: string): { schema?: string; name: string } {
  if (typeof name !== 'string') throw new InvalidIdentifierError(String(name), what)
  const parts = name.split('.')
  if (parts.length === 1) return { name: assertIdentifier(parts[0], what) }
  if (parts.length === 2) {
    return { schema: assertIdentifier(parts[0], what), name: assertIdentifier(parts[1], what) }
  }
  throw new InvalidIdentifierError(name, what)
}

const MAX_IDENTIFIER = 63

/** A name that fits PostgreSQL's 63-byte identifiers: `base_suffix`, `base` shortened with a hash if needed. */
export function fitIdentifier(base: string, suffix: string): string {
  const name = `${base}_${suffix}`
  if (name.length <= MAX_IDENTIFIER) return name
  const hash = shortHash(base, 8)
  return `${base.slice(0, MAX_IDENTIFIER - suffix.length - hash.length - 2)}_${hash}_${suffix}`
}

/** A stable lower-case hex hash of `value`, `length` characters long. */
export function shortHash(value: string, length: number): string {
  return createHash('sha256').update(value).digest('hex').slice(0, length)
}
