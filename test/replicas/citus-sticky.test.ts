import { sql } from 'kysely'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { connect, PgVectorStore, ReplicaSet, type Database, type ReplicaOptions } from '../../src/index.js'
import { findLocalBinaries, startCitusCluster, type CitusCluster, type LocalCluster } from '../../src/bench-kit.js'
import { CITUS_OPT_IN, describeUnless } from '../support/skip.js'
import { axisVector } from '../support/vectors.js'

/**
 * Read-your-writes on Citus (opt-in: PGSCALE_TEST_CITUS_WORKERS=N with Citus installed, a server
 * provider). WAL positions are per node on Citus, so the coordinator's position says nothing about
 * the shards a write touched: after a write of a tenant, its reads stay on the (primary)
 * coordinator for `stickyMs`, counted as `toPrimary.sticky`; other tenants' reads go to the
 * replica. The replica here is a real hot standby of the coordinator (`pg_basebackup -R`) of a
 * coordinator + workers started by this file with the local provider's startCitusCluster.
 */
const target = inject('pgscaleTarget')
const found = findLocalBinaries()
const workers = Number(process.env.PGSCALE_TEST_CITUS_WORKERS ?? 0)
const citusRun = workers > 0 && target.provider !== 'embedded' && found.ok && found.binaries.citusVersion !== undefined
const DIM = 8
const config = { table: 'sticky_chunks', dimensions: DIM, distributed: { shardCount: 4 } } as const

const doc = (n: number) => [{ content: `version ${n}`, embedding: axisVector(DIM, n % DIM), metadata: { n } }]

describeUnless(!citusRun && CITUS_OPT_IN)('read replicas on Citus: sticky to the coordinator after a write (opt-in)', () => {
  let cluster: CitusCluster
  let standby: LocalCluster
  let db: Database
  let replica: Database

  beforeAll(async () => {
    if (!found.ok) return
    cluster = await startCitusCluster(found.binaries, { fsync: 'off', synchronous_commit: 'off' }, Math.min(workers, 2))
    db = await connect(cluster.url)
    const store = await PgVectorStore.open(db, config)
    await store.bulkIngest(
      Array.from({ length: 40 }, (_, i) => ({
        tenantId: i < 20 ? 'acme' : 'globex',
        documentId: `d${i}`,
        chunkIndex: 0,
        content: `chunk ${i}`,
        embedding: axisVector(DIM, i % DIM, 0.1),
      })),
    )
    await store.close()
    standby = await cluster.coordinator.addStandby()
    replica = await connect(standby.url, { requireVector: false })
  }, 180_000)
  afterAll(async () => {
    await replica?.close().catch(() => {})
    await db?.close().catch(() => {})
    // The coordinator stops its standby first.
    await cluster?.stop()
  }, 180_000)

  async function open(options: ReplicaOptions) {
    const replicas = new ReplicaSet(db, [replica], { positionCacheMs: 0, ...options })
    return { replicas, store: await PgVectorStore.open(db, { ...config, replicas }) }
  }

  it('the primary is a Citus coordinator and the replica a hot standby of it, with the distributed table', async () => {
    expect(await db.hasCitus()).toBe(true)
    const { rows } = await sql<{ recovery: boolean; dist: number }>`
      select pg_is_in_recovery() as recovery, (select count(*)::int from pg_dist_partition where logicalrelid = 'sticky_chunks'::regclass) as dist`.execute(
      replica,
    )
    expect(rows[0]).toEqual({ recovery: true, dist: 1 })
  })

  it('with no write in this process, a tenant is read on the hot-standby coordinator', async () => {
    const { replicas, store } = await open({ stickyMs: 60_000 })
    const globex = store.forTenant('globex')
    for (let i = 0; i < 5; i++) expect(await globex.search(axisVector(DIM, i % DIM), { k: 3 })).toHaveLength(3)
    expect(await globex.count()).toBe(20)
    const stats = replicas.stats()
    expect(stats.replicaReads).toBe(6)
    expect(stats.primaryReads).toBe(0)
    expect(stats.replicas[0]!.failures).toBe(0)
    await store.close()
  })

  it("after a write, the tenant's reads stick to the coordinator (counted) and see it; another tenant stays on the replica", async () => {
    const { replicas, store } = await open({ stickyMs: 60_000, waitMs: 5_000 })
    const acme = store.forTenant('acme')
    await acme.replaceDocument('live', doc(1))
    for (let i = 0; i < 3; i++) {
      const [hit] = await acme.search(axisVector(DIM, 1), { k: 1, filter: { n: 1 } })
      expect(hit?.content).toBe('version 1')
    }
    expect((await acme.getChunks(['live']))[0]?.content).toBe('version 1')
    const afterA = replicas.stats()
    expect(afterA.toPrimary.sticky).toBe(4)
    expect(afterA.primaryReads).toBe(4)
    // Sticky by time, not by WAL position: no read waited for replay or was sent to the primary as behind.
    expect(afterA.toPrimary.behindWrite).toBe(0)
    expect(afterA.waitedForReplay).toBe(0)
    expect(afterA.replicaReads).toBe(0)
    // globex was not written here: its reads are not held to the coordinator.
    for (let i = 0; i < 3; i++) expect(await store.forTenant('globex').search(axisVector(DIM, 2), { k: 2 })).toHaveLength(2)
    const afterB = replicas.stats()
    expect(afterB.replicaReads).toBe(3)
    expect(afterB.toPrimary.sticky).toBe(4)
    // Still within stickyMs: acme's next write and read stay on the coordinator.
    await acme.replaceDocument('live', doc(2))
    expect((await acme.find({ filter: { n: 2 } })).rows[0]?.content).toBe('version 2')
    expect(replicas.stats().toPrimary.sticky).toBe(5)
    await store.close()
  })

  it('with a tiny stickyMs, once it has passed, the written tenant is read on the replica again (after its replay)', async () => {
    const { replicas, store } = await open({ stickyMs: 1, waitMs: 5_000 })
    const acme = store.forTenant('acme')
    await acme.replaceDocument('live', doc(3))
    await new Promise((resolve) => setTimeout(resolve, 20))
    const [hit] = await acme.search(axisVector(DIM, 3), { k: 1, filter: { n: 3 } })
    expect(hit?.content).toBe('version 3')
    expect((await acme.getChunks(['live']))[0]?.content).toBe('version 3')
    const stats = replicas.stats()
    expect(stats.toPrimary.sticky).toBe(0)
    expect(stats.replicaReads).toBe(2)
    expect(stats.replicas[0]!.reads).toBe(2)
    await store.close()
  })

  it("with its replay paused, the standby coordinator still reads the workers' shards as they are now (why its own WAL position cannot be the test)", async () => {
    const { replicas, store } = await open({ stickyMs: 60_000 })
    await sql`select pg_wal_replay_pause()`.execute(replica)
    try {
      await store.forTenant('acme').replaceDocument('live', doc(4))
      // The write went to a worker's shard; the coordinator's replay position is not what a read of it depends on.
      const { rows } = await sql<{ content: string }>`
        select content from sticky_chunks where tenant_id = 'acme' and document_id = 'live'`.execute(replica)
      expect(rows.map((r) => r.content)).toEqual(['version 4'])
      // Routing does not rely on that either: the written tenant is read on the coordinator.
      expect((await store.forTenant('acme').getChunks(['live']))[0]?.content).toBe('version 4')
      expect(replicas.stats().toPrimary.sticky).toBe(1)
    } finally {
      await sql`select pg_wal_replay_resume()`.execute(replica)
    }
    await store.close()
  })
})
