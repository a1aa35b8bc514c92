import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, inject } from 'vitest'
import { connect, type Database } from '../../src/index.js'
import { createCitusDatabase } from './citus-database.js'
import { embeddedTestDatabase } from './pglite-snapshot.js'
import type { TestTarget } from './test-target.js'

/** A database of a test file's own: fresh, isolated from other files, dropped afterwards. */
export interface TestDatabase {
  /** The handle, with pgvector installed. */
  readonly db: Database
  /** Its URL (absent on `embedded`); a pooler's when the run goes through one. */
  readonly url?: string
  /** Its URL on the server itself, bypassing a pooler (the same as `url` without one). */
  readonly directUrl?: string
  /** What the run was provisioned with. */
  readonly target: TestTarget
}

/** The global setup's target. */
export function testTarget(): TestTarget {
  return inject('pgscaleTarget')
}

/** A connection URL for another database on the same server. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

/**
 * Gives the calling test file a database of its own: on a server, `CREATE DATABASE` with a random
 * name (dropped in `afterAll`); on a Citus coordinator, that database on every node with the
 * workers registered; on `embedded`, a PGlite instance of its own (loaded from the run's snapshot of a
 * fresh one: pglite-snapshot.ts). Call at the top of a file.
 *
 * ### Examples
 * ```ts
 * const t = useTestDatabase()
 * it('works', async () => { await sql`select 1`.execute(t.db) })
 * ```
 */
/**
 * How long a file's database may take to start or go: an embedded PGlite boots in seconds on a
 * quiet machine, but with a file per core on 2 busy cores it took over 60 s (whole files failed).
 */
const SETUP_TIMEOUT_MS = 180_000

export function useTestDatabase(): TestDatabase {
  const target = testTarget()
  const state: { db?: Database; url?: string; drop?: () => Promise<void> } = {}

  beforeAll(async () => {
    if (!target.url) {
      // Closing the handle (afterAll) closes its PGlite.
      state.db = await embeddedTestDatabase(target.pgliteSnapshot)
      return
    }
    const name = `pgscale_test_${randomBytes(6).toString('hex')}`
    if (target.citusWorkers) {
      state.drop = await createCitusDatabase(target.url, name)
      state.url = withDatabase(target.url, name)
      state.db = await connect(state.url)
      return
    }
    // Databases are made and dropped on the server itself, not through a pooler in front of it.
    const admin = await connect(target.directUrl ?? target.url, { maxConnections: 1, requireVector: false })
    await sql`create database ${sql.id(name)}`.execute(admin)
    state.url = withDatabase(target.url, name)
    state.db = await connect(state.url, target.pooler ? { pooler: 'transaction' } : {})
    state.drop = async () => {
      await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin)
      await admin.close()
    }
  }, SETUP_TIMEOUT_MS)

  afterAll(async () => {
    await state.db?.close().catch(() => {})
    await state.drop?.()
  }, SETUP_TIMEOUT_MS)

  return {
    get db() {
      if (!state.db) throw new Error('useTestDatabase(): the database is ready only inside tests and hooks')
      return state.db
    },
    get url() {
      return state.url
    },
    get directUrl() {
      return state.url && target.directUrl ? withDatabase(target.directUrl, new URL(state.url).pathname.slice(1)) : state.url
    },
    target,
  }
}
