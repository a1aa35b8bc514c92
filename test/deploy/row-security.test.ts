import { CompiledQuery, sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { explain, MigrationRequiredError, PgVectorStore, type Database, type PgVectorStoreConfig } from '../../src/index.js'
import { indexesUsed, renderStatements, resolveStoreConfig, seededRandom, tenantIndexName } from '../../src/bench-kit.js'
import { MonthlyRollup, rollupTable } from '../../src/index.js'
import { seedExpenses } from '../rollup/rollup-fixture.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * `isolation: 'rls'`: row-level security on the store's tables keyed on `pgscale.tenant_id`, set
 * for each transaction. The app's own SQL on its runtime role reads and writes only the tenant it
 * set, and nothing without it (a seeded property test with hostile ids and statements); every
 * pgscale path still works as that role; the search plans keep their indexes. Also on PGlite
 * (roles and RLS work there, the role taken with SET ROLE).
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'app_rls')
const DIM = 8
const config: PgVectorStoreConfig = { table: 'rls_chunks', dimensions: DIM, isolation: 'rls' }
const TENANTS = ['acme', "o'brien", 'tab\there', '$pgs0$x', 'Ünïcode', 'big']
const rowsOf = (tenantId: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    tenantId,
    documentId: `d${i}`,
    chunkIndex: 0,
    content: `${tenantId} chunk ${i}`,
    metadata: { owner: tenantId, i },
    embedding: axisVector(DIM, i % DIM, (i % 7) / 10),
  }))

/** Runs statements as the runtime role in one transaction that set `tenant` (or none). */
async function rawAs(tenant: string | undefined, statements: Array<{ text: string; params?: unknown[] }>): Promise<unknown[][]> {
  return app.as((db) =>
    db.transaction(async (trx) => {
      if (tenant !== undefined) await sql`select set_config('pgscale.tenant_id', ${tenant}, true)`.execute(trx)
      const out: unknown[][] = []
      for (const s of statements) out.push((await trx.executeQuery(CompiledQuery.raw(s.text, s.params ?? []))).rows)
      return out
    }),
  )
}

beforeAll(async () => {
  await app.create()
  await PgVectorStore.migration(config, { runtimeRole: app.name }).up(t.db)
  const store = await PgVectorStore.open(t.db, config)
  await store.bulkIngest(TENANTS.flatMap((id) => rowsOf(id, id === 'big' ? 600 : 20)))
  await store.createTenantIndex('big')
  await sql`analyze rls_chunks`.execute(t.db)
  await store.close()
})

describe("isolation: 'rls'", () => {
  it('the policies are on every table of the store; the owner is not subject to them', async () => {
    const { rows } = await sql<{ name: string; rls: boolean }>`
      select relname as name, relrowsecurity as rls from pg_class where relname like 'rls_chunks%' and relkind in ('r', 'p') order by 1`.execute(
      t.db,
    )
    expect(rows.map((r) => r.name)).toEqual([
      'rls_chunks',
      'rls_chunks_query_sample',
      'rls_chunks_recall_monitor',
      'rls_chunks_tenant_tuning',
    ])
    expect(rows.every((r) => r.rls)).toBe(true)
    expect((await sql<{ n: number }>`select count(*)::int as n from rls_chunks`.execute(t.db)).rows[0]!.n).toBe(700)
  })

  it('raw SQL as the runtime role: nothing without the setting, only its tenant with it (seeded, hostile ids and statements)', async () => {
    expect(await rawAs(undefined, [{ text: 'select count(*)::int as n from rls_chunks' }])).toEqual([[{ n: 0 }]])
    const random = seededRandom('rls-property')
    const statements = (other: string) => [
      { text: 'select tenant_id from rls_chunks' },
      { text: 'select tenant_id from rls_chunks where tenant_id = $1', params: [other] },
      { text: "select tenant_id from rls_chunks where tenant_id = $1 or true or metadata->>'owner' = $1", params: [other] },
      { text: 'select tenant_id from rls_chunks_query_sample union all select tenant_id from rls_chunks_tenant_tuning' },
      {
        text: 'select tenant_id from rls_chunks where document_id in (select document_id from rls_chunks where tenant_id <> $1)',
        params: [other],
      },
    ]
    for (let round = 0; round < 60; round++) {
      const tenant = TENANTS[random.int(TENANTS.length)]!
      const other = TENANTS[random.int(TENANTS.length)]!
      for (const rows of await rawAs(tenant, statements(other)))
        expect((rows as Array<{ tenant_id: string }>).every((r) => r.tenant_id === tenant)).toBe(true)
      const [updated, deleted] = await rawAs(tenant, [
        { text: 'update rls_chunks set content = content where tenant_id = $1 returning tenant_id', params: [other] },
        { text: 'delete from rls_chunks where tenant_id = $1 and false returning tenant_id', params: [other] },
      ])
      expect((updated as Array<{ tenant_id: string }>).every((r) => r.tenant_id === tenant)).toBe(true)
      expect(deleted).toEqual([])
    }
    // Writing a row of another tenant is refused by the policy's check.
    const err = await rawAs('acme', [
      {
        text: `insert into rls_chunks (tenant_id, document_id, chunk_index, content, embedding) values ('big', 'x', 0, 'x', $1)`,
        params: [`[${axisVector(DIM, 1).join(',')}]`],
      },
    ]).catch((e: unknown) => e)
    expect((err as { sqlState?: string }).sqlState).toBe('42501')
  })

  it("every pgscale path works as the runtime role, and each tenant's results are its own", async () => {
    await app.as(async (db) => {
      const store = await PgVectorStore.open(db, config)
      for (const id of TENANTS) {
        const tenant = store.forTenant(id)
        const hits = await tenant.search(axisVector(DIM, 2), { k: 5 })
        expect(hits).toHaveLength(5)
        expect(hits.every((h) => h.metadata.owner === id)).toBe(true)
        expect((await tenant.exactSearch(axisVector(DIM, 2), { k: 3, filter: { owner: id } })).length).toBe(3)
        expect((await tenant.hybridSearch({ embedding: axisVector(DIM, 1), text: 'chunk', k: 3 })).length).toBe(3)
        expect(await tenant.count()).toBe(id === 'big' ? 600 : 20)
      }
      const acme = store.forTenant('acme')
      await acme.replaceDocument('new', [{ content: 'new', embedding: axisVector(DIM, 3), metadata: { owner: 'acme' } }])
      await acme.upsertChunks([{ id: 'up', content: 'up', embedding: axisVector(DIM, 4) }])
      expect((await acme.getChunks(['new', 'up'])).map((c) => c.documentId)).toEqual(['new', 'up'])
      expect(await acme.updateMetadata({ ids: ['up'] }, { metadata: { owner: 'acme', tag: 'x' } })).toBe(1)
      expect(await acme.deleteWhere({ tag: 'x' })).toBe(1)
      await acme.deleteDocument('new')
      await store.forTenant('acme').bulkIngest(rowsOf('acme', 2).map((r) => ({ ...r, documentId: `bulk-${r.documentId}` })))
      expect((await store.measureRecall({ tenantId: 'big', sample: 10 })).tenants).toHaveLength(1)
      expect((await store.flushQuerySample()).error).toBeUndefined()
      expect((await store.recallReport()).length).toBeGreaterThan(0)
      await store.close()
    })
    const { rows } = await sql<{ tenants: number }>`select count(distinct tenant_id)::int as tenants from rls_chunks_query_sample`.execute(
      t.db,
    )
    expect(rows[0]!.tenants).toBe(TENANTS.length)
  })

  it("a tenant's search plan keeps its index under row-level security", async () => {
    const s = renderStatements(resolveStoreConfig(config))
    const q = `[${axisVector(DIM, 2).join(',')}]`
    const settings = { 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' } as const
    const owner = await explain(t.db, s.search, ['big', q, 10], { settings })
    const asApp = await app.as((db: Database) =>
      explain(db, s.search, ['big', q, 10], { settings: { ...settings, 'pgscale.tenant_id': { text: 'big' } } }),
    )
    expect(indexesUsed(owner)).toContain(tenantIndexName('rls_chunks', 'big'))
    expect(indexesUsed(asApp)).toEqual(indexesUsed(owner))
    const small = await app.as((db: Database) =>
      explain(db, s.search, ['acme', q, 10], { settings: { ...settings, 'pgscale.tenant_id': { text: 'acme' } } }),
    )
    expect(indexesUsed(small)).toContain('rls_chunks_pkey')
  })
})

describe("a rollup with isolation: 'rls'", () => {
  const target = rollupTable('rls_monthly', {
    groupBy: { category: 'varchar(64)' },
    measures: { total: 'numeric(14,2)', count: 'integer' },
    tenantType: 'bigint',
    isolation: 'rls',
  })
  const rollup = new MonthlyRollup({
    source: 'expenses',
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)`, count: sql`count(*)` },
    zone: 'UTC',
  })

  beforeAll(async () => {
    await seedExpenses(t.db, { seed: 'rls-rollup', rows: 900, tenants: 3, bigTenantRows: 300, months: 3 })
    await target.migration({ runtimeRole: app.name }).up(t.db)
    await rollup.trackingMigration({ runtimeRole: app.name }).up(t.db)
    await sql
      .raw(`grant select, insert, update, delete on expenses to ${app.name}; grant usage on sequence expenses_id_seq to ${app.name}`)
      .execute(t.db)
    for (const tenantId of [1, 2, 3]) await rollup.rebuild(t.db, { tenantId, since: '2020-01-01', until: '2030-12-31' })
  })

  it("the runtime role's own SQL sees the rollup table and the dirty log of its tenant only, and nothing without it", async () => {
    const [none] = await rawAs(undefined, [
      { text: 'select (select count(*) from rls_monthly)::int as r, (select count(*) from rls_monthly_dirty)::int as d' },
    ])
    expect(none).toEqual([{ r: 0, d: 0 }])
    const [mine] = await rawAs('2', [{ text: 'select distinct tenant_id::int as t from rls_monthly' }])
    expect(mine).toEqual([{ t: 2 }])
  })

  it('writes by the runtime role mark their buckets (the triggers append whoever writes); its tenant reads, refreshes and drains work', async () => {
    await app.as(async (db) => {
      await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (2, '2025-12-10T10:00:00Z', 'meals', 5, 'paid')`.execute(
        db,
      )
      const fresh = await rollup.read(db, { tenantId: 2, from: '2025-12', to: '2025-12', groupBy: [], fresh: true })
      expect(fresh).toHaveLength(1)
      await rollup.refreshAt(db, { tenantId: 2, moment: '2025-12-10T10:00:00Z' })
      expect((await rollup.refreshDirty(db)).remaining).toBe(0)
      expect(await rollup.read(db, { tenantId: 2, from: '2025-12', to: '2025-12', groupBy: [] })).toEqual(fresh.map((r) => ({ ...r })))
    })
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from rls_monthly_dirty`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
  })
  it("the dirty log takes only the statement's own tenant: another tenant's key is refused, with or without a tenant set", async () => {
    const append = (tenant: number) => ({ text: `insert into rls_monthly_dirty (tenant_id, month) values (${tenant}, '2025-01-01')` })
    await expect(rawAs('2', [append(3)])).rejects.toMatchObject({ sqlState: '42501' })
    await expect(rawAs(undefined, [append(3)])).rejects.toMatchObject({ sqlState: '42501' })
    await rawAs('2', [append(2)])
    await app.as((db) => rollup.markDirty(db, { tenantId: 2, at: ['2025-02-01T00:00:00Z'] }))
    const { rows } = await sql<{ t: number }>`select distinct tenant_id::int as t from rls_monthly_dirty`.execute(t.db)
    expect(rows).toEqual([{ t: 2 }])
    await app.as((db) => rollup.refreshDirty(db))
  })
})

describe('isolation that cannot be opened wrong, and leaves nothing behind', () => {
  it("a store made with isolation 'rls' opened without it is a MigrationRequiredError naming both, for the runtime role and the owner", async () => {
    const plain = { ...config, isolation: undefined }
    const asApp = app.as((db) => PgVectorStore.open(db, { ...plain, migrate: false }))
    await expect(asApp).rejects.toBeInstanceOf(MigrationRequiredError)
    await expect(asApp).rejects.toThrow(/row-level security.*isolation 'none'/)
    await expect(PgVectorStore.open(t.db, plain)).rejects.toBeInstanceOf(MigrationRequiredError)
  })

  it("pgscale leaves no tenant setting in the app's transaction: the app's SQL after count, find and a write there is not scoped by it", async () => {
    await app.as(async (db) => {
      const store = await PgVectorStore.open(db, { ...config, migrate: false })
      await db.transaction(async (trx) => {
        const acme = store.forTenant('acme', { transaction: trx })
        expect(await acme.count()).toBeGreaterThan(0)
        expect((await acme.find({ filter: { i: 3 } })).rows).toHaveLength(1)
        await acme.updateMetadata({ filter: { i: 1 } }, { metadata: { seen: true }, mode: 'merge' })
        const { rows } = await sql<{ tenant: string | null; n: number }>`
          select current_setting('pgscale.tenant_id', true) as tenant, (select count(*)::int from rls_chunks) as n`.execute(trx)
        expect(rows[0]!.tenant ?? '').toBe('')
        expect(rows[0]!.n).toBe(0) // the app's own SQL without a tenant of its own sees nothing, as outside
      })
      await store.close()
    })
  })
})
