import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  MigrationRequiredError,
  MonthlyRollup,
  PgVectorStore,
  PrivilegeError,
  type Database,
  type PgVectorStoreConfig,
} from '../../src/index.js'
import { expensesRollup, seedExpenses } from '../rollup/rollup-fixture.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * The app's runtime role, as production runs it: DML rights only, granted by the migrations the
 * owner ran at deploy time. Every read and write path works as that role; every path that needs
 * DDL is refused with a typed error before anything changes. On PGlite the role is taken with
 * `SET ROLE` on its one session.
 */
const t = useTestDatabase()
const app = useRuntimeRole(t)
const DIM = 8
const config: PgVectorStoreConfig = { table: 'rt_chunks', dimensions: DIM }
const { target, rollup } = expensesRollup('America/Mexico_City', 'rt_monthly')

const chunk = (tenantId: string, documentId: string, i: number, kind: string) => ({
  tenantId,
  documentId,
  chunkIndex: i,
  content: `${kind} chunk ${i} of ${documentId}`,
  metadata: { kind, n: i },
  embedding: axisVector(DIM, i % DIM, 0.1 * (i % 3)),
})

const indexes = async (db: Database, table: string) =>
  (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = ${table} order by 1`.execute(db)).rows.map(
    (r) => r.name,
  )

beforeAll(async () => {
  // Deploy time, as the owner: the store's and the rollup's migrations with the runtime role's grants.
  await app.create()
  await PgVectorStore.migration(config, { runtimeRole: app.name }).up(t.db)
  const owner = await PgVectorStore.open(t.db, config)
  await owner.bulkIngest(
    Array.from({ length: 40 }, (_, i) => chunk(i < 20 ? 'acme' : 'globex', `doc-${i % 5}`, i, i % 2 ? 'invoice' : 'contract')),
  )
  await owner.createMetadataIndex('kind', 'string')
  await owner.close()
  await seedExpenses(t.db, { seed: 'runtime-role', rows: 600, tenants: 3, bigTenantRows: 300, months: 6 })
  await target.migration({ runtimeRole: app.name }).up(t.db)
  await rollup.trackingMigration({ runtimeRole: app.name }).up(t.db)
  await sql
    .raw(`grant select, insert, update, delete on expenses to ${app.name}; grant usage on sequence expenses_id_seq to ${app.name}`)
    .execute(t.db)
  for (const tenantId of [1, 2, 3]) await rollup.rebuild(t.db, { tenantId, since: '2000-01-01', until: '2030-12-31' })
})

describe('the runtime role (DML only)', () => {
  it('may not run DDL at all (the premise)', async () => {
    const err = await app.as((db) => sql`create table rt_probe (x int)`.execute(db)).catch((e: unknown) => e)
    expect((err as { sqlState?: string }).sqlState).toBe('42501')
  })

  it('opens the store by reading the catalog only, and every read and write path works', async () => {
    await app.as(async (db) => {
      const store = await PgVectorStore.open(db, config)
      const acme = store.forTenant('acme')
      const q = axisVector(DIM, 2)
      expect(await acme.search(q, { k: 3 })).toHaveLength(3)
      expect(await acme.exactSearch(q, { k: 3 })).toHaveLength(3)
      expect((await acme.hybridSearch({ embedding: q, text: 'invoice', k: 3 })).length).toBeGreaterThan(0)
      const filtered = await acme.search(q, { k: 5, filter: { kind: 'invoice' } })
      expect(filtered.every((r) => r.metadata.kind === 'invoice')).toBe(true)
      await acme.replaceDocument('new-doc', [{ content: 'fresh', embedding: axisVector(DIM, 1), metadata: { kind: 'note' } }])
      expect(await acme.count({ kind: 'note' })).toBe(1)
      expect((await acme.find({ filter: { kind: 'note' } })).rows.map((r) => r.documentId)).toEqual(['new-doc'])
      await acme.deleteDocument('new-doc')
      expect(await acme.deleteWhere({ kind: 'contract', n: 0 })).toBe(1)
      const loaded = await store.forTenant('initech').bulkIngest([chunk('initech', 'i-1', 0, 'invoice')])
      expect(loaded.rows).toBe(1)
      const recall = await store.measureRecall({ tenantId: 'acme', sample: 10 })
      expect(recall.tenants).toHaveLength(1)
      expect((await store.flushQuerySample()).error).toBeUndefined()
      expect(Array.isArray(await store.recallReport())).toBe(true)
      await store.close()
    })
    // What the runtime role wrote through the store's own tables: the query sample and the recall monitor.
    const { rows } = await sql<{ sampled: number; monitored: number }>`select
      (select count(*)::int from rt_chunks_query_sample where tenant_id = 'acme') as sampled,
      (select count(*)::int from rt_chunks_recall_monitor where tenant_id = 'acme') as monitored`.execute(t.db)
    expect(rows[0]!.sampled).toBeGreaterThan(0)
    expect(rows[0]!.monitored).toBe(1)
  })

  it('refreshes, drains and reads the rollup; track of a tracked rollup is a no-op', async () => {
    await app.as(async (db) => {
      await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (2, '2024-03-10T12:00:00Z', 'travel', 10, 'paid')`.execute(
        db,
      )
      expect((await rollup.read(db, { tenantId: 2, from: '2024-03', to: '2024-03', groupBy: [], fresh: true })).length).toBe(1)
      expect((await rollup.refreshDirty(db)).remaining).toBe(0)
      await rollup.refreshAt(db, { tenantId: 2, moment: '2024-03-10T12:00:00Z' })
      await rollup.track(db)
      expect((await rollup.read(db, { tenantId: 2, from: '2024-01', to: '2024-06' })).length).toBeGreaterThan(0)
    })
  })

  it('every path that needs DDL refuses with a typed error, and nothing changes', async () => {
    const before = await indexes(t.db, 'rt_chunks')
    const { rows: triggersBefore } = await sql<{
      n: number
    }>`select count(*)::int as n from pg_trigger where tgrelid = 'expenses'::regclass and not tgisinternal`.execute(t.db)
    await app.as(async (db) => {
      const store = await PgVectorStore.open(db, config)
      for (const attempt of [
        () => store.optimize(),
        () => store.createIndex(),
        () => store.createTenantIndex('acme'),
        () => store.createMetadataIndex('n', 'number'),
        () => rollup.untrack(db),
        () => expensesRollup('UTC', 'rt_other').rollup.track(db),
      ]) {
        const err = await attempt().catch((e: unknown) => e)
        expect(err).toBeInstanceOf(PrivilegeError)
        expect((err as PrivilegeError).owner).toBeTruthy()
      }
      // Declared already: nothing to build, so the runtime role may ask.
      expect((await store.createMetadataIndex('kind', 'string')).field).toBe('kind')
      await store.close()
    })
    expect(await indexes(t.db, 'rt_chunks')).toEqual(before)
    const { rows: triggersAfter } = await sql<{
      n: number
    }>`select count(*)::int as n from pg_trigger where tgrelid = 'expenses'::regclass and not tgisinternal`.execute(t.db)
    expect(triggersAfter).toEqual(triggersBefore)
    expect((await sql<{ r: string | null }>`select to_regclass('rt_other_dirty')::text as r`.execute(t.db)).rows[0]!.r).toBeNull()
  })

  it('a store that is missing or older is a MigrationRequiredError naming the object; nothing is created', async () => {
    const err = await app.as((db) => PgVectorStore.open(db, { table: 'rt_missing', dimensions: DIM })).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MigrationRequiredError)
    expect((err as MigrationRequiredError).object).toBe('store:public.rt_missing')
    expect((err as Error).message).toMatch(/pgscale migrate|PgVectorStore\.migration/)
    await sql`update pgscale_object_version set version = 4 where object = 'store:public.rt_chunks'`.execute(t.db)
    try {
      const older = await app.as((db) => PgVectorStore.open(db, config)).catch((e: unknown) => e)
      expect(older).toBeInstanceOf(MigrationRequiredError)
    } finally {
      await sql`update pgscale_object_version set version = 5 where object = 'store:public.rt_chunks'`.execute(t.db)
    }
    expect((await sql<{ r: string | null }>`select to_regclass('rt_missing')::text as r`.execute(t.db)).rows[0]!.r).toBeNull()
  })

  it('migrate: false never runs DDL, even as the owner', async () => {
    const err = await PgVectorStore.open(t.db, { table: 'rt_never', dimensions: DIM, migrate: false }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MigrationRequiredError)
    expect((await sql<{ r: string | null }>`select to_regclass('rt_never')::text as r`.execute(t.db)).rows[0]!.r).toBeNull()
    await (await PgVectorStore.open(t.db, { ...config, migrate: false })).close()
  })

  it('MonthlyRollup.tracked finds the tracked rollup from its record, and it drains', async () => {
    const found = await MonthlyRollup.tracked(t.db)
    expect(found.map((r) => r.parts.target.name)).toEqual(['rt_monthly'])
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (3, '2024-02-01T12:00:00Z', 'food', 5, 'paid')`.execute(
      t.db,
    )
    expect((await found[0]!.refreshDirty(t.db)).buckets).toBe(1)
  })
})
