import { randomBytes } from 'node:crypto'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterAll, describe, expect } from 'vitest'
import { connect, ExtensionMissingError, PgVectorStore, type Database } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { testTarget, withDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * An app's own handle on a database where nobody created the `vector` extension: the store creates
 * it where the role may, as `connect()` does; where the role may not, a typed error names the fix
 * and nothing is written.
 */
const target = testTarget()
const cleanups: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {})
})

/** A new database with no extension in it, and an admin handle that does not create one. */
async function freshDatabase(): Promise<{ url: string; admin: Database }> {
  const admin = await connect(target.url!, { maxConnections: 1, requireVector: false })
  const name = `pgscale_noext_${randomBytes(5).toString('hex')}`
  await sql`create database ${sql.id(name)}`.execute(admin)
  cleanups.push(async () => {
    await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin)
    await admin.close()
  })
  const url = withDatabase(target.url!, name)
  const inside = await connect(url, { maxConnections: 1, requireVector: false })
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname = 'vector'`.execute(inside)
  expect(rows[0]!.n).toBe(0)
  await inside.close()
  return { url, admin }
}

function appPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  pool.on('error', () => {})
  cleanups.push(() => pool.end())
  return pool
}

describe('an adopted handle on a database without the vector extension', () => {
  itWithServer(target)("the app's pg.Pool: open creates the extension, and the store works", async () => {
    const { url } = await freshDatabase()
    const pool = appPool(url)
    const store = await PgVectorStore.open(pool, { table: 'noext_pool', dimensions: 4 })
    await store.forTenant('t').replaceDocument('d', [{ content: 'x', embedding: axisVector(4, 0) }])
    expect(await store.forTenant('t').search(axisVector(4, 0), { k: 1 })).toHaveLength(1)
    const { rows } = await pool.query<{ v: string }>(`select extversion as v from pg_extension where extname = 'vector'`)
    expect(rows[0]?.v).toMatch(/^0\.\d+\.\d+/)
  })

  itWithServer(target)("the app's Kysely: open creates the extension", async () => {
    const { url } = await freshDatabase()
    const app = new Kysely<any>({ dialect: new PostgresDialect({ pool: appPool(url) }) })
    const store = await PgVectorStore.open(app, { table: 'noext_kysely', dimensions: 4 })
    expect(await store.forTenant('t').exactSearch(axisVector(4, 1), { k: 1 })).toEqual([])
  })

  itWithServer(target)('a role that may not create it: an ExtensionMissingError naming the fix, and no table', async () => {
    const { url, admin } = await freshDatabase()
    const role = `pgscale_app_${randomBytes(4).toString('hex')}`
    const password = randomBytes(12).toString('hex')
    const inside = await connect(url, { maxConnections: 1, requireVector: false })
    cleanups.push(async () => {
      await inside.close()
      await sql
        .raw(`drop owned by ${role}`)
        .execute(admin)
        .catch(() => {})
      await sql.raw(`drop role if exists ${role}`).execute(admin)
    })
    await sql.raw(`create role ${role} login password '${password}'`).execute(admin)
    // The app's role may create tables in public, but not extensions (no CREATE on the database, not its owner).
    await sql.raw(`grant create, usage on schema public to ${role}`).execute(inside)
    const u = new URL(url)
    u.username = role
    u.password = password
    const pool = appPool(u.toString())
    const err = await PgVectorStore.open(pool, { table: 'noext_denied', dimensions: 4 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ExtensionMissingError)
    expect((err as Error).message).toContain('CREATE EXTENSION vector')
    expect((err as Error).message).toContain('vectorExtensionMigration')
    const { rows } = await sql<{ t: string | null }>`select to_regclass('public.noext_denied')::text as t`.execute(inside)
    expect(rows[0]!.t).toBeNull()
  })
})
