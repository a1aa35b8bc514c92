import { connect, type Database } from '../../src/index.js'
import { startPgBouncer, type PgBouncer } from '../../src/bench-kit.js'
import { NEEDS_SERVER } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { modeSuite, READS, ROLLUP, WRITES } from './harness.js'
import { openPlain } from './worlds.js'

/**
 * Conformance, mode (e) through PgBouncer in transaction mode (3 server connections): the store
 * and the rollup opened with `pooler: 'transaction'` on a PgBouncer of this file's own (or the
 * run's, with PGSCALE_TEST_PGBOUNCER=1); the owner's resets and the faults go to the server directly.
 */
const t = useTestDatabase()
let bouncer: PgBouncer | undefined
let pooled: Database | undefined
let direct: Database | undefined

modeSuite(
  {
    name: 'pgbouncer',
    commands: [...READS, ...WRITES, ...ROLLUP, 'poisonedWrite', 'killedWrite'],
    writes: WRITES,
    runs: 8,
    ...(t.target.url ? {} : { skip: NEEDS_SERVER }),
  },
  async () => {
    if (t.target.pooler) pooled = t.db
    else {
      bouncer = await startPgBouncer({ upstreamUrl: t.url!, poolMode: 'transaction', poolSize: 3 })
      pooled = await connect(bouncer.url, { pooler: 'transaction' })
    }
    // The owner's resets bypass the pooler (the test database's own handle goes through it when the run does).
    if (t.target.pooler) direct = await connect(t.directUrl!)
    return openPlain('pgbouncer', direct ?? t.db, pooled, t.directUrl)
  },
  async () => {
    await direct?.close()
    if (!t.target.pooler) await pooled?.close()
    await bouncer?.stop()
  },
)
