import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, PgVectorStore, SchemaMismatchError } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'

const t = useTestDatabase()
const DIM = 4
let store: PgVectorStore

async function columns(table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select attname as name from pg_attribute where attrelid = ${table}::regclass and attnum > 0 and not attisdropped order by attnum`.execute(
    t.db,
  )
  return rows.map((r) => r.name)
}

async function ginIndexes(table: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
    where x.indrelid = ${table}::regclass and am.amname = 'gin'`.execute(t.db)
  return rows[0]!.n
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'vec_only', dimensions: DIM, fullText: false })
})

describe('fullText: false — a store that only searches by vector', () => {
  it('has no tsvector column and no GIN index; writes and vector search work', async () => {
    expect(await columns('vec_only')).not.toContain('search_text')
    expect(await ginIndexes('vec_only')).toBe(0)
    const acme = store.forTenant('acme')
    await acme.replaceDocument('d1', [
      { content: 'alpha', embedding: [1, 0, 0, 0] },
      { content: 'beta', embedding: [0, 1, 0, 0] },
    ])
    const loaded = await store.bulkIngest(
      [{ tenantId: 'acme', documentId: 'd2', chunkIndex: 0, content: 'gamma', embedding: [0, 0, 1, 0] }],
      { indexStrategy: 'rebuild' },
    )
    expect(loaded.rows).toBe(1)
    await store.createIndex()
    const hits = await acme.search([1, 0.1, 0, 0], { k: 2 })
    expect(hits.map((h) => h.content)).toEqual(['alpha', 'beta'])
    expect((await store.stats()).rows).toBe(3)
  })

  it('hybridSearch is a typed error that says why, and sends nothing', async () => {
    const call = store.forTenant('acme').hybridSearch({ embedding: [1, 0, 0, 0], text: 'alpha' })
    await expect(call).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(call).rejects.toThrow(/fullText: false/)
  })

  it('reopening with the other setting is a SchemaMismatchError, and a table with full text keeps it', async () => {
    await expect(PgVectorStore.open(t.db, { table: 'vec_only', dimensions: DIM })).rejects.toBeInstanceOf(SchemaMismatchError)
    await PgVectorStore.open(t.db, { table: 'with_text', dimensions: DIM })
    await expect(PgVectorStore.open(t.db, { table: 'with_text', dimensions: DIM, fullText: false })).rejects.toThrow(
      /fullText is true, configured false/,
    )
    expect(await columns('with_text')).toContain('search_text')
  })

  it('a store recorded before fullText existed opens unchanged (a missing recorded key is its old default)', async () => {
    await PgVectorStore.open(t.db, { table: 'old_store', dimensions: DIM })
    await sql`update pgscale_object_version set config = config - 'fullText' where object = 'store:public.old_store'`.execute(t.db)
    const reopened = await PgVectorStore.open(t.db, { table: 'old_store', dimensions: DIM })
    expect(reopened.config.fullText).toBe(true)
    await expect(PgVectorStore.open(t.db, { table: 'old_store', dimensions: DIM, fullText: false })).rejects.toBeInstanceOf(
      SchemaMismatchError,
    )
  })

  it('a fullText that is not a boolean is refused before anything is created', async () => {
    await expect(
      PgVectorStore.open(t.db, { table: 'never_made', dimensions: DIM, fullText: 'no' as unknown as boolean }),
    ).rejects.toBeInstanceOf(InvalidArgumentError)
    const { rows } = await sql<{ present: boolean }>`select to_regclass('never_made') is not null as present`.execute(t.db)
    expect(rows[0]!.present).toBe(false)
  })
})

describe('ids collate "C"', () => {
  it('a new store table keys tenant and document ids in byte order, whatever the database default', async () => {
    const { rows } = await sql<{ column: string; collation: string }>`
      select a.attname as column, c.collname as collation from pg_attribute a join pg_collation c on c.oid = a.attcollation
      where a.attrelid = 'vec_only'::regclass and a.attname in ('tenant_id', 'document_id') order by 1`.execute(t.db)
    expect(rows).toEqual([
      { column: 'document_id', collation: 'C' },
      { column: 'tenant_id', collation: 'C' },
    ])
  })
})
