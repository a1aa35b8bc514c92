import { sql, type Kysely } from 'kysely'
import { PrivilegeError } from '../../errors.js'

/**
 * Refuses, before anything changes, an operation that needs DDL on `relation` (an index build, a
 * trigger) when this role does not own it (nor belongs to its owner role): a {@link PrivilegeError}
 * naming the operation and the owner. A relation that does not exist passes (the operation
 * creates it, or fails on its own).
 *
 * ### Examples
 * ```ts
 * await assertMayAlter(db, '"rag_chunks"', 'optimize', 'builds and drops HNSW indexes') // as the app's runtime role: PrivilegeError
 * ```
 */
export async function assertMayAlter(db: Kysely<any>, relation: string, operation: string, what: string): Promise<void> {
  const { rows } = await sql<{ owner: string; may: boolean }>`
    select c.relowner::regrole::text as owner, pg_has_role(current_user, c.relowner, 'USAGE') as may
    from pg_class c where c.oid = to_regclass(${relation})`.execute(db)
  const row = rows[0]
  if (!row || row.may) return
  throw new PrivilegeError(
    operation,
    row.owner,
    `${operation} ${what} on ${relation}, which only its owner (${row.owner}) may do; this role (the app's runtime role?) may not. ` +
      `Run it as ${row.owner}, e.g. from \`npx pgscale\` in a deploy step or a cron job; nothing was changed`,
  )
}
