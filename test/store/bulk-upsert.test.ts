import { sql } from 'kysely'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  connect,
  DatabaseError,
  DimensionMismatchError,
  InvalidArgumentError,
  PgVectorStore,
  type Database,
  type TenantStore,
} from '../../src/index.js'
import { terminateWhen } from '../faults/fault-support.js'
import { countingPool } from '../support/query-counter.js'
import { itWithServer, skipBecause } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * `TenantStore.bulkUpsert`: `upsertChunks`' rows and result through binary COPY — each id one
 * document of one chunk, the last row of an id winning, `deleteWhere`, tenant scope; bad input a
 * typed error with nothing sent; a failure between the batch's delete and its COPY (a trigger's
 * refusal, the backend killed) leaving the tenant as it was; two batches of the same ids at once.
 */
const t = useTestDatabase()
const DIM = 4
const TABLE = 'bup_chunks'
let store: PgVectorStore
let acme: TenantStore
let other: TenantStore

const vec = (axis: number, tilt = 0.1) => axisVector(DIM, axis, tilt)

/** Rows of `writer` for `ids`, each carrying the writer in content, metadata and embedding. */
const batch = (writer: number, ids: readonly string[]) =>
  ids.map((id) => ({ id, content: `w${writer}:${id}`, metadata: { writer, tag: 'x' }, embedding: vec(writer) }))

async function tableState(db: Database = t.db): Promise<string> {
  const { rows } = await sql`
    select tenant_id, document_id, chunk_index, content, metadata, embedding::text
    from ${sql.table(TABLE)} order by 1, 2, 3`.execute(db)
  return JSON.stringify(rows)
}

async function rowsOf(tenant: string, documentId: string) {
  const { rows } = await sql<{ chunk_index: number; content: string; metadata: Record<string, unknown> }>`
    select chunk_index, content, metadata from ${sql.table(TABLE)}
    where tenant_id = ${tenant} and document_id = ${documentId} order by chunk_index`.execute(t.db)
  return rows
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: DIM })
  acme = store.forTenant('acme')
  other = store.forTenant('other')
})

beforeEach(async () => {
  await sql`truncate ${sql.table(TABLE)}`.execute(t.db)
  for (const tenant of [acme, other]) {
    await tenant.upsertChunks(batch(0, ['a', 'b']).map((r, i) => ({ ...r, metadata: { kind: i === 0 ? 'faq' : 'blog' } })))
    await tenant.replaceDocument(
      'multi',
      [0, 1, 2].map((i) => ({ content: `multi ${i}`, embedding: vec(i), metadata: { kind: 'book' } })),
    )
  }
})

describe('bulkUpsert', () => {
  it("writes upsertChunks' rows: each id one chunk, an existing id replaced whole, its other chunks gone, the other tenant untouched", async () => {
    const ids = await acme.bulkUpsert([
      { id: 'a', content: 'a v2', embedding: vec(3), metadata: { v: 2 } },
      { id: 'multi', content: 'multi as one', embedding: vec(2) },
      { id: 'new', content: 'fresh', embedding: vec(1) },
    ])
    expect(ids).toEqual(['a', 'multi', 'new'])
    expect(await rowsOf('acme', 'a')).toEqual([{ chunk_index: 0, content: 'a v2', metadata: { v: 2 } }])
    expect(await rowsOf('acme', 'multi')).toEqual([{ chunk_index: 0, content: 'multi as one', metadata: {} }])
    expect(await rowsOf('acme', 'new')).toEqual([{ chunk_index: 0, content: 'fresh', metadata: {} }])
    expect((await acme.exactSearch(vec(3), { k: 1 }))[0]).toMatchObject({ documentId: 'a', distance: expect.closeTo(0, 6) })
    expect(await rowsOf('other', 'a')).toEqual([{ chunk_index: 0, content: 'w0:a', metadata: { kind: 'faq' } }])
    expect(await rowsOf('other', 'multi')).toHaveLength(3)
    expect(await acme.bulkUpsert([])).toEqual([])
  })

  it('an id given twice: the last row wins at the place of the first; the result equals upsertChunks on the other tenant', async () => {
    const rows = [
      { id: 'd', content: 'd first', embedding: vec(1) },
      { id: 'e', content: 'e only', embedding: vec(2) },
      { id: 'd', content: 'd last', embedding: vec(3), metadata: { last: true } },
    ]
    expect(await acme.bulkUpsert(rows)).toEqual(['d', 'e'])
    expect(await other.upsertChunks(rows)).toEqual(['d', 'e'])
    const chunks = async (tn: TenantStore) =>
      (await tn.getChunks(['a', 'b', 'multi', 'd', 'e'], { includeEmbedding: true })).map(
        ({ documentId, chunkIndex, content, metadata, embedding }) =>
          JSON.stringify({ documentId, chunkIndex, content, metadata, embedding }),
      )
    expect(await chunks(acme)).toEqual(await chunks(other))
    expect(await rowsOf('acme', 'd')).toEqual([{ chunk_index: 0, content: 'd last', metadata: { last: true } }])
  })

  it('deleteWhere: the matching rows deleted and the rows written, in one transaction; the other tenant untouched', async () => {
    expect(await acme.bulkUpsert(batch(5, ['n1', 'n2']), { deleteWhere: { kind: 'book' } })).toEqual(['n1', 'n2'])
    expect(await acme.count({ kind: 'book' })).toBe(0)
    expect(await acme.count()).toBe(4)
    expect(await other.count({ kind: 'book' })).toBe(3)
    expect(await acme.bulkUpsert([], { deleteWhere: { kind: 'faq' } })).toEqual([])
    expect(await acme.count({ kind: 'faq' })).toBe(0)
  })

  it('3,000 rows (the tenant lock, one COPY) are written whole; 3,000 more replace them', async () => {
    const rows = (tag: string) =>
      Array.from({ length: 3000 }, (_, i) => ({
        id: `bulk-${i}`,
        content: `${tag} ${i}`,
        embedding: vec(i, (i % 7) / 7),
        metadata: { tag },
      }))
    expect(await acme.bulkUpsert(rows('v1'))).toHaveLength(3000)
    await acme.bulkUpsert(rows('v2'))
    expect(await acme.count({ tag: 'v1' })).toBe(0)
    expect(await acme.count({ tag: 'v2' })).toBe(3000)
    expect((await acme.getChunks(['bulk-2999', 'bulk-0'])).map((c) => c.content)).toEqual(['v2 2999', 'v2 0'])
  })

  it('bad input: a typed error, nothing written (wrong dimensions, NaN, a bad id, NUL, bad metadata, not an array, {} deleteWhere)', async () => {
    const before = await tableState()
    const calls: [() => Promise<unknown>, new (...args: never[]) => Error][] = [
      [() => acme.bulkUpsert([...batch(1, ['ok']), { id: 'x', content: 'x', embedding: [1, 2, 3] }]), DimensionMismatchError],
      [() => acme.bulkUpsert([...batch(1, ['ok']), { id: 'x', content: 'x', embedding: [1, Number.NaN, 0, 0] }]), InvalidArgumentError],
      [() => acme.bulkUpsert([...batch(1, ['ok']), { id: '', content: 'x', embedding: vec(1) }]), InvalidArgumentError],
      [() => acme.bulkUpsert([...batch(1, ['ok']), { id: 7 as unknown as string, content: 'x', embedding: vec(1) }]), InvalidArgumentError],
      [() => acme.bulkUpsert([{ id: 'x', content: 'nul\u0000', embedding: vec(1) }]), InvalidArgumentError],
      [() => acme.bulkUpsert([{ id: 'x', content: 'x', embedding: vec(1), metadata: { k: 'nul\u0000' } }]), InvalidArgumentError],
      [() => acme.bulkUpsert('rows' as unknown as []), InvalidArgumentError],
      [() => acme.bulkUpsert(batch(1, ['ok']), { deleteWhere: {} }), InvalidArgumentError],
    ]
    for (const [call, type] of calls) await expect(call()).rejects.toBeInstanceOf(type)
    expect(await tableState()).toBe(before)
  })

  it('a row refused by the server in the middle of the COPY (after the delete) leaves every tenant as it was', async (ctx) => {
    if (t.target.citusWorkers) return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
    await sql`create function bup_refuse() returns trigger language plpgsql as $$
      begin if new.content = 'refused' then raise exception 'refused by the test'; end if; return new; end $$`.execute(t.db)
    await sql`create trigger bup_refuse before insert on ${sql.table(TABLE)} for each row execute function bup_refuse()`.execute(t.db)
    try {
      const before = await tableState()
      const rows = [...batch(2, ['a', 'multi', 'n1']), { id: 'n2', content: 'refused', embedding: vec(1) }, ...batch(2, ['n3'])]
      await expect(acme.bulkUpsert(rows)).rejects.toBeInstanceOf(DatabaseError)
      await expect(acme.bulkUpsert(rows, { deleteWhere: { kind: 'faq' } })).rejects.toBeInstanceOf(DatabaseError)
      expect(await tableState()).toBe(before)
    } finally {
      await sql`drop trigger bup_refuse on ${sql.table(TABLE)}`.execute(t.db)
      await sql`drop function bup_refuse()`.execute(t.db)
    }
    expect(await acme.bulkUpsert(batch(3, ['a']))).toEqual(['a'])
  })
})

describe('bulkUpsert with other connections', () => {
  let pool: Database
  let admin: Database
  let shared: TenantStore
  beforeAll(async () => {
    if (!t.url) return
    pool = await connect(t.url, { maxConnections: 8 })
    admin = await connect(t.url, { maxConnections: 2 })
    shared = (await PgVectorStore.open(pool, { table: TABLE, dimensions: DIM })).forTenant('acme')
  })
  afterAll(async () => {
    await pool?.close()
    await admin?.close()
  })

  /** Each id one chunk 0 whose content, metadata and vector are one writer's; the writer of each id. */
  async function writersOf(ids: readonly string[]): Promise<Map<string, number>> {
    const writers = new Map<string, number>()
    for (const chunk of await shared.getChunks(ids, { includeEmbedding: true })) {
      expect(writers.has(chunk.documentId), `${chunk.documentId} has more than one chunk`).toBe(false)
      const writer = chunk.metadata.writer as number
      expect([chunk.chunkIndex, chunk.content]).toEqual([0, `w${writer}:${chunk.documentId}`])
      expect(chunk.embedding!.map((x) => Math.fround(x))).toEqual(vec(writer).map((x) => Math.fround(x)))
      writers.set(chunk.documentId, writer)
    }
    expect([...writers.keys()].sort()).toEqual([...ids].sort())
    return writers
  }

  for (const size of [40, 300]) {
    itWithServer(t.target)(
      `two batches of ${size} overlapping ids at once, opposite orders: no lost or doubled row, the overlap one writer's`,
      async () => {
        const ids = Array.from({ length: Math.round(size * 1.5) }, (_, i) => `c-${i}`)
        for (let round = 0; round < 6; round++) {
          const first = ids.slice(0, size)
          const second = ids.slice(size / 2).reverse()
          const written = await Promise.all([
            shared.bulkUpsert(batch(2 * round, first)),
            round % 2 === 0 ? shared.bulkUpsert(batch(2 * round + 1, second)) : shared.upsertChunks(batch(2 * round + 1, second)),
          ])
          expect(written.map((w) => w.length)).toEqual([size, size])
          const byId = await writersOf(ids)
          expect(new Set(ids.slice(size / 2, size).map((id) => byId.get(id))).size, `round ${round}`).toBe(1)
          // The same batch twice at once: the second wins whole, one row per id.
          await Promise.all([shared.bulkUpsert(batch(100, first)), shared.bulkUpsert(batch(100, first))])
          expect(new Set((await writersOf(first)).values())).toEqual(new Set([100]))
        }
      },
    )
  }

  itWithServer(t.target)(
    "the backend killed between the batch's delete and its COPY's end: nothing written, no lock left, the pool goes on",
    async (ctx) => {
      if (t.target.citusWorkers) return skipBecause(ctx, 'the wait is injected by a trigger, which Citus refuses on a distributed table')
      await sql`create function bup_wait() returns trigger language plpgsql as $$
      begin if new.content = 'wait' then perform pg_advisory_xact_lock_shared(4343, 4343); end if; return new; end $$`.execute(admin)
      await sql`create trigger bup_wait before insert on ${sql.table(TABLE)} for each row execute function bup_wait()`.execute(admin)
      let release: (() => void) | undefined
      try {
        const before = await tableState(admin)
        const held = new Promise<void>((resolve) => (release = resolve))
        let holding!: () => void
        const holds = new Promise<void>((resolve) => (holding = resolve))
        const holder = admin.transaction(async (trx) => {
          await sql`select pg_advisory_xact_lock(4343, 4343)`.execute(trx)
          holding()
          await held
        })
        await holds
        const pending = shared.bulkUpsert([...batch(4, ['a', 'multi']), { id: 'w', content: 'wait', embedding: vec(2) }]).then(
          () => 'resolved',
          (e: unknown) => e,
        )
        await terminateWhen(admin, `wait_event_type = 'Lock' and query ilike 'copy %'`)
        release!()
        await holder
        expect(await pending).toBeInstanceOf(DatabaseError)
        expect(await tableState(admin)).toBe(before)
        // This database's only: pg_locks is the whole server's, where other test files run at the same time.
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_locks
          where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`.execute(admin)
        expect(rows[0]!.n).toBe(0)
      } finally {
        release?.()
        await sql`drop trigger bup_wait on ${sql.table(TABLE)}`.execute(admin)
        await sql`drop function bup_wait()`.execute(admin)
      }
      await Promise.all([shared.bulkUpsert(batch(5, ['a', 'w'])), shared.getChunks(['b'])])
      expect((await writersOf(['a', 'w'])).get('w')).toBe(5)
    },
  )

  itWithServer(t.target)('bad input sends nothing at all', async () => {
    const counted = countingPool({ connectionString: t.url, max: 1 })
    try {
      const tenant = (await PgVectorStore.open(counted.pool, { table: TABLE, dimensions: DIM })).forTenant('acme')
      for (const call of [
        () => tenant.bulkUpsert([...batch(1, ['ok']), { id: 'bad', content: 'x', embedding: [1, Number.NaN, 0, 0] }]),
        () => tenant.bulkUpsert(batch(1, ['ok']), { deleteWhere: {} }),
      ]) {
        counted.reset()
        await expect(call()).rejects.toBeInstanceOf(InvalidArgumentError)
        expect(counted.queries).toBe(0)
      }
    } finally {
      await counted.pool.end()
    }
  })
})
