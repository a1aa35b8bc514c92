import { randomBytes } from 'node:crypto'
import { sql, type Kysely } from 'kysely'
import { DatabaseError } from '../errors.js'
import { SQLSTATE } from '../sql/sqlstate.js'

/** The table of leases: one row per resource held, with its holder and when the lease runs out; one per schema. */
export const LEASE_TABLE = 'pgscale_lease'

/**
 * The schema whose lease table holds `resource`: the schema of the qualified name in it
 * (`pgscale.maintenance:"rag"."chunks"` → `rag`), `public` for an unqualified one — beside the
 * tables it guards and their bookkeeping, never resolved through `search_path`.
 *
 * ### Examples
 * ```ts
 * leaseSchema('pgscale.rebuild:"rag"."chunks_t_42"') // 'rag'
 * ```
 */
export function leaseSchema(resource: string): string {
  return /:"([a-z_][a-z0-9_]*)"\./.exec(resource)?.[1] ?? 'public'
}

/** Options of {@link withLease}. */
export interface LeaseOptions {
  /** The schema of the lease table. Default: {@link leaseSchema} of the resource. */
  schema?: string
  /** How long a lease lasts unless renewed; a holder that dies frees it after this. Default 60 s. */
  leaseSeconds?: number
  /** How often a waiter looks again. Default 200 ms. */
  pollMs?: number
}

/**
 * Creates `schema`'s `pgscale_lease` if missing (two at once both succeed); `migrateObject` makes
 * it with the schema's version table, so maintenance finds it there.
 *
 * ### Examples
 * ```ts
 * await ensureLeaseTable(db, 'rag')
 * ```
 */
export async function ensureLeaseTable(db: Kysely<any>, schema = 'public'): Promise<void> {
  const table = sql.id(schema, LEASE_TABLE)
  const { rows } = await sql<{ present: boolean }>`select to_regclass(${`"${schema}"."${LEASE_TABLE}"`}) is not null as present`.execute(db)
  if (rows[0]?.present) return
  await sql`create table if not exists ${table} (
      resource text primary key,
      holder text not null,
      expires_at timestamptz not null
    )`
    .execute(db)
    .catch((err: unknown) => {
      // Two creating it at once: one wins, the other sees 23505/42P07.
      const state = err instanceof DatabaseError ? err.sqlState : (err as { code?: string }).code
      if (state !== SQLSTATE.uniqueViolation && state !== SQLSTATE.duplicateTable) throw err
    })
}

/**
 * Runs `work` holding a lease on `resource`: a row in `pgscale_lease` claimed with one
 * autocommit statement (free, or its lease run out), renewed while `work` runs, deleted after.
 * Unlike a session-level advisory lock it depends on no session, so it holds through a
 * transaction pooler (PgBouncer), where consecutive statements may run on different server
 * connections and a session lock's unlock can land on another backend. Waiters poll: a
 * statement that waited would hold a snapshot, which `CREATE INDEX CONCURRENTLY` in the holder
 * would wait for. A holder that dies frees the resource when its lease runs out.
 *
 * ### Examples
 * ```ts
 * await withLease(db, 'maintenance:"rag_chunks"', () => sql`analyze rag_chunks`.execute(db))
 * ```
 */
export async function withLease<T>(db: Kysely<any>, resource: string, work: () => Promise<T>, options: LeaseOptions = {}): Promise<T> {
  const seconds = options.leaseSeconds ?? 60
  const holder = randomBytes(8).toString('hex')
  const schema = options.schema ?? leaseSchema(resource)
  const table = sql.id(schema, LEASE_TABLE)
  await ensureLeaseTable(db, schema)
  for (;;) {
    const { rows } = await sql<{ holder: string }>`
      insert into ${table} (resource, holder, expires_at)
      values (${resource}, ${holder}, clock_timestamp() + make_interval(secs => ${seconds}))
      on conflict (resource) do update set holder = excluded.holder, expires_at = excluded.expires_at
        where ${table}.expires_at < clock_timestamp()
      returning holder`.execute(db)
    if (rows[0]?.holder === holder) break
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 200))
  }
  const renew = setInterval(
    () =>
      void sql`update ${table} set expires_at = clock_timestamp() + make_interval(secs => ${seconds})
        where resource = ${resource} and holder = ${holder}`
        .execute(db)
        .catch(() => {}),
    (seconds * 1000) / 3,
  )
  renew.unref()
  try {
    return await work()
  } finally {
    clearInterval(renew)
    await sql`delete from ${table} where resource = ${resource} and holder = ${holder}`.execute(db).catch(() => {})
  }
}
