import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  DatabaseError,
  DimensionMismatchError,
  InvalidArgumentError,
  InvalidIdentifierError,
  PgVectorStore,
  PgScaleError,
  type IngestRow,
} from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'

const t = useTestDatabase()
const DIM = 4
let store: PgVectorStore
const good = [1, 0, 0, 0]

async function snapshot(): Promise<string> {
  const { rows } = await sql`select tenant_id, document_id, chunk_index, content, embedding::text from err_chunks order by 1, 2, 3`.execute(
    t.db,
  )
  return JSON.stringify(rows)
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'err_chunks', dimensions: DIM })
  await store.forTenant('acme').replaceDocument('doc', [
    { content: 'old 0', embedding: good },
    { content: 'old 1', embedding: [0, 1, 0, 0] },
  ])
})

describe('bad input: a typed PgScaleError before anything is sent, nothing written', () => {
  const acme = () => store.forTenant('acme')
  const cases: Array<[string, () => Promise<unknown>, new (...args: any[]) => PgScaleError]> = [
    ['wrong dimension (search)', () => acme().search([1, 2, 3]), DimensionMismatchError],
    [
      'wrong dimension (replace)',
      () => acme().replaceDocument('doc', [{ content: 'x', embedding: [1, 2, 3, 4, 5] }]),
      DimensionMismatchError,
    ],
    ['NaN in a vector', () => acme().search([1, Number.NaN, 0, 0]), InvalidArgumentError],
    ['Infinity in a vector', () => acme().replaceDocument('doc', [{ content: 'x', embedding: [1, Infinity, 0, 0] }]), InvalidArgumentError],
    ['a string in a vector', () => acme().search([1, '2', 0, 0] as unknown as number[]), InvalidArgumentError],
    ['all-zero vector under cosine', () => acme().search([0, 0, 0, 0]), InvalidArgumentError],
    ['empty tenant id', async () => store.forTenant('').search(good), InvalidArgumentError],
    ['empty document id', () => acme().deleteDocument(''), InvalidArgumentError],
    ['k = 0', () => acme().search(good, { k: 0 }), InvalidArgumentError],
    ['k = 1001', () => acme().exactSearch(good, { k: 1001 }), InvalidArgumentError],
    ['k = 2.5', () => acme().search(good, { k: 2.5 }), InvalidArgumentError],
    ['efSearch = 0', () => acme().search(good, { efSearch: 0 }), InvalidArgumentError],
    ['unknown iterative scan', () => acme().search(good, { iterativeScan: 'sideways' as 'off' }), InvalidArgumentError],
    [
      'filter that is not an object',
      () => acme().search(good, { filter: ['kind'] as unknown as Record<string, unknown> }),
      InvalidArgumentError,
    ],
    [
      'metadata that is not an object',
      () => acme().replaceDocument('doc', [{ content: 'x', embedding: good, metadata: 'm' as unknown as Record<string, unknown> }]),
      InvalidArgumentError,
    ],
    [
      'unknown distance',
      () => PgVectorStore.open(t.db, { table: 'other', dimensions: DIM, distance: 'manhattan' as 'l2' }),
      InvalidArgumentError,
    ],
    ['dimensions = 0', () => PgVectorStore.open(t.db, { table: 'other', dimensions: 0 }), InvalidArgumentError],
    [
      'invalid table identifier',
      () => PgVectorStore.open(t.db, { table: 'Robert"); drop table students;--', dimensions: DIM }),
      InvalidIdentifierError,
    ],
    [
      'invalid text search config',
      () => PgVectorStore.open(t.db, { table: 'other', dimensions: DIM, textSearchConfig: "english'" }),
      InvalidIdentifierError,
    ],
    ['HNSW m out of range', () => store.createIndex({ m: 1 }), InvalidArgumentError],
    ['maintenanceWorkMem not a size', () => store.createIndex({ maintenanceWorkMem: '1GB; drop table err_chunks' }), InvalidArgumentError],
  ]
  it.each(cases)('%s', async (_name, call, errorClass) => {
    const before = await snapshot()
    const err = await call().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(errorClass)
    expect(err).toBeInstanceOf(PgScaleError)
    expect(await snapshot()).toBe(before)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_class where relname = 'other'`.execute(t.db)
    expect(rows[0]?.n).toBe(0)
  })
})

describe('failures halfway leave the previous state intact', () => {
  it('replaceDocument with a bad vector in its last chunk changes nothing', async () => {
    const before = await snapshot()
    const chunks = [
      { content: 'new 0', embedding: good },
      { content: 'new 1', embedding: good },
      { content: 'new 2', embedding: [Number.NaN, 0, 0, 0] },
    ]
    await expect(store.forTenant('acme').replaceDocument('doc', chunks)).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(await snapshot()).toBe(before)
  })

  it('replaceDocument with a NUL in chunk 2 is refused before anything is sent, and changes nothing', async () => {
    const before = await snapshot()
    const chunks = [
      { content: 'new 0', embedding: good },
      { content: 'bad \u0000 byte', embedding: good },
    ]
    const err = await store
      .forTenant('acme')
      .replaceDocument('doc', chunks)
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidArgumentError)
    expect((err as Error).message).toMatch(/chunk 1: content cannot contain NUL/)
    expect(await snapshot()).toBe(before)
  })

  function* rows(n: number, bad?: { at: number; row: Partial<IngestRow> }): Generator<IngestRow> {
    for (let i = 0; i < n; i++) {
      const row: IngestRow = { tenantId: 'bulk', documentId: `d${i}`, chunkIndex: 0, content: `c${i}`, embedding: good }
      yield bad?.at === i ? { ...row, ...bad.row } : row
    }
  }

  it('bulkIngest with a bad row after 5,000 good ones keeps none of them', async () => {
    const before = await snapshot()
    await expect(store.bulkIngest(rows(6000, { at: 5000, row: { embedding: [1, 2] } }))).rejects.toBeInstanceOf(DimensionMismatchError)
    expect(await snapshot()).toBe(before)
  })

  it('bulkIngest that the server rejects mid-stream (a duplicate key) keeps none of it', async () => {
    const before = await snapshot()
    const err = await store.bulkIngest(rows(3000, { at: 2500, row: { documentId: 'd7' } })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DatabaseError)
    expect((err as DatabaseError).message).toMatch(/duplicate key value violates unique constraint/)
    // Citus 13 re-raises a worker's error inside a COPY through the coordinator without its SQLSTATE.
    expect((err as DatabaseError).sqlState).toBe(t.target.citusWorkers ? 'XX000' : '23505')
    expect(await snapshot()).toBe(before)
    // And the handle still works afterwards.
    expect((await store.bulkIngest(rows(10))).rows).toBe(10)
  })
})
