import { useTestDatabase } from '../support/test-database.js'
import { modeSuite, READS, ROLLUP, WRITES } from './harness.js'
import { openPlain } from './worlds.js'

/**
 * Conformance, mode (a) plain: the store and the rollup on the test database as an app opens them,
 * every write and read of the public API in random sequences checked against the model, with two
 * faults as commands: a write with a row the server refuses mid-statement (all or nothing), and a
 * write whose backend is killed while it waits on its DML (server only: PGlite has one connection).
 */
const t = useTestDatabase()
const server = Boolean(t.target.url)

modeSuite(
  {
    name: 'plain',
    commands: [...READS, ...WRITES, ...ROLLUP, 'poisonedWrite', ...(server ? ['killedWrite'] : [])],
    writes: WRITES,
    runs: server ? 12 : 6,
    ...(server ? {} : { leftOut: { kinds: ['killedWrite'], reason: 'PGlite has one connection: nothing can kill its backend' } }),
  },
  () => openPlain('plain', t.db, t.db, t.directUrl),
)
