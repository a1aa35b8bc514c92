import { CamelCasePlugin, Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adoptDatabase, connect, Database, PgVectorStore, rollupTable, MonthlyRollup } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * Bring your own connection: the store and the rollup run on the app's Kysely (with its plugins)
 * or its pg.Pool, one pool in the app, and the app's plugins never change what pgscale reads or
 * returns.
 */
const t = useTestDatabase()
const DIM = 8

const vec = (axis: number, tilt = 0): number[] => axisVector(DIM, axis, tilt)

const chunks = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({ content: `${tag} chunk ${i}`, embedding: vec(i, 0.1), metadata: { owner_id: tag, chunk_no: i } }))

describe('the app passes its own connection', () => {
  let pool: pg.Pool
  let app: Kysely<any>

  beforeAll(() => {
    if (!t.url) return
    pool = new pg.Pool({ connectionString: t.url, max: 4 })
    // As node-postgres asks of every app: an idle client the server ends (this file's database is
    // dropped with FORCE at the end) must not crash the process.
    pool.on('error', () => {})
    app = new Kysely<any>({ dialect: new PostgresDialect({ pool }), plugins: [new CamelCasePlugin()] })
  })
  afterAll(async () => {
    await app?.destroy()
  })

  itWithServer(t.target)(
    'a Kysely with CamelCasePlugin: search and exactSearch return the same metadata keys; optimize and progress work',
    async () => {
      const store = await PgVectorStore.open(app, { table: 'byo_kysely', dimensions: DIM })
      const acme = store.forTenant('acme')
      await acme.replaceDocument('doc-1', chunks(12, 'a'))
      await store.bulkIngest(
        Array.from({ length: 600 }, (_, i) => ({
          tenantId: 'big',
          documentId: `d${i % 30}`,
          chunkIndex: Math.floor(i / 30),
          content: `c${i}`,
          embedding: vec(i, (i % 7) / 10),
        })),
      )
      const viaIndex = await acme.search(vec(3), { k: 3 })
      const exact = await acme.exactSearch(vec(3), { k: 3 })
      expect(exact).toEqual(viaIndex)
      expect(Object.keys(exact[0]!.metadata).sort()).toEqual(['chunk_no', 'owner_id'])
      expect(Object.keys(exact[0]!).sort()).toEqual(['chunkIndex', 'content', 'distance', 'documentId', 'metadata'])
      // What the index-build progress poller reads: snake_case columns, untouched by the app's plugin.
      const { rows: raw } = await sql<Record<string, unknown>>`select 1 as tuples_done`.execute(adoptDatabase(app))
      expect(Object.keys(raw[0]!)).toEqual(['tuples_done'])
      const { rows: camel } = await sql<Record<string, unknown>>`select 1 as tuples_done`.execute(app)
      expect(Object.keys(camel[0]!)).toEqual(['tuplesDone'])
      await store.createIndex()
      const report = await store.optimize({ ownIndexAbove: 500 })
      expect(report.built.map((b) => b.tenantId)).toEqual(['big'])
      expect(report.tenants.total).toBe(2)
      // No second pool: every connection pgscale used came from the app's (max 4).
      expect(pool.totalCount).toBeLessThanOrEqual(4)
    },
  )

  itWithServer(t.target)('an app Kysely has no COPY: bulk loads go through batched INSERTs, all or nothing', async () => {
    const store = await PgVectorStore.open(app, { table: 'byo_insert', dimensions: DIM })
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      documentId: `d${i % 50}`,
      chunkIndex: Math.floor(i / 50),
      content: `c${i}`,
      embedding: vec(i, 0.2),
    }))
    const result = await store.forTenant('t1').bulkIngest(rows)
    expect(result.rows).toBe(2500)
    const bad = [
      ...rows.slice(0, 10).map((r) => ({ ...r, documentId: `new-${r.documentId}` })),
      { ...rows[0]!, documentId: 'x', embedding: [1, 2] },
    ]
    await expect(store.forTenant('t1').bulkIngest(bad)).rejects.toMatchObject({ code: 'DIMENSION_MISMATCH' })
    const { rows: count } = await sql<{ n: number }>`select count(*)::int as n from byo_insert`.execute(t.db)
    expect(count[0]!.n).toBe(2500)
  })

  itWithServer(t.target)("a pg.Pool: COPY streams through it, and closing pgscale's handle leaves the pool open", async () => {
    const db = await connect(pool)
    const store = await PgVectorStore.open(pool, { table: 'byo_pool', dimensions: DIM })
    const result = await store
      .forTenant('p')
      .bulkIngest(Array.from({ length: 300 }, (_, i) => ({ documentId: 'doc', chunkIndex: i, content: `c${i}`, embedding: vec(i) })))
    expect(result.rows).toBe(300)
    await db.close()
    const { rows } = await pool.query<{ n: number }>('select count(*)::int as n from byo_pool')
    expect(rows[0]!.n).toBe(300)
  })

  it('a pgscale Database with CamelCasePlugin: the rollup reads the same rows as without it', async () => {
    const withPlugin = t.db.withPlugin(new CamelCasePlugin())
    await sql`create table byo_events (tenant_id int not null, at timestamptz not null, user_kind text not null, amount_cents int not null)`.execute(
      t.db,
    )
    await sql`insert into byo_events values (1, '2025-03-05T12:00:00Z', 'paid_user', 100), (1, '2025-03-06T12:00:00Z', 'free_user', 250)`.execute(
      t.db,
    )
    const target = rollupTable('byo_monthly', {
      tenantType: 'integer',
      groupBy: { user_kind: 'text' },
      measures: { total_cents: 'bigint' },
    })
    await target.create(t.db)
    const rollup = new MonthlyRollup({
      source: 'byo_events',
      target,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: ['user_kind'],
      measures: { total_cents: sql`sum(amount_cents)` },
      zone: 'UTC',
    })
    await rollup.refreshAt(withPlugin, { tenantId: 1, moment: '2025-03-05' })
    const plain = await rollup.read(t.db, { tenantId: 1, from: '2025-03', to: '2025-03' })
    const camel = await rollup.read(withPlugin, { tenantId: 1, from: '2025-03', to: '2025-03' })
    expect(camel).toEqual(plain)
    // (bigint: a string from pg, a number from PGlite)
    expect(plain.map((r) => ({ ...r, total_cents: String(r.total_cents) }))).toEqual([
      { month: '2025-03', user_kind: 'free_user', total_cents: '250' },
      { month: '2025-03', user_kind: 'paid_user', total_cents: '100' },
    ])
    expect(withPlugin).not.toBeInstanceOf(Database)
  })
})
