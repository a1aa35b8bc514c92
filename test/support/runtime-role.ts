import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll } from 'vitest'
import { connect, type Database } from '../../src/index.js'
import type { TestDatabase } from './test-database.js'

/** A role with DML rights only, as production apps run: how a test acts as it. */
export interface RuntimeRole {
  /** The role's name (unique per test file: roles are cluster-wide). */
  readonly name: string
  /** Creates the role (before the migrations that grant it rights). */
  create(): Promise<void>
  /** A URL that logs in as the role (servers only). */
  url(): string
  /** Runs `work` as the role: on a server over a connection that logs in as it; on PGlite, `SET ROLE` on its one session. */
  as<T>(work: (db: Database) => Promise<T>): Promise<T>
}

/**
 * Creates a login role with no rights of its own (`NOSUPERUSER NOCREATEDB NOCREATEROLE`, no
 * `CREATE` on any schema), to be granted DML by the migrations under test. Dropped after the file.
 *
 * ### Examples
 * ```ts
 * const app = useRuntimeRole(t)
 * await app.as((db) => PgVectorStore.open(db, config))
 * ```
 */
export function useRuntimeRole(t: TestDatabase, prefix = 'app_rt'): RuntimeRole {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const password = randomBytes(12).toString('hex')
  let created = false
  let server: Database | undefined
  const create = async () => {
    if (created) return
    await sql.raw(`create role ${name} login password '${password}' nosuperuser nocreatedb nocreaterole`).execute(t.db)
    // PostgreSQL 15 takes CREATE on schema public from PUBLIC; say so anyway (PGlite is 17).
    await sql.raw(`revoke create on schema public from public`).execute(t.db)
    created = true
  }
  afterAll(async () => {
    await server?.close().catch(() => {})
    if (!created) return
    await sql
      .raw(`drop owned by ${name}`)
      .execute(t.db)
      .catch(() => {})
    await sql
      .raw(`drop role if exists ${name}`)
      .execute(t.db)
      .catch(() => {})
  })
  return {
    name,
    create,
    url() {
      if (!t.url) throw new Error('a runtime role has a URL on a server only')
      const u = new URL(t.url)
      u.username = name
      u.password = password
      return u.toString()
    },
    async as<T>(work: (db: Database) => Promise<T>): Promise<T> {
      await create()
      if (t.url) {
        if (!server) {
          server = await connect(this.url(), { maxConnections: 4, requireVector: false })
        }
        return work(server)
      }
      await sql.raw(`set role ${name}`).execute(t.db)
      try {
        return await work(t.db)
      } finally {
        await sql`reset role`.execute(t.db)
      }
    },
  }
}
