import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { InvalidIdentifierError, PgVectorStore, SchemaMismatchError, type Distance } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

const t = useTestDatabase()
const DIM = 8

const vec = (axis: number, tilt = 0): number[] => axisVector(DIM, axis, tilt)

function jsDistance(distance: Distance, a: number[], b: number[]): number {
  const dot = a.reduce((s, x, i) => s + x * b[i]!, 0)
  if (distance === 'inner_product') return -dot
  if (distance === 'l2') return Math.sqrt(a.reduce((s, x, i) => s + (x - b[i]!) ** 2, 0))
  const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0))
  return 1 - dot / (norm(a) * norm(b))
}

describe('PgVectorStore.open', () => {
  it('creates the table keyed by (tenant_id, document_id, chunk_index), PLAIN vectors, a GIN index; idempotent', async () => {
    await PgVectorStore.open(t.db, { table: 'api_chunks', dimensions: DIM })
    await PgVectorStore.open(t.db, { table: 'api_chunks', dimensions: DIM })
    const { rows: pk } = await sql<{ column: string }>`
      select a.attname as column from pg_index x
      join pg_attribute a on a.attrelid = x.indrelid and a.attnum = any(x.indkey)
      where x.indrelid = 'api_chunks'::regclass and x.indisprimary
      order by array_position(x.indkey::int2[], a.attnum)`.execute(t.db)
    expect(pk.map((r) => r.column)).toEqual(['tenant_id', 'document_id', 'chunk_index'])
    const { rows: storage } = await sql<{ s: string }>`
      select attstorage as s from pg_attribute where attrelid = 'api_chunks'::regclass and attname = 'embedding'`.execute(t.db)
    expect(storage[0]?.s).toBe('p')
    const { rows: gin } = await sql<{ am: string }>`
      select am.amname as am from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
      where x.indrelid = 'api_chunks'::regclass and am.amname = 'gin'`.execute(t.db)
    expect(gin).toHaveLength(1)
  })

  it('refuses an existing table with other dimensions or distance', async () => {
    await expect(PgVectorStore.open(t.db, { table: 'api_chunks', dimensions: DIM + 1 })).rejects.toBeInstanceOf(SchemaMismatchError)
    await expect(PgVectorStore.open(t.db, { table: 'api_chunks', dimensions: DIM, distance: 'l2' })).rejects.toThrow(/distance/)
  })

  it('refuses a table name that is not an identifier', async () => {
    await expect(PgVectorStore.open(t.db, { table: 'chunks; drop table x', dimensions: DIM })).rejects.toBeInstanceOf(
      InvalidIdentifierError,
    )
  })

  it('recreates a table that was dropped behind its back', async () => {
    await PgVectorStore.open(t.db, { table: 'dropped_chunks', dimensions: DIM })
    await sql`drop table dropped_chunks`.execute(t.db)
    const store = await PgVectorStore.open(t.db, { table: 'dropped_chunks', dimensions: DIM })
    expect((await store.stats()).rows).toBe(0)
  })

  it('two stores opening the same new table at once both succeed', async () => {
    const stores = await Promise.all([1, 2, 3].map(() => PgVectorStore.open(t.db, { table: 'race_chunks', dimensions: DIM })))
    expect(stores).toHaveLength(3)
  })
})

describe('documents', () => {
  it('replaceDocument writes chunks 0..n-1, replaces them, and an empty list deletes the document', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'doc_chunks', dimensions: DIM })
    const acme = store.forTenant('acme')
    expect(
      await acme.replaceDocument(
        'd1',
        [0, 1, 2].map((i) => ({ content: `v1 chunk ${i}`, embedding: vec(i), metadata: { v: 1 } })),
      ),
    ).toEqual({ written: 3, removed: 0 })
    expect(
      await acme.replaceDocument(
        'd1',
        [0, 1].map((i) => ({ content: `v2 chunk ${i}`, embedding: vec(i) })),
      ),
    ).toEqual({ written: 2, removed: 1 })
    const rows = await acme.exactSearch(vec(0), { k: 10 })
    expect(rows.map((r) => [r.documentId, r.chunkIndex, r.content, r.metadata]).sort()).toEqual([
      ['d1', 0, 'v2 chunk 0', {}],
      ['d1', 1, 'v2 chunk 1', {}],
    ])
    expect(await acme.replaceDocument('d1', [])).toEqual({ written: 0, removed: 2 })
    expect(await acme.exactSearch(vec(0), { k: 10 })).toEqual([])
  })

  it('deleteDocument returns the chunks deleted and touches no other tenant', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'doc_chunks', dimensions: DIM })
    for (const tenant of ['a', 'b']) {
      await store.forTenant(tenant).replaceDocument('same-id', [
        { content: tenant, embedding: vec(1) },
        { content: tenant, embedding: vec(2) },
      ])
    }
    expect(await store.forTenant('a').deleteDocument('same-id')).toBe(2)
    expect(await store.forTenant('a').deleteDocument('same-id')).toBe(0)
    const left = await store.forTenant('b').exactSearch(vec(1), { k: 10 })
    expect(left.map((r) => r.content)).toEqual(['b', 'b'])
  })
})

describe('search', () => {
  it.each(['cosine', 'l2', 'inner_product'] as const)(
    '%s: search and exactSearch return the true nearest, nearest first',
    async (distance) => {
      const store = await PgVectorStore.open(t.db, { table: `search_${distance}`, dimensions: DIM, distance })
      const acme = store.forTenant('acme')
      const vectors = Array.from({ length: 24 }, (_, i) => vec(i, (i % 5) / 4))
      await acme.replaceDocument(
        'doc',
        vectors.map((embedding, i) => ({ content: `c${i}`, embedding })),
      )
      await store.forTenant('other').replaceDocument(
        'doc',
        vectors.map((embedding, i) => ({ content: `o${i}`, embedding })),
      )
      const query = vec(3, 0.3)
      const expected = vectors
        .map((v, i) => ({ i, d: jsDistance(distance, query, v) }))
        .sort((a, b) => a.d - b.d || a.i - b.i)
        .slice(0, 5)
      for (const hits of [await acme.search(query, { k: 5 }), await acme.exactSearch(query, { k: 5 })]) {
        expect(hits).toHaveLength(5)
        expect(hits.map((h) => h.distance)).toEqual(expected.map((e) => expect.closeTo(e.d, 5)))
        expect(hits.every((h) => h.content.startsWith('c'))).toBe(true)
      }
    },
  )

  it('returns min(k, chunks of the tenant) and honours the metadata filter', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'filter_chunks', dimensions: DIM })
    const acme = store.forTenant('acme')
    await acme.replaceDocument(
      'inv',
      [0, 1, 2].map((i) => ({ content: `invoice ${i}`, embedding: vec(i), metadata: { kind: 'invoice' } })),
    )
    await acme.replaceDocument(
      'con',
      [0, 1].map((i) => ({ content: `contract ${i}`, embedding: vec(i), metadata: { kind: 'contract', year: 2024 } })),
    )
    expect(await acme.search(vec(0), { k: 10 })).toHaveLength(5)
    const contracts = await acme.search(vec(0), { k: 10, filter: { kind: 'contract' } })
    expect(contracts.map((c) => c.content).sort()).toEqual(['contract 0', 'contract 1'])
    expect(await acme.exactSearch(vec(0), { k: 10, filter: { year: 2024 } })).toHaveLength(2)
    expect(await acme.search(vec(0), { k: 10, filter: { kind: 'memo' } })).toEqual([])
  })

  it('search applies ef_search and iterative scan with SET LOCAL and the session keeps its defaults', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'filter_chunks', dimensions: DIM })
    await store.forTenant('acme').search(vec(0), { k: 3, efSearch: 250, iterativeScan: 'strict' })
    const { rows } = await sql<{ ef: string; scan: string }>`
      select current_setting('hnsw.ef_search') as ef, current_setting('hnsw.iterative_scan') as scan`.execute(t.db)
    expect(rows[0]).toEqual({ ef: '40', scan: 'off' })
  })
})

describe('hybridSearch', () => {
  it('ranks an exact keyword match first, fusing vector and full-text ranks', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'hybrid_chunks', dimensions: DIM })
    const acme = store.forTenant('acme')
    const chunks = Array.from({ length: 30 }, (_, i) => ({ content: `routine note number ${i} about shipping`, embedding: vec(0, i / 30) }))
    // The keyword chunk is not the vector's nearest (tilt 0.5), but it is the only text match.
    chunks[15] = { content: 'the zebra reconciliation for quarterly shipping', embedding: vec(0, 0.5) }
    await acme.replaceDocument('notes', chunks)
    await store.forTenant('other').replaceDocument('notes', [{ content: 'zebra zebra zebra', embedding: vec(0) }])
    const hits = await acme.hybridSearch({ embedding: vec(0), text: 'zebra', k: 5 })
    expect(hits[0]?.content).toBe('the zebra reconciliation for quarterly shipping')
    expect(hits).toHaveLength(5)
    expect(hits.every((h) => h.documentId === 'notes' && !h.content.startsWith('zebra zebra'))).toBe(true)
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score)
    // Without a text match, the fusion is the vector order.
    const vectorOnly = await acme.hybridSearch({ embedding: vec(0), text: 'nonexistentword', k: 3 })
    expect(vectorOnly.map((h) => h.chunkIndex)).toEqual([0, 1, 2])
  })
})

describe('a schema-qualified table', () => {
  it('works end to end outside the search path: indexes found, sized, not rebuilt', async () => {
    await sql`create schema if not exists rag`.execute(t.db)
    const store = await PgVectorStore.open(t.db, { table: 'rag.chunks', dimensions: DIM })
    await store.bulkIngest(
      Array.from({ length: 40 }, (_, i) => ({
        tenantId: `t${i % 2}`,
        documentId: `d${i}`,
        chunkIndex: 0,
        content: `c${i}`,
        embedding: vec(i),
      })),
    )
    const first = await store.createIndex()
    expect(first).toMatchObject({ built: true, index: 'chunks_embedding_hnsw' })
    expect(first.bytes).toBeGreaterThan(0)
    expect(await store.createIndex()).toMatchObject({ built: false, bytes: first.bytes })
    const report = await store.optimize({ ownIndexAbove: 10 })
    expect(report.built.map((b) => b.tenantId).sort()).toEqual(['t0', 't1'])
    expect(report.sharedIndex).toMatchObject({ name: 'chunks_embedding_hnsw', bytes: first.bytes })
    expect((await store.forTenant('t1').search(vec(1), { k: 3 })).map((r) => r.documentId)).toContain('d1')
  })
})

describe('stats', () => {
  it('counts rows and tenants and sizes heap, TOAST and each index', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'stats_chunks', dimensions: DIM })
    await store.bulkIngest(
      Array.from({ length: 50 }, (_, i) => ({
        tenantId: `t${i % 5}`,
        documentId: `d${i}`,
        chunkIndex: 0,
        content: `c${i}`,
        embedding: vec(i),
      })),
    )
    await store.createIndex()
    const stats = await store.stats()
    expect(stats.rows).toBe(50)
    expect(stats.tenants).toBe(5)
    expect(Object.keys(stats.bytes.indexes).sort()).toEqual([
      'stats_chunks_embedding_hnsw',
      'stats_chunks_pkey',
      'stats_chunks_search_text_gin',
    ])
    expect(stats.bytes.heap).toBeGreaterThan(0)
    expect(stats.bytes.total).toBeGreaterThanOrEqual(stats.bytes.heap + stats.bytes.indexes.stats_chunks_pkey!)
  })
})
