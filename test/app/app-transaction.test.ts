import { sql, type Transaction } from 'kysely'
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'
import { DatabaseError, MonthlyRollup, PgVectorStore, rollupTable } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * Join the app's transaction: the app's row, the document's chunks and the rollup commit or roll
 * back together; a pgscale call that fails inside rolls back to its savepoint only; searches never
 * leak their SET LOCAL settings into the app's transaction.
 */
const t = useTestDatabase()
const DIM = 4
const emb = (i: number) => [1, i / 10, 0.5, (i % 3) / 3]
const chunks = (n: number) => Array.from({ length: n }, (_, i) => ({ content: `part ${i}`, embedding: emb(i) }))

let store: PgVectorStore
let rollup: MonthlyRollup

async function counts() {
  const { rows } = await sql<{ docs: number; chunks: number; buckets: number }>`
    select (select count(*)::int from app_documents) as docs, (select count(*)::int from app_chunks) as chunks,
      (select count(*)::int from app_monthly) as buckets`.execute(t.db)
  return rows[0]!
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'app_chunks', dimensions: DIM })
  await sql`create table app_documents (tenant_id text not null, id text not null, created_at timestamptz not null, primary key (tenant_id, id))`.execute(
    t.db,
  )
  const target = rollupTable('app_monthly', { groupBy: {}, measures: { documents: 'integer' } })
  await target.create(t.db)
  rollup = new MonthlyRollup({
    source: 'app_documents',
    target,
    at: 'created_at',
    tenant: 'tenant_id',
    groupBy: [],
    measures: { documents: sql`count(*)` },
    zone: 'UTC',
  })
})

describe('forTenant(id, { transaction })', () => {
  it('the app row, its chunks and the rollup roll back together, and commit together', async () => {
    const write = (trx: Transaction<any>, id: string) =>
      trx.insertInto('app_documents').values({ tenant_id: 'acme', id, created_at: '2025-03-10T00:00:00Z' }).execute()
    await expect(
      t.db.transaction().execute(async (trx) => {
        await write(trx, 'doc-1')
        await store.forTenant('acme', { transaction: trx }).replaceDocument('doc-1', chunks(5))
        await rollup.refreshAt(trx, { tenantId: 'acme', moment: '2025-03-10' })
        throw new Error('the app changes its mind')
      }),
    ).rejects.toThrow('the app changes its mind')
    expect(await counts()).toEqual({ docs: 0, chunks: 0, buckets: 0 })

    await t.db.transaction().execute(async (trx) => {
      await write(trx, 'doc-1')
      await store.forTenant('acme', { transaction: trx }).replaceDocument('doc-1', chunks(5))
      await rollup.refreshAt(trx, { tenantId: 'acme', moment: '2025-03-10' })
      // Inside the transaction, the store sees its own uncommitted chunks.
      expect(await store.forTenant('acme', { transaction: trx }).exactSearch(emb(2), { k: 10 })).toHaveLength(5)
    })
    expect(await counts()).toEqual({ docs: 1, chunks: 5, buckets: 1 })
    expect(await rollup.read(t.db, { tenantId: 'acme', from: '2025-03', to: '2025-03' })).toEqual([{ month: '2025-03', documents: 1 }])
  })

  it('a call that fails inside rolls back to its savepoint; the app transaction goes on and commits', async () => {
    await t.db.transaction().execute(async (trx) => {
      const acme = store.forTenant('acme', { transaction: trx })
      const dup = [
        { documentId: 'dup', chunkIndex: 0, content: 'a', embedding: emb(1) },
        { documentId: 'dup', chunkIndex: 0, content: 'b', embedding: emb(2) },
      ]
      const err = await acme.bulkIngest(dup).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(DatabaseError)
      expect((err as DatabaseError).message).toMatch(/duplicate key value violates unique constraint/)
      // Citus 13 re-raises a worker's error inside a COPY through the coordinator without its SQLSTATE.
      expect((err as DatabaseError).sqlState).toBe(t.target.citusWorkers ? 'XX000' : '23505')
      await acme.replaceDocument('after-failure', chunks(2))
    })
    const { rows } = await sql<{ id: string; n: number }>`
      select document_id as id, count(*)::int as n from app_chunks where tenant_id = 'acme' group by 1 order by 1`.execute(t.db)
    expect(rows).toEqual([
      { id: 'after-failure', n: 2 },
      { id: 'doc-1', n: 5 },
    ])
  })

  it('a search inside the app transaction leaves its settings as they were', async () => {
    await t.db.transaction().execute(async (trx) => {
      await sql`set local hnsw.ef_search = 17`.execute(trx)
      const hits = await store.forTenant('acme', { transaction: trx }).search(emb(1), { k: 3, efSearch: 250 })
      expect(hits).toHaveLength(3)
      const { rows } = await sql<{ ef: string }>`select current_setting('hnsw.ef_search') as ef`.execute(trx)
      expect(rows[0]!.ef).toBe('17')
    })
  })

  itWithServer(t.target)('a pg client on which the app ran BEGIN: COPY and replace join it; ROLLBACK undoes them', async () => {
    const client = new pg.Client({ connectionString: t.url })
    await client.connect()
    try {
      await client.query('BEGIN')
      const beta = store.forTenant('beta', { transaction: client })
      await beta.bulkIngest(chunks(4).map((c, i) => ({ ...c, documentId: 'copied', chunkIndex: i })))
      await beta.replaceDocument('replaced', chunks(3))
      expect((await client.query(`select count(*)::int as n from app_chunks where tenant_id = 'beta'`)).rows[0].n).toBe(7)
      await client.query('ROLLBACK')
      expect((await client.query(`select count(*)::int as n from app_chunks where tenant_id = 'beta'`)).rows[0].n).toBe(0)
      await client.query('BEGIN')
      await beta.replaceDocument('replaced', chunks(3))
      await client.query('COMMIT')
      expect((await client.query(`select count(*)::int as n from app_chunks where tenant_id = 'beta'`)).rows[0].n).toBe(3)
    } finally {
      await client.end()
    }
  })
})
