import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import {
  connect,
  connectPglite,
  ConnectionError,
  ExtensionMissingError,
  InvalidArgumentError,
  provision,
  ProviderUnavailableError,
  type ProviderName,
} from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase, withDatabase } from '../support/test-database.js'

const t = useTestDatabase()

describe('provision and connect fail with a clear PgScaleError naming the fix', () => {
  it('an unknown provider name', async () => {
    const err = await provision({ provider: 'postgress' as ProviderName }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidArgumentError)
    expect((err as Error).message).toMatch(/auto, url, local, container, embedded/)
  })

  it('local without binaries', async () => {
    const err = await provision({ provider: 'local', pgBin: '/nonexistent/bin' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ProviderUnavailableError)
    expect(err).toMatchObject({ code: 'PROVIDER_UNAVAILABLE', provider: 'local' })
    expect((err as Error).message).toMatch(/npm run db:install/)
  })

  it('url without a URL', async () => {
    const saved = process.env.DATABASE_URL
    delete process.env.DATABASE_URL
    try {
      const err = await provision({ provider: 'url' }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ProviderUnavailableError)
      expect((err as Error).message).toMatch(/DATABASE_URL/)
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved
    }
  })

  it('auto with a configured URL that fails is that error, never a fall-through to another provider', async () => {
    const refused = 'postgres://app:secret@127.0.0.1:1/app'
    const err = await provision({ url: refused }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ConnectionError)
    expect((err as Error).message).toMatch(/127\.0\.0\.1:1/)
    expect((err as Error).message).not.toMatch(/secret/)
    const saved = process.env.DATABASE_URL
    process.env.DATABASE_URL = refused
    try {
      await expect(provision()).rejects.toBeInstanceOf(ConnectionError)
    } finally {
      if (saved === undefined) delete process.env.DATABASE_URL
      else process.env.DATABASE_URL = saved
    }
  })

  itWithServer(t.target)('auto with a URL whose password is wrong: an error, not a throwaway cluster', async () => {
    const url = new URL(t.target.url!)
    url.password = 'wrong-password'
    const err = await provision({ url: url.toString() }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ConnectionError)
    expect((err as Error).message).toMatch(/28P01|password/)
  })

  it('a string that is not a postgres URL', async () => {
    await expect(connect('mysql://localhost/x')).rejects.toBeInstanceOf(InvalidArgumentError)
  })

  it('a server that does not answer', async () => {
    const err = await connect('postgres://nobody@127.0.0.1:1/none').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ConnectionError)
    expect((err as Error).message).toMatch(/127\.0\.0\.1:1/)
  })

  it('a server without pgvector (PGlite started without the extension)', async () => {
    const { PGlite } = await import('@electric-sql/pglite')
    // Without the extension bundle: loaded from the run's snapshot of a fresh instance when there is one (no initdb).
    const snapshot = t.target.pgliteSnapshot
    const pglite = await PGlite.create(snapshot ? { loadDataDir: new Blob([readFileSync(snapshot)]) } : {})
    const err = await connectPglite(pglite).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ExtensionMissingError)
    expect((err as Error).message).toMatch(/npm run db:install/)
  })

  itWithServer(t.target)('a URL whose role may not create pgvector in a database that lacks it', async () => {
    const role = `pgscale_novector_${randomBytes(4).toString('hex')}`
    const database = `${role}_db`
    const password = randomBytes(8).toString('hex')
    await sql`create role ${sql.id(role)} login nosuperuser password ${sql.lit(password)}`.execute(t.db)
    await sql`create database ${sql.id(database)} owner ${sql.id(role)}`.execute(t.db)
    try {
      const url = new URL(withDatabase(t.target.url!, database))
      url.username = role
      url.password = password
      const err = await connect(url.toString()).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ExtensionMissingError)
      expect((err as Error).message).toMatch(/CREATE EXTENSION vector/)
    } finally {
      await sql`drop database if exists ${sql.id(database)} with (force)`.execute(t.db)
      await sql`drop role if exists ${sql.id(role)}`.execute(t.db)
    }
  })
})
