import { checkProvider, connect, ReplicaSet, type Database } from '../../src/index.js'
import { findLocalBinaries, startLocalCluster, type LocalCluster } from '../../src/bench-kit.js'
import { testTarget } from '../support/test-database.js'
import { modeSuite, READS, ROLLUP, WRITES } from './harness.js'
import type { World } from './writes.js'
import { openReplicated } from './worlds.js'

/**
 * Conformance, mode (c) through read replicas: a primary of this file's own with two streaming
 * standbys (`pg_basebackup -R`), every read through a ReplicaSet while commands pause and resume
 * the standbys' replay at random. Read-your-writes is the check: this client's reads must see
 * every write it completed (the model exactly), and another process reading with
 * `store.consistencyToken(tenant)` too. The app's own source SQL is noted with `noteWrite`.
 */
const local = checkProvider('local')
const target = testTarget()
const skip = !target.url
  ? 'needs streaming standbys of a local server; PGlite (embedded) has none'
  : !local.available
    ? `needs the local provider to start a primary and standbys of its own: ${local.reason}`
    : ''
let primary: LocalCluster | undefined
const handles: Database[] = []
let world: World | undefined

modeSuite(
  {
    name: 'replicas',
    commands: [...READS, ...WRITES, ...ROLLUP, 'replay', 'caughtUp', 'tokenRead', 'transactionWrite', 'poisonedWrite', 'killedWrite'],
    writes: WRITES.filter((k) => k !== 'store.bulkIngest'),
    runs: 10,
    skip,
  },
  async () => {
    const found = findLocalBinaries()
    if (!found.ok) throw new Error('the local provider found no PostgreSQL binaries')
    primary = await startLocalCluster(found.binaries, { fsync: 'off', synchronous_commit: 'off' })
    const owner = await connect(primary.url)
    handles.push(owner)
    const standbys = [await primary.addStandby(), await primary.addStandby()]
    const nodes = await Promise.all(standbys.map((s) => connect(s.url, { requireVector: false })))
    handles.push(...nodes)
    const options = { waitMs: 100, positionCacheMs: 0, retryDownMs: 300 }
    world = await openReplicated(owner, primary.url, new ReplicaSet(owner, nodes, options), nodes, new ReplicaSet(owner, nodes, options))
    return world
  },
  async () => {
    await world?.otherProcess?.close().catch(() => {})
    await world?.store.close().catch(() => {})
    await Promise.all(handles.map((h) => h.close().catch(() => {})))
    await primary?.stop()
  },
)
