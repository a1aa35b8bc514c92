import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  DatabaseError,
  DimensionMismatchError,
  InvalidArgumentError,
  PgScaleError,
  PgVectorStore,
  type TenantStore,
} from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { skipBecause } from '../support/skip.js'
import { axisVector } from '../support/vectors.js'

/**
 * The store capabilities framework adapters build on (LangChain.js, Mastra, LlamaIndex.TS):
 * `upsertChunks`, `getChunks`, `updateMetadata`, `includeEmbedding` on searches, and
 * `maxMarginalRelevanceSearch` — each on its own, tenant-scoped, checked before anything is sent.
 * Two writers at once and a killed connection: adapter-capabilities-concurrency.test.ts.
 */
const t = useTestDatabase()
const DIM = 8
const TABLE = 'cap_chunks'
let store: PgVectorStore
let acme: TenantStore
let other: TenantStore

const vec = (axis: number, tilt = 0): number[] => axisVector(DIM, axis, tilt)

/** Every row of the table, in key order, vectors as text: what must not change. */
async function tableState(): Promise<string> {
  const { rows } = await sql`
    select tenant_id, document_id, chunk_index, content, metadata, embedding::text
    from ${sql.table(TABLE)} order by 1, 2, 3`.execute(t.db)
  return JSON.stringify(rows)
}

async function rowsOf(tenant: string, documentId: string) {
  const { rows } = await sql<{ chunk_index: number; content: string; metadata: Record<string, unknown> }>`
    select chunk_index, content, metadata from ${sql.table(TABLE)}
    where tenant_id = ${tenant} and document_id = ${documentId} order by chunk_index`.execute(t.db)
  return rows
}

/** The table emptied, and the same documents written for `acme` and `other`. */
async function seed(): Promise<void> {
  await sql`truncate ${sql.table(TABLE)}`.execute(t.db)
  for (const tenant of [acme, other]) {
    await tenant.upsertChunks([
      { id: 'a', content: `${tenant.tenantId} a`, embedding: vec(0), metadata: { kind: 'faq', n: 1 } },
      { id: 'b', content: `${tenant.tenantId} b`, embedding: vec(1), metadata: { kind: 'faq', n: 2 } },
      { id: 'c', content: `${tenant.tenantId} c`, embedding: vec(2), metadata: { kind: 'blog', n: 3 } },
    ])
    await tenant.replaceDocument(
      'multi',
      [0, 1, 2].map((i) => ({ content: `multi ${i}`, embedding: vec(i + 3), metadata: { kind: 'book' } })),
    )
  }
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: DIM })
  acme = store.forTenant('acme')
  other = store.forTenant('other')
})

describe('upsertChunks', () => {
  beforeEach(seed)

  it('writes each id as a document of one chunk (index 0) and returns the ids', async () => {
    expect(await acme.upsertChunks([{ id: 'new', content: 'fresh', embedding: vec(5) }])).toEqual(['new'])
    expect(await rowsOf('acme', 'new')).toEqual([{ chunk_index: 0, content: 'fresh', metadata: {} }])
    expect(await rowsOf('acme', 'a')).toEqual([{ chunk_index: 0, content: 'acme a', metadata: { kind: 'faq', n: 1 } }])
    expect(await acme.upsertChunks([])).toEqual([])
  })

  it('an existing id is replaced whole: content, metadata, embedding, and its other chunks removed', async () => {
    await acme.upsertChunks([
      { id: 'a', content: 'a v2', embedding: vec(7), metadata: { v: 2 } },
      { id: 'multi', content: 'multi as one', embedding: vec(6) },
    ])
    expect(await rowsOf('acme', 'a')).toEqual([{ chunk_index: 0, content: 'a v2', metadata: { v: 2 } }])
    expect(await rowsOf('acme', 'multi')).toEqual([{ chunk_index: 0, content: 'multi as one', metadata: {} }])
    const [hit] = await acme.exactSearch(vec(7), { k: 1 })
    expect(hit).toMatchObject({ documentId: 'a', distance: expect.closeTo(0, 6) })
    // The other tenant's documents of the same ids are untouched.
    expect(await rowsOf('other', 'a')).toEqual([{ chunk_index: 0, content: 'other a', metadata: { kind: 'faq', n: 1 } }])
    expect(await rowsOf('other', 'multi')).toHaveLength(3)
  })

  it('an id given twice: the last row wins, at the place of the first, and the id is returned once', async () => {
    const ids = await acme.upsertChunks([
      { id: 'd', content: 'd first', embedding: vec(1) },
      { id: 'e', content: 'e only', embedding: vec(2) },
      { id: 'd', content: 'd last', embedding: vec(3), metadata: { last: true } },
    ])
    expect(ids).toEqual(['d', 'e'])
    expect(await rowsOf('acme', 'd')).toEqual([{ chunk_index: 0, content: 'd last', metadata: { last: true } }])
  })

  it('deleteWhere: the matching rows are deleted and the rows upserted, in one transaction', async () => {
    const ids = await acme.upsertChunks([{ id: 'faq-new', content: 'the new faq', embedding: vec(4), metadata: { kind: 'faq' } }], {
      deleteWhere: { kind: 'faq' },
    })
    expect(ids).toEqual(['faq-new'])
    expect((await acme.find({ filter: { kind: 'faq' } })).rows.map((r) => r.documentId)).toEqual(['faq-new'])
    expect(await acme.count()).toBe(1 + 1 + 3)
    // The other tenant's faq rows are not reached by the filter.
    expect(await other.count({ kind: 'faq' })).toBe(2)
    // With no rows it is a delete alone.
    expect(await acme.upsertChunks([], { deleteWhere: { kind: 'blog' } })).toEqual([])
    expect(await acme.count({ kind: 'blog' })).toBe(0)
  })

  it('a batch of 2,500 rows (three statements, the tenant lock) is written whole; 2,500 more replace it', async () => {
    const rows = (tag: string) =>
      Array.from({ length: 2500 }, (_, i) => ({
        id: `bulk-${i}`,
        content: `${tag} ${i}`,
        embedding: vec(i, (i % 7) / 7),
        metadata: { tag, i },
      }))
    const ids = await acme.upsertChunks(rows('v1'))
    expect(ids).toHaveLength(2500)
    expect(ids[2499]).toBe('bulk-2499')
    expect(await acme.count({ tag: 'v1' })).toBe(2500)
    await acme.upsertChunks(rows('v2'))
    expect(await acme.count({ tag: 'v1' })).toBe(0)
    expect(await acme.count({ tag: 'v2' })).toBe(2500)
    const some = await acme.getChunks(['bulk-2499', 'bulk-0', 'bulk-1234'])
    expect(some.map((c) => c.content)).toEqual(['v2 2499', 'v2 0', 'v2 1234'])
  })

  it('a statement failing after the delete (a trigger refuses an insert) leaves the tenant unchanged; the next call works', async (ctx) => {
    if (t.target.citusWorkers) return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
    await sql`create function cap_refuse() returns trigger language plpgsql as $$
      begin if new.content = 'refused' then raise exception 'refused by the test'; end if; return new; end $$`.execute(t.db)
    await sql`create trigger cap_refuse before insert on ${sql.table(TABLE)} for each row execute function cap_refuse()`.execute(t.db)
    try {
      const before = await tableState()
      const rows = [
        { id: 'x1', content: 'fine', embedding: vec(1) },
        { id: 'x2', content: 'refused', embedding: vec(2) },
      ]
      const err = await acme.upsertChunks(rows, { deleteWhere: { kind: 'faq' } }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(DatabaseError)
      expect(await tableState()).toBe(before)
    } finally {
      await sql`drop trigger cap_refuse on ${sql.table(TABLE)}`.execute(t.db)
      await sql`drop function cap_refuse()`.execute(t.db)
    }
    expect(await acme.upsertChunks([{ id: 'x1', content: 'fine', embedding: vec(1) }], { deleteWhere: { kind: 'faq' } })).toEqual(['x1'])
    expect(await acme.count({ kind: 'faq' })).toBe(0)
  })

  it('inside an app transaction: rolls back with it; a failing call rolls back to its savepoint only', async () => {
    const before = await tableState()
    await expect(
      t.db.transaction().execute(async (trx) => {
        const inTrx = store.forTenant('acme', { transaction: trx })
        await inTrx.upsertChunks([{ id: 'a', content: 'uncommitted', embedding: vec(1) }], { deleteWhere: { kind: 'blog' } })
        expect((await inTrx.getChunks(['a']))[0]?.content).toBe('uncommitted')
        throw new Error('the app changes its mind')
      }),
    ).rejects.toThrow('the app changes its mind')
    expect(await tableState()).toBe(before)
    // The timestamp reader is gone: a deleteWhere with a date fails on the server, after its lock.
    await sql`alter function pgscale_iso_instant(jsonb) rename to pgscale_iso_instant_away`.execute(t.db)
    try {
      await t.db.transaction().execute(async (trx) => {
        const inTrx = store.forTenant('acme', { transaction: trx })
        await inTrx.upsertChunks([{ id: 'a', content: 'committed', embedding: vec(1) }])
        const failing = inTrx.upsertChunks([{ id: 'b', content: 'lost', embedding: vec(1) }], { deleteWhere: { at: { $lt: new Date() } } })
        await expect(failing).rejects.toBeInstanceOf(DatabaseError)
        expect((await inTrx.getChunks(['a', 'b'])).map((c) => c.content)).toEqual(['committed', 'acme b'])
      })
    } finally {
      await sql`alter function pgscale_iso_instant_away(jsonb) rename to pgscale_iso_instant`.execute(t.db)
    }
    expect((await acme.getChunks(['a']))[0]?.content).toBe('committed')
  })
})

describe('getChunks', () => {
  beforeAll(seed)

  it('returns the documents in the order of the ids, each by chunk index; missing and repeated ids are simply absent or once', async () => {
    const chunks = await acme.getChunks(['c', 'missing', 'multi', 'a', 'c'])
    expect(chunks.map((c) => [c.documentId, c.chunkIndex, c.content])).toEqual([
      ['c', 0, 'acme c'],
      ['multi', 0, 'multi 0'],
      ['multi', 1, 'multi 1'],
      ['multi', 2, 'multi 2'],
      ['a', 0, 'acme a'],
    ])
    expect(chunks[0]).toEqual({ documentId: 'c', chunkIndex: 0, content: 'acme c', metadata: { kind: 'blog', n: 3 } })
    expect(await acme.getChunks([])).toEqual([])
    expect(await store.forTenant('nobody').getChunks(['a', 'b'])).toEqual([])
  })

  it('includeEmbedding returns the stored vectors', async () => {
    const [a] = await acme.getChunks(['a'], { includeEmbedding: true })
    expect(a?.embedding).toEqual(vec(0))
  })
})

describe('updateMetadata', () => {
  beforeEach(seed)

  it('by ids: replaces the metadata of every chunk of those documents, keeps content; returns the rows changed', async () => {
    expect(await acme.updateMetadata({ ids: ['a', 'multi', 'missing'] }, { metadata: { replaced: true } })).toBe(4)
    expect(await rowsOf('acme', 'a')).toEqual([{ chunk_index: 0, content: 'acme a', metadata: { replaced: true } }])
    expect((await rowsOf('acme', 'multi')).map((r) => r.metadata)).toEqual([{ replaced: true }, { replaced: true }, { replaced: true }])
    expect(await rowsOf('other', 'a')).toEqual([{ chunk_index: 0, content: 'other a', metadata: { kind: 'faq', n: 1 } }])
    expect(await acme.updateMetadata({ ids: [] }, { metadata: {} })).toBe(0)
  })

  it('merge sets top-level keys and keeps the others', async () => {
    expect(await acme.updateMetadata({ ids: ['a'] }, { metadata: { n: 10, reviewed: true }, mode: 'merge' })).toBe(1)
    expect((await rowsOf('acme', 'a'))[0]?.metadata).toEqual({ kind: 'faq', n: 10, reviewed: true })
  })

  it('the embedding alone: the search finds the chunk at its new vector; content and metadata kept', async () => {
    expect(await acme.updateMetadata({ ids: ['b'] }, { embedding: vec(7, 0.5) })).toBe(1)
    const [hit] = await acme.exactSearch(vec(7, 0.5), { k: 1, includeEmbedding: true })
    expect(hit).toMatchObject({ documentId: 'b', content: 'acme b', metadata: { kind: 'faq', n: 2 }, embedding: vec(7, 0.5) })
    const [theirs] = await other.exactSearch(vec(7, 0.5), { k: 1 })
    expect(theirs?.documentId).not.toBe('b')
  })

  it('by filter: only this tenant’s matching rows change', async () => {
    expect(await acme.updateMetadata({ filter: { kind: 'faq' } }, { metadata: { stale: true }, mode: 'merge' })).toBe(2)
    expect(await acme.count({ stale: true })).toBe(2)
    expect(await other.count({ stale: true })).toBe(0)
    expect(await acme.updateMetadata({ filter: { kind: 'nothing' } }, { metadata: { x: 1 } })).toBe(0)
    expect(await acme.updateMetadata({ filter: { n: { $gte: 2 } } }, { metadata: { kind: 'old' }, embedding: vec(5) })).toBe(2)
    expect(await acme.count({ kind: 'old' })).toBe(2)
  })
})

describe('tenant isolation', () => {
  beforeAll(seed)

  it("another tenant's handle never reads or changes this tenant's rows, by ids or by filter", async () => {
    const before = await tableState()
    const nobody = store.forTenant('nobody')
    expect(await nobody.getChunks(['a', 'b', 'multi'])).toEqual([])
    expect(await nobody.updateMetadata({ ids: ['a', 'multi'] }, { metadata: { hacked: true } })).toBe(0)
    expect(await nobody.updateMetadata({ filter: { kind: 'faq' } }, { metadata: { hacked: true }, embedding: vec(1) })).toBe(0)
    expect(await nobody.updateMetadata({ filter: { $or: [{ kind: 'faq' }, { n: { $exists: true } }] } }, { metadata: {} })).toBe(0)
    expect(await nobody.upsertChunks([], { deleteWhere: { kind: { $exists: true } } })).toEqual([])
    expect(await nobody.maxMarginalRelevanceSearch(vec(0), { k: 3 })).toEqual([])
    expect(await tableState()).toBe(before)
    // Its own rows of the same ids are its own documents.
    await nobody.upsertChunks([{ id: 'a', content: 'nobody a', embedding: vec(0) }])
    expect((await acme.getChunks(['a']))[0]?.content).toBe('acme a')
    expect((await nobody.getChunks(['a']))[0]?.content).toBe('nobody a')
  })
})

describe('includeEmbedding on searches', () => {
  beforeAll(seed)

  it('search (unfiltered, filtered exact and walked) and exactSearch return each hit’s vector, in distance order', async () => {
    const q = [0.3, 1, 0.2, 0, 0, 0, 0, 0]
    const plain = await acme.search(q, { k: 3 })
    expect(plain.every((h) => h.embedding === undefined)).toBe(true)
    const calls = [
      acme.search(q, { k: 3, includeEmbedding: true }),
      acme.exactSearch(q, { k: 3, includeEmbedding: true }),
      acme.search(q, { k: 3, includeEmbedding: true, filter: { kind: { $in: ['faq', 'blog'] } } }),
      acme.search(q, { k: 3, includeEmbedding: true, filter: { kind: { $in: ['faq', 'blog'] } }, filterStrategy: 'index' }),
      acme.exactSearch(q, { k: 3, includeEmbedding: true, filter: { kind: { $ne: 'book' } } }),
    ]
    const expected = await acme.getChunks(['a', 'b', 'c'], { includeEmbedding: true })
    for (const hits of await Promise.all(calls)) {
      expect(hits.map((h) => h.documentId)).toEqual(['b', 'a', 'c'])
      expect(hits.map((h) => h.distance)).toEqual([...hits.map((h) => h.distance)].sort((x, y) => x - y))
      for (const hit of hits) expect(hit.embedding).toEqual(expected.find((c) => c.documentId === hit.documentId)?.embedding)
    }
  })

  it('a halfvec store returns its vectors as numbers too', async () => {
    const half = await PgVectorStore.open(t.db, { table: 'cap_half', dimensions: DIM, vectorType: 'halfvec' })
    await half.forTenant('acme').upsertChunks([{ id: 'h', content: 'half', embedding: vec(2, 0.5) }])
    const [hit] = await half.forTenant('acme').search(vec(2), { k: 1, includeEmbedding: true })
    expect(hit?.embedding).toEqual(vec(2, 0.5))
    expect((await half.forTenant('acme').getChunks(['h'], { includeEmbedding: true }))[0]?.embedding).toEqual(vec(2, 0.5))
    expect(await half.forTenant('acme').updateMetadata({ ids: ['h'] }, { embedding: vec(3, 0.25) })).toBe(1)
    const [updated] = await half.forTenant('acme').exactSearch(vec(3), { k: 1, includeEmbedding: true, filter: { $nor: [{ x: 1 }] } })
    expect(updated?.embedding).toEqual(vec(3, 0.25))
  })
})

describe('maxMarginalRelevanceSearch', () => {
  it('picks a diverse chunk over a near-duplicate of the first; lambda 1 is plain relevance', async () => {
    const mmr = await PgVectorStore.open(t.db, { table: 'cap_mmr', dimensions: 2 })
    const tenant = mmr.forTenant('acme')
    const at = (degrees: number) => [Math.cos((degrees * Math.PI) / 180), Math.sin((degrees * Math.PI) / 180)]
    await tenant.upsertChunks([
      { id: 'first', content: '10°', embedding: at(10) },
      { id: 'near-duplicate', content: '12°', embedding: at(12) },
      { id: 'diverse', content: '-40°', embedding: at(-40), metadata: { kind: 'x' } },
      { id: 'far', content: '100°', embedding: at(100), metadata: { kind: 'x' } },
    ])
    await mmr.forTenant('other').upsertChunks([{ id: 'theirs', content: '-10°', embedding: at(-10) }])
    const ids = async (options: Parameters<TenantStore['maxMarginalRelevanceSearch']>[1]) =>
      (await tenant.maxMarginalRelevanceSearch(at(0), options)).map((h) => h.documentId)
    expect(await ids({ k: 2 })).toEqual(['first', 'diverse'])
    expect(await ids({ k: 2, lambda: 1 })).toEqual(['first', 'near-duplicate'])
    expect(await ids({ k: 3, fetchK: 4, lambda: 0.5 })).toEqual(['first', 'diverse', 'near-duplicate'])
    expect(await ids({ k: 2, filter: { kind: 'x' } })).toEqual(['diverse', 'far'])
    const hits = await tenant.maxMarginalRelevanceSearch(at(0), { k: 2 })
    expect(hits[0]).toEqual({
      documentId: 'first',
      chunkIndex: 0,
      content: '10°',
      metadata: {},
      distance: expect.closeTo(1 - Math.cos(Math.PI / 18), 6),
    })
    const withVectors = await tenant.maxMarginalRelevanceSearch(at(0), { k: 1, includeEmbedding: true })
    expect(withVectors[0]?.embedding?.map((x) => Math.round(x * 1e6) / 1e6)).toEqual(at(10).map((x) => Math.round(x * 1e6) / 1e6))
  })
})

describe('bad input: a typed PgScaleError before anything is sent, nothing written', () => {
  beforeAll(seed)
  const good = vec(0)
  const cases: Array<[string, () => Promise<unknown>, new (...args: any[]) => PgScaleError]> = [
    ['upsertChunks: rows not an array', () => acme.upsertChunks({} as never), InvalidArgumentError],
    ['upsertChunks: a row not an object', () => acme.upsertChunks([null as never]), InvalidArgumentError],
    ['upsertChunks: an empty id', () => acme.upsertChunks([{ id: '', content: 'x', embedding: good }]), InvalidArgumentError],
    [
      'upsertChunks: an id that is not a string',
      () => acme.upsertChunks([{ id: 7 as never, content: 'x', embedding: good }]),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: a bad vector in the last row',
      () =>
        acme.upsertChunks([
          { id: 'a', content: 'ok', embedding: good },
          { id: 'z', content: 'bad', embedding: [Number.NaN, 0, 0, 0, 0, 0, 0, 0] },
        ]),
      InvalidArgumentError,
    ],
    ['upsertChunks: wrong dimensions', () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: [1, 2] }]), DimensionMismatchError],
    ['upsertChunks: NUL in content', () => acme.upsertChunks([{ id: 'a', content: 'a\u0000', embedding: good }]), InvalidArgumentError],
    [
      'upsertChunks: NUL in metadata (jsonb cannot hold it)',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good, metadata: { note: 'a\u0000b' } }]),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: a lone surrogate in a metadata key',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good, metadata: { ['k\uD800']: 1 } }]),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: a BigInt in metadata',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good, metadata: { n: 1n } }]),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: a Date as metadata',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good, metadata: new Date() as never }]),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: metadata not an object',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good, metadata: [] as never }]),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: deleteWhere {}',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good }], { deleteWhere: {} }),
      InvalidArgumentError,
    ],
    [
      'upsertChunks: a bad deleteWhere operator',
      () => acme.upsertChunks([{ id: 'a', content: 'x', embedding: good }], { deleteWhere: { n: { $near: 1 } } }),
      InvalidArgumentError,
    ],
    ['getChunks: ids not an array', () => acme.getChunks('a' as never), InvalidArgumentError],
    ['getChunks: a bad id', () => acme.getChunks(['a', '']), InvalidArgumentError],
    ['getChunks: 10,001 ids', () => acme.getChunks(Array.from({ length: 10_001 }, (_, i) => `d${i}`)), InvalidArgumentError],
    ['getChunks: includeEmbedding not a boolean', () => acme.getChunks(['a'], { includeEmbedding: 'yes' as never }), InvalidArgumentError],
    ['updateMetadata: an empty filter', () => acme.updateMetadata({ filter: {} }, { metadata: {} }), InvalidArgumentError],
    [
      'updateMetadata: ids and a filter',
      () => acme.updateMetadata({ ids: ['a'], filter: { n: 1 } } as never, { metadata: {} }),
      InvalidArgumentError,
    ],
    ['updateMetadata: no target', () => acme.updateMetadata({} as never, { metadata: {} }), InvalidArgumentError],
    ['updateMetadata: nothing to update', () => acme.updateMetadata({ ids: ['a'] }, {}), InvalidArgumentError],
    [
      'updateMetadata: unknown mode',
      () => acme.updateMetadata({ ids: ['a'] }, { metadata: {}, mode: 'patch' as never }),
      InvalidArgumentError,
    ],
    [
      'updateMetadata: mode without metadata',
      () => acme.updateMetadata({ ids: ['a'] }, { embedding: good, mode: 'merge' }),
      InvalidArgumentError,
    ],
    ['updateMetadata: wrong dimensions', () => acme.updateMetadata({ ids: ['a'] }, { embedding: [1] }), DimensionMismatchError],
    ['updateMetadata: a bad id', () => acme.updateMetadata({ ids: ['a', '\uDC00'] }, { metadata: {} }), InvalidArgumentError],
    ['updateMetadata: metadata null', () => acme.updateMetadata({ ids: ['a'] }, { metadata: null as never }), InvalidArgumentError],
    ['search: includeEmbedding not a boolean', () => acme.search(good, { includeEmbedding: 1 as never }), InvalidArgumentError],
    ['maxMarginalRelevanceSearch: k = 0', () => acme.maxMarginalRelevanceSearch(good, { k: 0 }), InvalidArgumentError],
    ['maxMarginalRelevanceSearch: fetchK < k', () => acme.maxMarginalRelevanceSearch(good, { k: 5, fetchK: 4 }), InvalidArgumentError],
    ['maxMarginalRelevanceSearch: lambda 1.5', () => acme.maxMarginalRelevanceSearch(good, { k: 2, lambda: 1.5 }), InvalidArgumentError],
    ['maxMarginalRelevanceSearch: no options', () => acme.maxMarginalRelevanceSearch(good, undefined as never), InvalidArgumentError],
    ['maxMarginalRelevanceSearch: wrong dimensions', () => acme.maxMarginalRelevanceSearch([1, 0], { k: 2 }), DimensionMismatchError],
  ]
  it.each(cases)('%s', async (_name, call, errorClass) => {
    const before = await tableState()
    const err = await call().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(errorClass)
    expect(err).toBeInstanceOf(PgScaleError)
    expect(await tableState()).toBe(before)
  })
})
