import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect } from 'vitest'
import {
  connect,
  DatabaseError,
  InvalidArgumentError,
  PgVectorStore,
  type ChunkInput,
  type Database,
  type TenantStore,
} from '../../../src/index.js'
import { advisoryXactLock, advisoryXactLockShared, int32Hash } from '../../../src/bench-kit.js'
import { seededRandom } from '../../../bench/synthetic/random.js'
import { terminateWhen } from '../../faults/fault-support.js'
import { countingPool } from '../../support/query-counter.js'
import { itWithServer, skipBecause } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { axisVector } from '../../support/vectors.js'

/**
 * The adapter capabilities as write paths: two writers of the same documents at once (batches of
 * overlapping ids, beside replaces; updates by filter beside replaces), a connection killed
 * between a batch's delete and its insert, and bad input that sends nothing. Server only: PGlite
 * has one connection.
 */
const t = useTestDatabase()
const DIM = 4
const TABLE = 'capc_chunks'
let pool: Database
let admin: Database
let store: PgVectorStore
let acme: TenantStore

const vec = (axis: number, tilt = 0.1) => axisVector(DIM, axis, tilt)

/** Rows of `writer` for `ids`, each carrying the writer in content, metadata and embedding. */
const batch = (writer: number, ids: readonly string[]) =>
  ids.map((id) => ({ id, content: `w${writer}:${id}`, metadata: { writer, tag: 'x' }, embedding: vec(writer) }))

/** Each id's writer, after checking the document is one whole chunk written by one writer. */
async function writersOf(ids: readonly string[]): Promise<Map<string, number>> {
  const chunks = await acme.getChunks(ids, { includeEmbedding: true })
  const writers = new Map<string, number>()
  for (const chunk of chunks) {
    expect(writers.has(chunk.documentId), `${chunk.documentId} has more than one chunk`).toBe(false)
    expect(chunk.chunkIndex).toBe(0)
    const writer = chunk.metadata.writer as number
    expect(chunk.content).toBe(`w${writer}:${chunk.documentId}`)
    expect(chunk.embedding!.map((x) => Math.fround(x))).toEqual(vec(writer).map((x) => Math.fround(x)))
    writers.set(chunk.documentId, writer)
  }
  expect([...writers.keys()].sort()).toEqual([...ids].sort())
  return writers
}

function shuffled<T>(values: readonly T[], random: ReturnType<typeof seededRandom>): T[] {
  const out = [...values]
  for (let i = out.length - 1; i > 0; i--) {
    const j = random.int(i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** Holds `lockSql` (trusted test text) in an open admin transaction until the returned release is called. */
async function hold(lockSql: string): Promise<() => Promise<void>> {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let holding!: () => void
  const held = new Promise<void>((resolve) => (holding = resolve))
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

/** What a writer of `documentId` of acme holds: the tenant's write lock shared, the document's lock. */
const writerLocks = (documentId: string) =>
  `${advisoryXactLockShared(int32Hash(`pgscale.store-tenant:"${TABLE}"`), int32Hash('acme'))}; ` +
  advisoryXactLock(int32Hash(`pgscale.store:"${TABLE}"`), [int32Hash(`acme\u0000${documentId}`)])

/** Waits until `n` backends of this database wait for an advisory lock. */
async function lockWaiters(n: number): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`.execute(admin)
    if (rows[0]!.n >= n) return
    if (Date.now() > deadline) throw new Error(`fewer than ${n} backends waited for an advisory lock within 20 s`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

async function advisoryLocksHere(): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_locks
    where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`.execute(admin)
  return rows[0]!.n
}

beforeAll(async () => {
  if (!t.url) return
  pool = await connect(t.url, { maxConnections: 12 })
  admin = await connect(t.url, { maxConnections: 2 })
  store = await PgVectorStore.open(pool, { table: TABLE, dimensions: DIM })
  acme = store.forTenant('acme')
})
afterAll(async () => {
  await pool?.close()
  await admin?.close()
})

describe('upsertChunks: two batches of overlapping ids at once', () => {
  for (const [label, size] of [
    ['40 ids each (document locks)', 40],
    ['600 ids each (the tenant lock)', 600],
  ] as const) {
    itWithServer(t.target)(`${label}, in opposite orders: no deadlock, each id one whole version, the overlap one batch's`, async () => {
      const random = seededRandom(`overlap-${size}`)
      const ids = Array.from({ length: Math.round(size * 1.5) }, (_, i) => `doc-${i}`)
      for (let round = 0; round < 8; round++) {
        const first = ids.slice(0, size)
        const second = ids.slice(size / 2)
        // A writer of one id of the overlap holds it: both batches start taking their locks and wait,
        // each holding what it took before (in opposite orders, that would deadlock), until it ends.
        const release = await hold(writerLocks(ids[size / 2 + random.int(size / 2)]!))
        const pending = Promise.all([
          acme.upsertChunks(batch(2 * round, shuffled(first, random))),
          acme.upsertChunks(batch(2 * round + 1, [...second].reverse())),
        ])
        await lockWaiters(2)
        await release()
        const writers = await pending
        expect(writers.map((w) => w.length)).toEqual([size, size])
        const byId = await writersOf(ids)
        const overlap = new Set(ids.slice(size / 2, size).map((id) => byId.get(id)))
        expect(overlap.size, `round ${round}: the overlap mixes both batches`).toBe(1)
      }
    })
  }

  itWithServer(t.target)('beside replaceDocument of the same ids: each document is a whole version of one writer', async () => {
    const random = seededRandom('upsert-replace')
    const ids = Array.from({ length: 12 }, (_, i) => `mixed-${i}`)
    const chunks = (writer: number): ChunkInput[] =>
      Array.from({ length: 3 + (writer % 4) }, (_, i) => ({ content: `r${writer}:${i}`, embedding: vec(i), metadata: { writer } }))
    for (let round = 0; round < 10; round++) {
      const calls: Promise<unknown>[] = []
      for (let w = 0; w < 6; w++) {
        const writer = round * 10 + w
        if (w % 2 === 0) calls.push(acme.upsertChunks(batch(writer, shuffled(ids, random))))
        else calls.push(acme.replaceDocument(ids[random.int(ids.length)]!, chunks(writer)))
      }
      await Promise.all(calls)
      for (const document of await acme.getChunks(ids).then(groupByDocument)) {
        const writers = new Set(document.map((c) => c.metadata.writer))
        expect(writers.size, `${document[0]!.documentId} mixes versions`).toBe(1)
        expect(document.map((c) => c.chunkIndex)).toEqual(document.map((_, i) => i))
        const [writer] = writers as Set<number>
        if (document.length > 1) expect(document.map((c) => c.content)).toEqual(chunks(writer!).map((c) => c.content))
      }
    }
  })
})

function groupByDocument<C extends { documentId: string }>(chunks: C[]): C[][] {
  const groups = new Map<string, C[]>()
  for (const chunk of chunks) groups.set(chunk.documentId, [...(groups.get(chunk.documentId) ?? []), chunk])
  return [...groups.values()]
}

describe('updateMetadata beside replaceDocument of the same documents', () => {
  const DOCS = 6
  const SMALL = 120
  const LARGE = 200
  const version = (v: number, n: number): ChunkInput[] =>
    Array.from({ length: n }, (_, i) => ({ content: `v${v}`, embedding: vec(i), metadata: { tag: 'u', v } }))

  /** Every document whole (one version, chunks 0..n-1) and updated in all of its chunks or in none. */
  async function halfUpdated(): Promise<string[]> {
    const { rows } = await sql<{ document_id: string; n: number; versions: number; max_index: number; updated: number }>`
      select document_id, count(*)::int as n, count(distinct content)::int as versions, max(chunk_index) as max_index,
        count(*) filter (where metadata ? 'updated')::int as updated
      from ${sql.table(TABLE)} where tenant_id = 'acme' and document_id like 'upd-%' group by document_id`.execute(admin)
    return rows
      .filter((r) => r.versions !== 1 || r.max_index !== r.n - 1 || (r.updated !== 0 && r.updated !== r.n))
      .map((r) => `${r.document_id}: ${r.n} chunks, ${r.versions} versions, ${r.updated} updated`)
  }

  for (const by of ['filter', 'ids'] as const) {
    itWithServer(t.target)(`by ${by}: no document is left half updated or half replaced`, async () => {
      const ids = Array.from({ length: DOCS }, (_, d) => `upd-${d}`)
      for (let round = 0; round < 12; round++) {
        for (const id of ids) await acme.replaceDocument(id, version(1, SMALL))
        // Each document grows from v1 to v2 while an update of what both versions share runs.
        const replaces = ids.map((id) => acme.replaceDocument(id, version(2, LARGE)))
        await new Promise((resolve) => setTimeout(resolve, round % 4))
        const target = by === 'filter' ? { filter: { tag: 'u' } } : { ids }
        const update = acme.updateMetadata(target, { metadata: { updated: round }, mode: 'merge' })
        await Promise.all([...replaces, update])
        expect(await halfUpdated(), `round ${round}`).toEqual([])
      }
    })
  }
})

describe('failures', () => {
  itWithServer(t.target)('bad input sends nothing at all', async () => {
    const counted = countingPool({ connectionString: t.url, max: 1 })
    const counting = await PgVectorStore.open(counted.pool, { table: TABLE, dimensions: DIM })
    try {
      const tenant = counting.forTenant('acme')
      const calls = [
        () => tenant.upsertChunks([...batch(1, ['ok']), { id: 'bad', content: 'x', embedding: [1, Number.NaN, 0, 0] }]),
        () => tenant.upsertChunks(batch(1, ['ok']), { deleteWhere: {} }),
        () => tenant.updateMetadata({ filter: {} }, { metadata: { x: 1 } }),
        () => tenant.updateMetadata({ ids: ['a'] }, { metadata: { x: 'nul\u0000' } }),
        () => tenant.getChunks(['']),
        () => tenant.maxMarginalRelevanceSearch(vec(1), { k: 3, lambda: -1 }),
      ]
      for (const call of calls) {
        counted.reset()
        await expect(call()).rejects.toBeInstanceOf(InvalidArgumentError)
        expect(counted.queries).toBe(0)
      }
    } finally {
      await counted.pool.end()
    }
  })

  itWithServer(t.target)(
    "the connection killed between a batch's delete and its insert: the tenant's rows unchanged, no lock left, the pool serves the next calls",
    async (ctx) => {
      if (t.target.citusWorkers) return skipBecause(ctx, 'the wait is injected by a trigger, which Citus refuses on a distributed table')
      await acme.upsertChunks(batch(1, ['keep-1', 'keep-2', 'keep-3']))
      const state = async () =>
        JSON.stringify(
          (await sql`select * from ${sql.table(TABLE)} where tenant_id = 'acme' order by document_id, chunk_index`.execute(admin)).rows,
        )
      // The insert of a row whose content is 'wait' waits in a trigger for the test's lock, after the delete ran.
      await sql`create function capc_wait() returns trigger language plpgsql as $$
        begin if new.content = 'wait' then perform pg_advisory_xact_lock_shared(4242, 4242); end if; return new; end $$`.execute(admin)
      await sql`create trigger capc_wait before insert on ${sql.table(TABLE)} for each row execute function capc_wait()`.execute(admin)
      try {
        const before = await state()
        const release = await hold('select pg_advisory_xact_lock(4242, 4242)')
        const pending = acme.upsertChunks([{ id: 'new', content: 'wait', embedding: vec(2) }], { deleteWhere: { tag: 'x' } }).then(
          () => 'resolved',
          (e: unknown) => e,
        )
        await terminateWhen(admin, `wait_event_type = 'Lock' and query ilike '%with incoming as%'`)
        await release()
        expect(await pending).toBeInstanceOf(DatabaseError)
        expect(await state()).toBe(before)
        expect(await advisoryLocksHere()).toBe(0)
      } finally {
        await sql`drop trigger capc_wait on ${sql.table(TABLE)}`.execute(admin)
        await sql`drop function capc_wait()`.execute(admin)
      }
      // The pool (its killed connection discarded) serves the next calls, at once.
      await Promise.all([
        acme.upsertChunks(batch(3, ['keep-1', 'new'])),
        acme.getChunks(['keep-2']),
        acme.updateMetadata({ ids: ['keep-3'] }, { metadata: { writer: 3, tag: 'x' } }),
      ])
      expect((await writersOf(['keep-1', 'new'])).get('new')).toBe(3)
    },
  )
})
