import { expect } from 'vitest'
import { PgVectorStore } from '../../src/index.js'
import { itUnless } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { modeSuite, READS, ROLLUP, WRITES } from './harness.js'
import { openTransactional } from './worlds.js'

/**
 * Conformance, mode (b) inside app transactions: every tenant write goes through
 * `forTenant(t, { transaction: trx })` in a Kysely transaction of the app that then commits
 * (`store.bulkIngest`, which takes no transaction, runs beside it); the app's source SQL in its own
 * transaction. Besides: a write the app rolls back (seen inside, gone after), a poisoned write that
 * rolls back to its savepoint while the app commits, and a killed backend (server only).
 */
const t = useTestDatabase()
const server = Boolean(t.target.url)

modeSuite(
  {
    name: 'transaction',
    commands: [...READS, ...WRITES, ...ROLLUP, 'rolledBackWrite', 'poisonedWrite', ...(server ? ['killedWrite'] : [])],
    writes: WRITES,
    runs: server ? 10 : 6,
    ...(server ? {} : { leftOut: { kinds: ['killedWrite'], reason: 'PGlite has one connection: nothing can kill its backend' } }),
  },
  () => openTransactional(t.db, t.directUrl),
)

// Found by this mode on PGlite (a hung `rolled back: upsertChunks(…, deleteWhere)`), fixed in 9e99852: the
// store's cache of declared metadata fields lives 10 s and was reloaded through the store's own handle,
// not the app's transaction; on PGlite's one session that reload waited for the transaction that waited for it.
const PGLITE_ONLY = server ? 'the deadlock needed a single session (PGlite); a server has another connection' : ''
itUnless(PGLITE_ONLY)(
  'inside an app transaction on PGlite, a filtered call 10 s after the store listed its metadata fields answers (no hang)',
  async () => {
    const store = await PgVectorStore.open(t.db, { table: 'conf_fields_ttl', dimensions: 4 })
    expect(await store.forTenant('acme').count({ kind: 'a' })).toBe(0) // lists the fields
    await new Promise((r) => setTimeout(r, 10_500))
    const outcome = await Promise.race([
      t.db.transaction().execute((trx) => store.forTenant('acme', { transaction: trx }).count({ kind: 'a' })),
      new Promise((r) => setTimeout(() => r('hung for 5 s'), 5_000)),
    ])
    expect(outcome).toBe(0)
  },
  30_000,
)
