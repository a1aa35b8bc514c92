import { sql } from 'kysely'
import { describe, expect } from 'vitest'
import { checkProvider, connect, ConnectionError, provision } from '../../src/index.js'
import { itUnless } from '../support/skip.js'

/**
 * The local provider's cluster is not open to every local user (a generated password), and its
 * signal handlers exist only while a cluster runs and step aside when the host app has its own.
 */
const local = checkProvider('local')
const itLocal = itUnless(!local.available && `needs the local provider: ${local.reason}`)

describe('local provider', () => {
  itLocal('the cluster wants its generated password; without it the connection is refused', async () => {
    const { url, stop } = await provision({ provider: 'local' })
    try {
      const u = new URL(url!)
      expect(u.password).toMatch(/^[0-9a-f]{36}$/)
      u.password = ''
      const err = await connect(u.toString()).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ConnectionError)
      expect((err as Error).message).toMatch(/password|28P01|SASL/)
    } finally {
      await stop()
    }
  })

  itLocal('signal handlers are installed while a cluster runs, removed after, and step aside for the host app', async () => {
    const before = { SIGINT: process.listenerCount('SIGINT'), SIGTERM: process.listenerCount('SIGTERM') }
    const { db, stop } = await provision({ provider: 'local' })
    try {
      expect(process.listenerCount('SIGTERM')).toBe(before.SIGTERM + 1)
      let hostShutdown = 0
      const host = () => void hostShutdown++
      process.on('SIGTERM', host)
      try {
        process.emit('SIGTERM')
        // The host's graceful shutdown ran, the process did not exit, and the database still answers.
        expect(hostShutdown).toBe(1)
        const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db)
        expect(rows[0]!.one).toBe(1)
      } finally {
        process.off('SIGTERM', host)
      }
    } finally {
      await stop()
    }
    expect({ SIGINT: process.listenerCount('SIGINT'), SIGTERM: process.listenerCount('SIGTERM') }).toEqual(before)
  })
})
