import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  checkProvider,
  connect,
  fromToken,
  MonthlyRollup,
  PgVectorStore,
  ReplicaSet,
  rollupTable,
  TenantStore,
  type Database,
} from '../../src/index.js'
import { findLocalBinaries, fleetTable, startLocalCluster, type LocalCluster } from '../../src/bench-kit.js'
import { itUnless } from '../support/skip.js'
import { axisVector } from '../support/vectors.js'

/**
 * The write journal (#41): every committed write of the store and the rollup is noted for the
 * replicas' read-your-writes — store-level bulk ingest, writes in the app's transaction (noted
 * once the primary says they committed), rollup refreshes, rebuilds, drains and dirty marks,
 * number tenants — and the replicas fail fast: a hung standby costs one read deadline, a down
 * standby at start-up is passed over, a standby replaced at the same address serves again.
 * Each case reads through a standby whose replay is paused: a read that is served by it misses
 * the write.
 */
const local = checkProvider('local')
const needsLocal = itUnless(!local.available && `needs the local provider to start a primary and a standby of its own: ${local.reason}`)
const DIM = 4
let primary: LocalCluster
let standby: LocalCluster
let db: Database
let node: Database
const config = { table: 'journal_chunks', dimensions: DIM, querySample: false as const }
const chunk = (i: number) => ({ content: `chunk ${i}`, embedding: axisVector(DIM, i % DIM, 0.1) })

const pause = () => sql`select pg_wal_replay_pause()`.execute(node)
const resume = () => sql`select pg_wal_replay_resume()`.execute(node)
const primaryPosition = async () =>
  fromToken(`pgscale:wal:${(await sql<{ l: string }>`select pg_current_wal_insert_lsn()::text as l`.execute(db)).rows[0]!.l}`)

beforeAll(async () => {
  if (!local.available) return
  const found = findLocalBinaries()
  if (!found.ok) return
  primary = await startLocalCluster(found.binaries, { fsync: 'off', synchronous_commit: 'off' })
  db = await connect(primary.url)
  const store = await PgVectorStore.open(db, config)
  await store.forTenant('seed').replaceDocument('d', [chunk(0)])
  await store.close()
  await sql`create table spend (tenant_id bigint not null, paid_at timestamptz not null, category text, amount numeric not null)`.execute(
    db,
  )
  standby = await primary.addStandby()
  node = await connect(standby.url, { requireVector: false })
}, 180_000)
afterAll(async () => {
  if (standby) signal(clusterPids(standby), 'SIGCONT') // never leave a stopped standby behind, whatever a test did
  await node?.close().catch(() => {})
  await db?.close()
  await primary?.stop()
})

/** A set on the one standby, quick to give up on it, and a store reading through it. */
async function open(options: ConstructorParameters<typeof ReplicaSet>[2] = {}) {
  const replicas = new ReplicaSet(db, [node], { waitMs: 50, positionCacheMs: 0, retryDownMs: 300, ...options })
  return { replicas, store: await PgVectorStore.open(db, { ...config, replicas }) }
}

/** A monthly total of `spend` per tenant into `table` (created if missing), its writes noted in `replicas` when given. */
async function spendRollup(table: string, replicas?: ReplicaSet): Promise<MonthlyRollup> {
  const target = rollupTable(table, { groupBy: {}, measures: { total: 'numeric' }, tenantType: 'bigint' })
  await target.create(db)
  return new MonthlyRollup({
    source: 'spend',
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: [],
    measures: { total: sql`sum(amount)` },
    zone: 'UTC',
    ...(replicas ? { replicas } : {}),
  })
}

/**
 * Waits until the standby has replayed everything written so far, up to the insert position the
 * journal notes (a commit with synchronous_commit on flushes it), so that a read of it misses only
 * what comes next.
 */
async function caughtUp(): Promise<void> {
  const target = (await sql<{ l: string }>`select pg_current_wal_insert_lsn()::text as l`.execute(db)).rows[0]!.l
  await db.transaction(async (trx) => {
    await sql`set local synchronous_commit = on`.execute(trx)
    await sql`select pg_current_xact_id()`.execute(trx)
  })
  for (let i = 0; i < 400; i++) {
    const { rows } = await sql<{ ok: boolean }>`select pg_last_wal_replay_lsn() >= ${target}::pg_lsn as ok`.execute(node)
    if (rows[0]?.ok) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`the standby did not replay up to ${target} in 10 s`)
}

/** Runs `fn` with the standby's replay paused, resumed afterwards whatever happens. */
async function paused<T>(fn: () => Promise<T>): Promise<T> {
  await pause()
  try {
    return await fn()
  } finally {
    await resume()
  }
}

/** One write of a tenant handle: what exists before (`prepare`, replay running), the write (replay paused), and whether a read sees it. */
interface TenantWrite {
  prepare?: (t: TenantStore) => Promise<unknown>
  write: (t: TenantStore) => Promise<unknown>
  sees: (t: TenantStore) => Promise<boolean>
}

/** Every write method of a tenant handle, each with a read that misses it when the write was not noted. */
const TENANT_WRITES: Record<string, TenantWrite> = {
  replaceDocument: {
    write: (t) => t.replaceDocument('w', [chunk(1)]),
    sees: async (t) => (await t.getChunks(['w'])).length === 1,
  },
  deleteDocument: {
    prepare: (t) => t.replaceDocument('w', [chunk(1)]),
    write: (t) => t.deleteDocument('w'),
    sees: async (t) => (await t.count()) === 0,
  },
  deleteWhere: {
    prepare: (t) => t.replaceDocument('w', [{ ...chunk(1), metadata: { kind: 'old' } }]),
    write: (t) => t.deleteWhere({ kind: 'old' }),
    sees: async (t) => (await t.count()) === 0,
  },
  upsertChunks: {
    write: (t) => t.upsertChunks([{ id: 'u', ...chunk(2) }]),
    sees: async (t) => (await t.find({})).rows.length === 1,
  },
  bulkUpsert: {
    write: (t) => t.bulkUpsert([{ id: 'u', ...chunk(2) }]),
    sees: async (t) => (await t.find({})).rows.length === 1,
  },
  updateMetadata: {
    prepare: (t) => t.replaceDocument('w', [{ ...chunk(1), metadata: { v: 1 } }]),
    write: (t) => t.updateMetadata({ filter: { v: 1 } }, { metadata: { v: 2 } }),
    sees: async (t) => (await t.count({ v: 2 })) === 1,
  },
  bulkIngest: {
    write: (t) => t.bulkIngest([{ documentId: 'b', chunkIndex: 0, ...chunk(3) }]),
    sees: async (t) => (await t.exactSearch(axisVector(DIM, 3), { k: 5 })).length === 1,
  },
}

/** The tenant handle's methods that only read (routed to replicas). */
const TENANT_READS = ['tenantId', 'search', 'exactSearch', 'maxMarginalRelevanceSearch', 'hybridSearch', 'find', 'count', 'getChunks']
/** The store's: writes of tenants' rows, and the rest (DDL, tuning, reports on the primary; no tenant row changes). */
const STORE_WRITES = ['bulkIngest', 'migrateTenant', 'switchTenant', 'rollbackTenant', 'releaseTenantSpace']
/** The embedding spaces': DDL, state without rows (cancelMigration changes no answer), reads of the primary's state. */
const STORE_SPACES = ['addSpace', 'dropSpace', 'listSpaces', 'activeTenant', 'migrationStatus', 'cancelMigration', 'compareSpaces']
const STORE_OTHERS = ['forTenant', 'createIndex', 'createTenantIndex', 'optimize', 'tenantTuning', 'measureRecall', 'recallReport']
const STORE_MORE = ['flushQuerySample', 'close', 'consistencyToken', 'replicaStats', 'createMetadataIndex', 'stats']
/** The rollup's: writes of buckets or dirty keys (each has a case below), and the rest. */
const ROLLUP_WRITES = ['refreshAt', 'rebuild', 'refreshDirty', 'markDirty', 'drain', 'refreshFleet']
const ROLLUP_OTHERS = ['distribute', 'parts', 'sourceIndex', 'track', 'untrack', 'trackingMigration', 'migrationSql']
const ROLLUP_READS = ['read', 'readAcross', 'dirtyStats', 'readAcrossQuery', 'readQuery']
const methods = (c: { prototype: object }) =>
  Object.getOwnPropertyNames(c.prototype)
    .filter((n) => n !== 'constructor')
    .sort()

describe('the write journal: every write path is noted for read-your-writes', () => {
  it('every public method is classified: a new write method cannot skip the journal unnoticed', () => {
    // A failure here: a method was added. If it writes, it must end in the journal (TenantStore's
    // #wrote, the rollup's ctx.wrote) and get a case in TENANT_WRITES / the rollup tests below.
    expect(methods(TenantStore)).toEqual([...TENANT_READS, ...Object.keys(TENANT_WRITES)].sort())
    expect(methods(PgVectorStore)).toEqual([...STORE_WRITES, ...STORE_OTHERS, ...STORE_MORE, ...STORE_SPACES].sort())
    expect(methods(MonthlyRollup)).toEqual([...ROLLUP_WRITES, ...ROLLUP_OTHERS, ...ROLLUP_READS].sort())
  })

  needsLocal('each write of a tenant handle is noted: read right after it with replay paused, the read sees it', async () => {
    const { store } = await open()
    for (const [name, w] of Object.entries(TENANT_WRITES)) {
      const t = store.forTenant(`w-${name}`)
      await w.prepare?.(t)
      await paused(async () => {
        await w.write(t)
        expect({ name, sees: await w.sees(t) }).toEqual({ name, sees: true })
      })
    }
    await store.close()
  })

  needsLocal(
    'an embedding-space migration, its switch and a rollback are noted: the space searched answers at once with replay paused',
    async () => {
      const { store } = await open()
      await store.addSpace({ name: 'v2', dimensions: 2 })
      const texts = ['alpha', 'beta', 'gamma']
      await store.forTenant('sp').replaceDocument(
        'd',
        texts.map((content, i) => ({ content, embedding: axisVector(DIM, i) })),
      )
      const twoD = (text: string) => [1, texts.indexOf(text) + 1]
      await caughtUp()
      await paused(async () => {
        await store.migrateTenant('sp', { to: 'v2', embed: async (batch) => batch.map(twoD), switch: true })
        const { space, tenant } = await store.activeTenant('sp')
        expect(space).toBe('v2')
        expect((await tenant.search(twoD('gamma'), { k: 3 })).map((h) => h.content)).toEqual(['gamma', 'beta', 'alpha'])
        await store.rollbackTenant('sp')
        const back = await store.activeTenant('sp')
        expect(back.space).toBe('default')
        expect((await back.tenant.search(axisVector(DIM, 1), { k: 1 }))[0]?.content).toBe('beta')
      })
      await store.close()
    },
  )

  needsLocal('store.bulkIngest notes each tenant it wrote: the next read sees the rows, the token covers them', async () => {
    const { replicas, store } = await open()
    await paused(async () => {
      const rows = Array.from({ length: 12 }, (_, i) => ({
        tenantId: i % 2 ? 'bulk-a' : 'bulk-b',
        documentId: `b${i}`,
        chunkIndex: 0,
        ...chunk(i),
      }))
      await store.bulkIngest(rows)
      const after = await primaryPosition()
      expect(await store.forTenant('bulk-a').count()).toBe(6)
      expect(await store.forTenant('bulk-b').count()).toBe(6)
      expect(fromToken(await store.consistencyToken('bulk-a'))).toBeLessThanOrEqual(after)
      expect(fromToken(await store.consistencyToken('bulk-a'))).toBeGreaterThan(0n)
      // A tenant the load did not touch is still served by the (paused) standby.
      const before = replicas.stats().replicaReads
      await store.forTenant('seed').count()
      expect(replicas.stats().replicaReads).toBe(before + 1)
    })
    await store.close()
  })

  needsLocal('tokens are the maximum over every write: a bulk load after an earlier write moves the token on', async () => {
    const { store } = await open()
    await store.forTenant('maxed').replaceDocument('one', [chunk(1)])
    const first = fromToken(await store.consistencyToken('maxed'))
    await sql`create table wal_filler as select g from generate_series(1, 2000) g`.execute(db)
    await store.bulkIngest([{ tenantId: 'maxed', documentId: 'two', chunkIndex: 0, ...chunk(2) }])
    const second = fromToken(await store.consistencyToken('maxed'))
    expect(second).toBeGreaterThan(first)
    await sql`drop table wal_filler`.execute(db)
    await store.close()
  })

  needsLocal(
    "a write in the app's transaction: reads go to the primary until it commits, then see it; a rollback is forgotten",
    async () => {
      const { replicas, store } = await open()
      await paused(async () => {
        await db.transaction().execute(async (trx) => {
          await store.forTenant('trx', { transaction: trx }).replaceDocument('t1', [chunk(3)])
          // Not committed yet: this tenant's reads elsewhere go to the primary (and do not see it).
          expect(await store.forTenant('trx').count()).toBe(0)
          expect(replicas.stats().toPrimary.pending).toBe(1)
        })
        expect(await store.forTenant('trx').count()).toBe(1)
        const token = fromToken(await store.consistencyToken('trx'))
        expect(token).toBeLessThanOrEqual(await primaryPosition())
        // The token is past the commit: a second process reading with it sees the write.
        const { rows } = await sql<{
          ok: boolean
        }>`select pg_current_wal_insert_lsn() >= ${(await store.consistencyToken('trx'))!.slice('pgscale:wal:'.length)}::pg_lsn as ok`.execute(
          db,
        )
        expect(rows[0]!.ok).toBe(true)

        await db
          .transaction()
          .execute(async (trx) => {
            await store.forTenant('gone', { transaction: trx }).replaceDocument('g1', [chunk(4)])
            throw new Error('the app rolls back')
          })
          .catch(() => {})
        const before = replicas.stats().replicaReads
        expect(await store.forTenant('gone').count()).toBe(0)
        expect(replicas.stats().replicaReads).toBe(before + 1) // nothing pending any more: the standby serves
      })
      await store.close()
    },
  )

  needsLocal(
    'rollup writes are noted: refreshAt / rebuild on the primary handle, in the app transaction with `replicas`, and number tenants',
    async () => {
      const replicas = new ReplicaSet(db, [node], { waitMs: 50, positionCacheMs: 0 })
      const rollup = await spendRollup('spend_monthly')
      const inTrx = await spendRollup('spend_monthly', replicas)
      await paused(async () => {
        await sql`insert into spend values (42, '2025-03-10T10:00:00Z', null, 5)`.execute(db)
        await rollup.refreshAt(db, { tenantId: 42, moment: '2025-03-10T10:00:00Z' })
        expect(await rollup.read(replicas, { tenantId: 42, from: '2025-03', to: '2025-03' })).toMatchObject([
          { month: '2025-03', total: '5' },
        ])

        await sql`insert into spend values (43, '2025-04-10T10:00:00Z', null, 7)`.execute(db)
        await rollup.rebuild(db, { tenantId: 43, since: '2025-01-01', until: '2025-12-31' })
        expect(await rollup.read(replicas, { tenantId: '43', from: '2025-04', to: '2025-04' })).toMatchObject([{ total: '7' }])

        await db.transaction().execute(async (trx) => {
          await sql`insert into spend values (44, '2025-05-10T10:00:00Z', null, 9)`.execute(trx)
          await inTrx.refreshAt(trx, { tenantId: 44, moment: '2025-05-10T10:00:00Z' })
        })
        expect(await inTrx.read(replicas, { tenantId: 44, from: '2025-05', to: '2025-05' })).toMatchObject([{ total: '9' }])

        // The app's own write, noted with a number tenant: the same tenant as the read's.
        await sql`insert into spend_monthly (tenant_id, month, total) values (45, '2025-06-01', 11)`.execute(db)
        await replicas.noteWrite(45)
        expect(await rollup.read(replicas, { tenantId: 45, from: '2025-06', to: '2025-06' })).toMatchObject([{ total: '11' }])
      })
    },
  )

  needsLocal('refreshFleet (a deferred level brought up to date) is noted: the next readAcross reads past it', async () => {
    const replicas = new ReplicaSet(db, [node], { waitMs: 50, positionCacheMs: 0 })
    const target = rollupTable('spend_deferred', { groupBy: {}, measures: { total: 'numeric' }, tenantType: 'bigint' })
    const fleet = fleetTable('spend_deferred_fleet', { of: target, deferred: true })
    const rollup = new MonthlyRollup({
      ...{ source: 'spend', target, at: 'paid_at', tenant: 'tenant_id', groupBy: [], zone: 'UTC' },
      measures: { total: sql`sum(amount)` },
      fleet,
      replicas,
    })
    await target.create(db)
    await fleet.create(db)
    await sql`insert into spend values (60, '2025-10-10T10:00:00Z', null, 6)`.execute(db)
    await rollup.refreshAt(db, { tenantId: 60, moment: '2025-10-10T10:00:00Z' })
    await caughtUp() // the standby has the refresh (and its mark)
    await paused(async () => {
      expect(await rollup.refreshFleet(db)).toEqual({ months: 1, buckets: 0, remaining: 0 })
      const before = replicas.stats().primaryReads
      const rows = await rollup.readAcross(replicas, { from: '2025-10', to: '2025-10', groupBy: [] })
      expect(rows.map((r) => [r.month, String(r.total)])).toEqual([['2025-10', '6']])
      expect(replicas.stats().primaryReads).toBe(before + 1) // the standby has not replayed refreshFleet
    })
  })

  needsLocal('tracked rollups: markDirty and refreshDirty note the tenants they wrote', async () => {
    const replicas = new ReplicaSet(db, [node], { waitMs: 50, positionCacheMs: 0 })
    const rollup = await spendRollup('spend_tracked', replicas)
    await rollup.track(db)
    await paused(async () => {
      await sql`insert into spend values (50, '2025-07-10T10:00:00Z', null, 3)`.execute(db)
      await rollup.refreshDirty(db)
      expect(await rollup.read(replicas, { tenantId: 50, from: '2025-07', to: '2025-07' })).toMatchObject([{ total: '3' }])
      const before = replicas.stats().primaryReads
      await rollup.markDirty(db, { tenantId: 51, at: ['2025-08-01T00:00:00Z'] })
      await rollup.read(replicas, { tenantId: 51, from: '2025-08', to: '2025-08', fresh: true })
      expect(replicas.stats().primaryReads).toBe(before + 1)
      // A drain loop notes what it refreshed too.
      await sql`insert into spend values (52, '2025-09-10T10:00:00Z', null, 4)`.execute(db)
      const stop = new AbortController()
      const draining = rollup.drain(db, { intervalMs: 20, signal: stop.signal })
      while ((await rollup.dirtyStats(db)).rows > 0) await new Promise((resolve) => setTimeout(resolve, 20))
      stop.abort()
      expect((await draining).buckets).toBeGreaterThan(0)
      expect(await rollup.read(replicas, { tenantId: 52, from: '2025-09', to: '2025-09' })).toMatchObject([{ total: '4' }])
    })
    await rollup.untrack(db)
  })
})

describe('replicas that fail fast', () => {
  needsLocal(
    'a standby that hangs costs a read its deadline, not the hang: the read goes to the primary, the standby is passed over',
    async () => {
      const { replicas, store } = await open({ readTimeoutMs: 300, retryDownMs: 60_000 })
      expect(await store.forTenant('seed').count()).toBe(1) // the standby answers while it runs
      const pids = clusterPids(standby)
      signal(pids, 'SIGSTOP')
      try {
        expect(await store.forTenant('seed').count()).toBe(1)
        expect(await store.forTenant('seed').count()).toBe(1)
        const stats = replicas.stats()
        expect(stats.replicas[0]!.timeouts).toBeGreaterThanOrEqual(1)
        expect(stats.replicas[0]!.up).toBe(false)
      } finally {
        signal(pids, 'SIGCONT')
      }
      await store.close()
    },
  )

  needsLocal('a standby that is down when the app starts: a set of URLs is made without connecting, and reads pass it over', async () => {
    const closed = `postgres://postgres@127.0.0.1:${await freePort()}/postgres`
    const replicas = new ReplicaSet(db, [closed, standby.url], { waitMs: 50, positionCacheMs: 0, retryDownMs: 60_000 })
    const store = await PgVectorStore.open(db, { ...config, replicas })
    for (let i = 0; i < 4; i++) expect(await store.forTenant('seed').count()).toBe(1)
    const stats = replicas.stats()
    expect(stats.replicas[0]!.up).toBe(false)
    expect(stats.replicas[1]!.reads).toBeGreaterThan(0)
    await store.close()
    await replicas.close()
  })

  needsLocal('a node that was no standby (promoted) and is replaced by a standby at the same address serves again', async () => {
    // One address, first in front of the primary (a promoted node answers like it), then of the standby.
    const proxy = await tcpProxy(primary.port)
    const url = new URL(primary.url)
    url.port = String(proxy.port)
    // A generous deadline: a new connection through the proxy on a loaded 2-core machine can take over 500 ms.
    const replicas = new ReplicaSet(db, [url.toString()], { waitMs: 50, positionCacheMs: 0, retryDownMs: 200, readTimeoutMs: 10_000 })
    const read = () => replicas.read('seed', {}, (h) => sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(h))
    expect((await read()).rows[0]!.standby).toBe(false) // answered by the primary itself: the node was passed over
    expect(replicas.stats().replicas[0]!.promoted).toBe(true)
    expect(replicas.stats().replicas[0]!.reads).toBe(0)
    proxy.retarget(standby.port)
    let served = false
    for (let i = 0; i < 40 && !served; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250))
      served = (await read()).rows[0]!.standby
    }
    expect(served).toBe(true)
    expect(replicas.stats().replicas[0]!.promoted).toBe(false)
    await replicas.close()
    await proxy.close()
  })
})

/** The postmaster of `cluster` and its children (backends, WAL receiver, startup process). */
function clusterPids(cluster: LocalCluster): number[] {
  const postmaster = Number(readFileSync(join(cluster.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0])
  const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number)
  return [postmaster, ...children]
}

function signal(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name)
    } catch {
      // gone already
    }
  }
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A TCP proxy on a loopback port whose target can change; changing it drops the open connections. */
async function tcpProxy(targetPort: number): Promise<{ port: number; retarget(port: number): void; close(): Promise<void> }> {
  let target = targetPort
  const open = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(target, '127.0.0.1')
    open.add(client).add(upstream)
    client.pipe(upstream).pipe(client)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    retarget(port: number) {
      target = port
      for (const socket of open) socket.destroy()
      open.clear()
    },
    close: () => {
      for (const socket of open) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}
