import { sql } from 'kysely'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { checkProvider, connect, PgVectorStore, type Database } from '../../src/index.js'
import { findLocalBinaries } from '../../src/bench-kit.js'
import { startLocalCluster, type LocalCluster } from '../../src/bench-kit.js'
import { advisoryXactLock, int32Hash } from '../../src/bench-kit.js'
import { expensesRollup, seedExpenses } from '../rollup/rollup-fixture.js'
import { FaultTally, leftovers, snapshot, terminateWhen } from './fault-support.js'
import { describeUnless } from '../support/skip.js'

/**
 * Fault injection on native PostgreSQL: backends killed in the middle of every write path, the
 * statement and lock timeouts hit, the server restarted between two calls. After each fault the
 * previous state is intact (row counts and checksums), no INVALID index and no advisory lock is
 * left, and the same pool serves the next calls. A cluster of its own, so killing and restarting
 * touch no other test file.
 */
const local = checkProvider('local')
const reason = local.available
  ? ''
  : `needs the local provider (PostgreSQL binaries) to start and restart a cluster of its own: ${local.reason}`
const describeFaults = describeUnless(reason)

const DIM = 8
const TABLES = { f_chunks: 't::text', expenses: 't::text', f_monthly: 't::text' }
let cluster: LocalCluster
let db: Database
let admin: Database
let store: PgVectorStore
const { target, rollup } = expensesRollup('America/Mexico_City', 'f_monthly')
const tally = new FaultTally()

const emb = (i: number) => Array.from({ length: DIM }, (_, d) => Math.sin(i * (d + 1)) + 1.1)
const rowsOf = (tenantId: string, docs: number, perDoc: number, tag = 'v1') =>
  Array.from({ length: docs * perDoc }, (_, i) => ({
    tenantId,
    documentId: `doc-${Math.floor(i / perDoc)}`,
    chunkIndex: i % perDoc,
    content: `${tag} ${tenantId} ${i}`,
    embedding: emb(i),
  }))

/** Holds `lockSql` (trusted test text) in an open admin transaction until the returned release is called. */
async function hold(lockSql: string): Promise<() => Promise<void>> {
  let release!: () => void
  const released = new Promise<void>((r) => (release = r))
  let holding!: () => void
  const held = new Promise<void>((r) => (holding = r))
  const done = admin.transaction(async (trx) => {
    await sql.raw(lockSql).execute(trx)
    holding()
    await released
  })
  await held
  return async () => {
    release()
    await done
  }
}

const docLock = (tenant: string, doc: string) =>
  advisoryXactLock(int32Hash('pgscale.store:"f_chunks"'), [int32Hash(`${tenant}\u0000${doc}`)])
const bucketLock = (tenant: number, month: string) =>
  advisoryXactLock(int32Hash(`pgscale.rollup:${target.qualified}`), [int32Hash(`${tenant}:${month}`)])
const waitingForLock = (text: string) => `wait_event_type = 'Lock' and query ilike '%${text}%'`

/** Runs one fault: state before, the fault, then state after, leftovers, and the pool's next calls. */
async function inject(name: string, fault: () => Promise<void>): Promise<void> {
  const before = await snapshot(admin, TABLES)
  await fault()
  tally.record(name, before, await snapshot(admin, TABLES), await leftovers(admin))
  // The pool (2 connections) serves the next calls: a search, a refresh, a replace.
  expect(await store.forTenant('acme').search(emb(3), { k: 5 })).toHaveLength(5)
  await rollup.refreshAt(db, { tenantId: 1, moment: '2025-06-15T12:00:00Z' })
  await store.forTenant('scratch').replaceDocument('probe', [{ content: 'probe', embedding: emb(1) }])
  await store.forTenant('scratch').deleteDocument('probe')
  tally.healthy++
}

beforeAll(async () => {
  if (!local.available) return
  const found = findLocalBinaries()
  if (!found.ok) throw new Error(found.reason)
  cluster = await startLocalCluster(found.binaries, { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' })
  db = await connect(cluster.url, { maxConnections: 2 })
  admin = await connect(cluster.url, { maxConnections: 3 })
  store = await PgVectorStore.open(db, { table: 'f_chunks', dimensions: DIM })
  await store.bulkIngest([...rowsOf('acme', 20, 15), ...rowsOf('beta', 10, 20)])
  await seedExpenses(db, { seed: 'faults', rows: 3000, tenants: 3, bigTenantRows: 2000, months: 12, end: new Date('2025-12-31T12:00:00Z') })
  await target.create(db)
  await rollup.rebuild(db, { tenantId: 1, since: '2025-01-01', until: '2025-12-31' })
}, 120_000)

afterAll(async () => {
  await db?.close()
  await admin?.close()
  await cluster?.stop()
})

describeFaults('faults', () => {
  it('bulkIngest: the backend killed in the middle of the COPY', async () => {
    await inject('bulkIngest killed', async () => {
      let gate!: () => void
      const opened = new Promise<void>((r) => (gate = r))
      async function* rows() {
        let i = 0
        for (const row of rowsOf('gamma', 50, 20)) {
          if (i++ === 300) await opened
          yield row
        }
      }
      const load = store.bulkIngest(rows()).then(
        () => 'resolved',
        (e: unknown) => e,
      )
      await terminateWhen(admin, `query ilike 'copy %f_chunks%'`)
      gate()
      expect(await load).toBeInstanceOf(Error)
    })
  })

  it('replaceDocument and deleteDocument: killed while waiting for the document lock', async () => {
    for (const call of [
      () =>
        store.forTenant('acme').replaceDocument(
          'doc-3',
          rowsOf('acme', 1, 4, 'v2').map((r) => ({ content: r.content, embedding: r.embedding })),
        ),
      () => store.forTenant('acme').deleteDocument('doc-3'),
    ]) {
      await inject('document write killed', async () => {
        const release = await hold(docLock('acme', 'doc-3'))
        const pending = call().then(
          () => 'resolved',
          (e: unknown) => e,
        )
        await terminateWhen(admin, waitingForLock('pg_advisory_xact_lock'))
        await release()
        expect(await pending).toBeInstanceOf(Error)
      })
    }
  })

  it('rebuild and refreshAt: killed while waiting for their bucket lock', async () => {
    for (const call of [
      () => rollup.rebuild(db, { tenantId: 1, since: '2025-05-01', until: '2025-08-01' }),
      () => rollup.refreshAt(db, { tenantId: 1, moment: '2025-06-15T12:00:00Z' }),
    ]) {
      await inject('rollup write killed', async () => {
        const release = await hold(bucketLock(1, '2025-06-01'))
        const pending = call().then(
          () => 'resolved',
          (e: unknown) => e,
        )
        await terminateWhen(admin, waitingForLock('pg_advisory_xact_lock'))
        await release()
        expect(await pending).toBeInstanceOf(Error)
      })
    }
  })

  it('an index build, plain and concurrent: killed while waiting for its lock; no INVALID index is left', async () => {
    for (const concurrently of [false, true]) {
      await inject(`index build killed (concurrently: ${concurrently})`, async () => {
        // A writer's open transaction: a plain build waits for its SHARE lock, a concurrent one for the writer.
        const release = await hold('lock table f_chunks in row exclusive mode')
        const pending = store.createTenantIndex('acme', { concurrently }).then(
          () => 'resolved',
          (e: unknown) => e,
        )
        await terminateWhen(admin, `wait_event_type = 'Lock' and query ilike 'create index%'`)
        await release()
        expect(await pending).toBeInstanceOf(Error)
      })
    }
  })

  it('statement_timeout and lock_timeout: the call fails, nothing is held, the pool goes on', async () => {
    const timed = await connect({ connectionString: cluster.url, statement_timeout: 300 }, { maxConnections: 1 })
    const lockTimed = await connect({ connectionString: cluster.url, options: '-c lock_timeout=200' }, { maxConnections: 1 })
    try {
      await inject('statement_timeout', async () => {
        const release = await hold(bucketLock(1, '2025-06-01'))
        const err = await rollup.refreshAt(timed, { tenantId: 1, moment: '2025-06-15T12:00:00Z' }).catch((e: unknown) => e)
        await release()
        expect(err).toMatchObject({ sqlState: '57014' })
        await rollup.refreshAt(timed, { tenantId: 1, moment: '2025-06-15T12:00:00Z' })
      })
      const timedStore = await PgVectorStore.open(lockTimed, { table: 'f_chunks', dimensions: DIM })
      await inject('lock_timeout', async () => {
        const release = await hold(docLock('acme', 'doc-4'))
        const err = await timedStore
          .forTenant('acme')
          .replaceDocument('doc-4', [])
          .catch((e: unknown) => e)
        await release()
        expect(err).toMatchObject({ sqlState: '55P03' })
        expect(await timedStore.forTenant('acme').exactSearch(emb(2), { k: 3 })).toHaveLength(3)
      })
    } finally {
      await timed.close()
      await lockTimed.close()
    }
  })

  it('a failed BEGIN batch (a bad setting) rolls back: the one pooled connection is not left in an aborted transaction', async () => {
    const single = await connect(cluster.url, { maxConnections: 1 })
    try {
      const one = await PgVectorStore.open(single, { table: 'f_chunks', dimensions: DIM })
      await inject('failed BEGIN batch', async () => {
        const err = await one.createIndex({ maintenanceWorkMem: '0MB' }).catch((e: unknown) => e)
        expect(err).toMatchObject({ code: 'DATABASE_ERROR', sqlState: '22023' })
        // The same (only) connection answers, outside any transaction.
        const { rows } = await sql<{ xact: string | null }>`select pg_current_xact_id_if_assigned()::text as xact`.execute(single)
        expect(rows[0]!.xact).toBeNull()
        expect(await one.forTenant('acme').search(emb(5), { k: 3 })).toHaveLength(3)
      })
    } finally {
      await single.close()
    }
  })

  it('the server restarted between two calls: the pool reconnects and the next calls succeed', async () => {
    await inject('server restart', async () => {
      expect(await store.forTenant('beta').search(emb(1), { k: 4 })).toHaveLength(4)
      await cluster.restart()
      await admin.close()
      admin = await connect(cluster.url, { maxConnections: 3 })
    })
  })

  it('prints one line for the suite', () => {
    console.log(`[pgscale tests] ${tally.line()}`)
    expect(tally.line()).toMatch(/^faults: \d+ injected, 0 lost, 0 half-written, pool healthy after \d+$/)
    expect(tally.injected).toBe(tally.healthy)
    expect(tally.injected).toBeGreaterThanOrEqual(10)
  })
})
