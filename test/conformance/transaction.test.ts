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
