import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import {
  DimensionMismatchError,
  EmbeddingSpaceError,
  InvalidArgumentError,
  PgVectorStore,
  SchemaMismatchError,
  type SearchResult,
  type TenantStore,
} from '../../../src/index.js'
import { useRuntimeRole } from '../../support/runtime-role.js'
import { useTestDatabase } from '../../support/test-database.js'
import { DIM, NEW_DIM, newModel, oldModel, rowsOf as tenantRows } from './space-fixtures.js'

/**
 * Embedding spaces: a store gains a second model's space, a tenant is backfilled into it, switched
 * in one transaction, rolled back, released; the guard refuses writes to a space the tenant
 * neither searches nor fills — from pgscale and from plain SQL. Every figure checked here comes
 * from the database, compared with a model computed in the test (the embed function is the test's).
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'sp_rt')

const embedNew = (calls: string[][]) => async (texts: string[]) => {
  calls.push(texts)
  return texts.map(newModel)
}

const chunks = (doc: string, n: number, version = 0) =>
  Array.from({ length: n }, (_, i) => ({
    content: `${doc} part ${i} v${version}`,
    embedding: oldModel(`${doc} part ${i} v${version}`),
    metadata: { doc, i, version },
  }))

async function fill(tenant: TenantStore, docs: number, perDoc: number, prefix = 'doc'): Promise<void> {
  for (let d = 0; d < docs; d++) await tenant.replaceDocument(`${prefix}-${d}`, chunks(`${prefix}-${d}`, perDoc))
}

const rowsOf = (table: string, tenantId: string) => tenantRows(t.db, table, tenantId)

const asVectorText = (v: number[]) => `[${v.map((x) => Math.fround(x)).join(',')}]`

/** Every row of `space` has the content and metadata of `base`, and the new model's vector of its content. */
async function expectSpaceMatches(baseTable: string, spaceTable: string, tenantId: string): Promise<void> {
  const base = await rowsOf(baseTable, tenantId)
  const space = await rowsOf(spaceTable, tenantId)
  expect(space.map((r) => [r.key, r.content, r.metadata])).toEqual(base.map((r) => [r.key, r.content, r.metadata]))
  for (const r of space) {
    const got = JSON.parse(r.embedding) as number[]
    const want = JSON.parse(asVectorText(newModel(r.content))) as number[]
    got.forEach((x, i) => expect(x).toBeCloseTo(want[i]!, 5))
  }
}

const hitsOf = (rows: SearchResult[]) => rows.map((r) => [r.documentId, r.chunkIndex, r.content, r.distance.toFixed(6)])

describe('embedding spaces: add, backfill, switch, roll back, release, drop', () => {
  it('the whole lifecycle for one tenant, the other tenant untouched', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_life', dimensions: DIM })
    const acme = store.forTenant('acme')
    await fill(acme, 12, 3)
    await fill(store.forTenant('beta'), 2, 2)
    const q = oldModel('a question')
    const before = hitsOf(await acme.search(q, { k: 5 }))

    // Bad spaces are refused before anything is created.
    for (const bad of [
      { name: 'Bad-Name', dimensions: 4 },
      { name: 'default', dimensions: 4 },
      { name: 'x'.repeat(31), dimensions: 4 },
    ]) {
      await expect(store.addSpace(bad)).rejects.toBeInstanceOf(InvalidArgumentError)
    }
    await expect(store.addSpace({ name: 'v2', dimensions: 0 })).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(
      (await sql<{ n: number }>`select count(*)::int as n from pg_class where relname like 'sp_life%spaces'`.execute(t.db)).rows[0]!.n,
    ).toBe(0)

    const v2 = await store.addSpace({ name: 'v2', dimensions: NEW_DIM, model: 'hash-4' })
    expect(v2).toMatchObject({ name: 'v2', dimensions: NEW_DIM, model: 'hash-4', table: 'sp_life__v2' })
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM }) // idempotent
    await expect(store.addSpace({ name: 'v2', dimensions: NEW_DIM + 1 })).rejects.toBeInstanceOf(SchemaMismatchError)
    expect((await store.listSpaces()).map((s) => `${s.name}:${s.dimensions}`)).toEqual([`default:${DIM}`, `v2:${NEW_DIM}`])
    expect((await store.activeTenant('acme')).space).toBe('default')

    // The guard: nobody writes v2 rows of a tenant that is not migrating to it.
    await expect(
      sql`insert into sp_life__v2 (tenant_id, document_id, chunk_index, content, embedding) values ('acme', 'x', 0, 'x', '[1,0,0,0]')`.execute(
        t.db,
      ),
    ).rejects.toBeInstanceOf(EmbeddingSpaceError)

    const calls: string[][] = []
    const result = await store.migrateTenant('acme', { to: 'v2', embed: embedNew(calls), batchSize: 10 })
    expect(result).toMatchObject({ embedded: 36, batches: 4, deleted: 0, indexBuilt: false, switched: false })
    expect(calls.map((c) => c.length)).toEqual([10, 10, 10, 6])
    const status = await store.migrationStatus('acme')
    expect(status).toMatchObject({ active: 'default', target: 'v2', state: 'ready', total: 36, embedded: 36, pending: 0, embedCalls: 4 })
    await expectSpaceMatches('sp_life', 'sp_life__v2', 'acme')
    expect(await rowsOf('sp_life__v2', 'beta')).toEqual([])
    // Shadow evaluation before the switch: each space answers its own model's query; a chunk's own
    // text finds it first in both, so with it as the judgment both spaces score 1.
    const questions = ['doc-3 part 1 v0', 'doc-7 part 2 v0', 'doc-11 part 0 v0']
    const comparison = await store.compareSpaces('acme', {
      to: 'v2',
      queries: questions,
      k: 3,
      embed: { from: async (texts) => texts.map(oldModel), to: async (texts) => texts.map(newModel) },
      judgments: [['doc-3#1'], ['doc-7#2'], ['doc-11#0']],
    })
    expect(comparison).toMatchObject({
      from: 'default',
      to: 'v2',
      queries: 3,
      k: 3,
      quality: { from: { recall: 1, ndcg: 1 }, to: { recall: 1, ndcg: 1 } },
    })
    expect(comparison.perQuery.every((q) => q.overlap >= 1 / 3 && q.overlap <= 1)).toBe(true)
    await expect(
      store.compareSpaces('acme', { to: 'v2', queries: [], embed: { from: embedNew([]), to: embedNew([]) } }),
    ).rejects.toBeInstanceOf(InvalidArgumentError)
    // Until the switch the tenant searches and writes its old space.
    expect((await store.activeTenant('acme')).space).toBe('default')

    const switched = await store.switchTenant('acme', 'v2')
    expect(switched).toMatchObject({ active: 'v2', previous: 'default', target: null, state: 'switched' })
    const { space, tenant } = await store.activeTenant('acme')
    expect(space).toBe('v2')
    const newHits = await tenant.search(newModel('doc-3 part 1 v0'), { k: 3 })
    expect(newHits[0]).toMatchObject({ documentId: 'doc-3', chunkIndex: 1, metadata: { doc: 'doc-3', i: 1, version: 0 } })
    // A query of the old model in the new space is a typed error, never a mixed answer.
    await expect(tenant.search(q, { k: 3 })).rejects.toBeInstanceOf(DimensionMismatchError)
    // The old handle keeps answering in its own space, exactly as before, and may not write.
    expect(hitsOf(await acme.search(q, { k: 5 }))).toEqual(before)
    await expect(acme.replaceDocument('doc-0', chunks('doc-0', 1, 9))).rejects.toBeInstanceOf(EmbeddingSpaceError)
    await expect(acme.deleteDocument('doc-0')).rejects.toBeInstanceOf(EmbeddingSpaceError)
    await expect(
      sql`update sp_life set content = 'changed by the app' where tenant_id = 'acme' and document_id = 'doc-0'`.execute(t.db),
    ).rejects.toThrow(/searches embedding space "v2"/)
    // The other tenant still writes its default space.
    await store.forTenant('beta').replaceDocument('doc-9', chunks('doc-9', 1))

    // A write in the new space since the switch: the rollback needs it in the old model first.
    await tenant.replaceDocument('late', [{ content: 'written after the switch', embedding: newModel('late') }])
    const refused = await store.rollbackTenant('acme').catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(EmbeddingSpaceError)
    expect((refused as EmbeddingSpaceError).pending).toBe(1)
    await tenant.deleteDocument('late')
    await tenant.updateMetadata({ ids: ['doc-1'] }, { metadata: { reviewed: true }, mode: 'merge' })
    const back = await store.rollbackTenant('acme')
    expect(back).toMatchObject({ active: 'default', previous: 'v2', state: 'rolled_back' })
    // The old answers exactly; the metadata changed in v2 came back with the rollback.
    expect(hitsOf(await acme.search(q, { k: 5 }))).toEqual(before)
    expect((await acme.getChunks(['doc-1']))[0]!.metadata).toMatchObject({ reviewed: true })
    await acme.replaceDocument('doc-0', chunks('doc-0', 1, 2))

    await expect(store.dropSpace('v2')).rejects.toThrow(/acme still use/)
    await expect(store.dropSpace('default')).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(store.releaseTenantSpace('acme', 'default')).rejects.toBeInstanceOf(EmbeddingSpaceError)
    expect(await store.releaseTenantSpace('acme', 'v2')).toBe(36)
    await store.dropSpace('v2')
    expect((await store.listSpaces()).map((s) => s.name)).toEqual(['default'])
    expect((await sql<{ r: string | null }>`select to_regclass('sp_life__v2')::text as r`.execute(t.db)).rows[0]!.r).toBeNull()
    await store.close()
  })

  it('a backfill that dies between batches resumes without embedding a done batch again; bad embeds write nothing', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_crash', dimensions: DIM })
    await store.addSpace({ name: 'small', dimensions: NEW_DIM })
    await fill(store.forTenant('acme'), 10, 4)
    const calls: string[][] = []
    let n = 0
    const dying = async (texts: string[]) => {
      if (++n === 3) throw new Error('the embedding provider timed out')
      calls.push(texts)
      return texts.map(newModel)
    }
    await expect(store.migrateTenant('acme', { to: 'small', embed: dying, batchSize: 8 })).rejects.toThrow(/timed out/)
    expect(await store.migrationStatus('acme')).toMatchObject({ state: 'backfilling', embedded: 16, pending: 24, embedCalls: 2 })

    // An embed that answers with the wrong count or dimensions: a typed error, the batch not written.
    await expect(store.migrateTenant('acme', { to: 'small', embed: async (texts) => texts.slice(1).map(newModel) })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
    await expect(store.migrateTenant('acme', { to: 'small', embed: async (texts) => texts.map(() => [1, 2]) })).rejects.toBeInstanceOf(
      DimensionMismatchError,
    )
    // Stopped by its signal between batches.
    const stop = new AbortController()
    await expect(
      store.migrateTenant('acme', {
        to: 'small',
        batchSize: 8,
        signal: stop.signal,
        embed: async (texts) => {
          calls.push(texts)
          stop.abort()
          return texts.map(newModel)
        },
      }),
    ).rejects.toThrow(/abort/i)
    expect((await store.migrationStatus('acme')).embedded).toBe(24)

    const resumed = await store.migrateTenant('acme', { to: 'small', embed: embedNew(calls), batchSize: 8 })
    expect(resumed.embedded).toBe(16)
    // Every chunk embedded exactly once over the four calls.
    const embedded = calls.flat().sort()
    expect(embedded).toHaveLength(40)
    expect(new Set(embedded).size).toBe(40)
    await expectSpaceMatches('sp_crash', 'sp_crash__small', 'acme')
    // Moving to a space it already searches, or to another while one is under way, is refused.
    await expect(store.migrateTenant('acme', { to: 'default', embed: embedNew([]) })).rejects.toThrow(/already searches/)
    await store.addSpace({ name: 'other', dimensions: NEW_DIM })
    await expect(store.migrateTenant('acme', { to: 'other', embed: embedNew([]) })).rejects.toThrow(/is migrating to "small"/)
    await expect(store.migrateTenant('acme', { to: 'nope', embed: embedNew([]) })).rejects.toThrow(/no embedding space "nope"/)
    await expect(store.switchTenant('acme', 'other')).rejects.toThrow(/not migrating to "other"/)
    expect(await store.cancelMigration('acme')).toMatchObject({ active: 'default', target: null, state: 'active' })
    await store.close()
  })

  it('a batch lands only while the tenant still migrates to the space: cancelled while it was embedded, nothing of it is written', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_cancel', dimensions: DIM })
    await store.addSpace({ name: 'small', dimensions: NEW_DIM })
    await fill(store.forTenant('acme'), 6, 4)
    let calls = 0
    const cancelling = async (texts: string[]) => {
      // The second batch's embed: the first batch is written (or being written) meanwhile; the
      // migration is cancelled before this batch goes in.
      if (++calls === 2) await store.cancelMigration('acme')
      return texts.map(newModel)
    }
    const err = await store.migrateTenant('acme', { to: 'small', embed: cancelling, batchSize: 8 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(EmbeddingSpaceError)
    expect((err as Error).message).toMatch(/no longer migrating to "small"/)
    // At most the first batch (it may have committed before the cancel); never the second's keys.
    const written = await rowsOf('sp_cancel__small', 'acme')
    const base = await rowsOf('sp_cancel', 'acme')
    expect(written.length === 0 || written.length === 8).toBe(true)
    expect(written.map((r) => r.key)).toEqual(base.slice(0, written.length).map((r) => r.key))
    expect(await store.migrationStatus('acme')).toMatchObject({ active: 'default', target: null })
    await store.close()
  })

  it("under isolation 'rls', as a DML-only runtime role: migrate, switch and search one tenant; no row of another is seen or written", async () => {
    const config = { table: 'sp_rls', dimensions: DIM, isolation: 'rls' as const }
    await app.create()
    await PgVectorStore.migration(config, { runtimeRole: app.name }).up(t.db)
    const owner = await PgVectorStore.open(t.db, config)
    await owner.addSpace({ name: 'v2', dimensions: NEW_DIM }, { runtimeRole: app.name })
    await owner.close()
    // Row-level security on the space's table and on the tenants' state, as on the store's.
    const { rows: protectedTables } = await sql<{ name: string }>`
      select relname as name from pg_class where relname in ('sp_rls__v2', 'sp_rls_tenant_spaces') and relrowsecurity order by 1`.execute(
      t.db,
    )
    expect(protectedTables.map((r) => r.name)).toEqual(['sp_rls__v2', 'sp_rls_tenant_spaces'])

    await app.as(async (db) => {
      const store = await PgVectorStore.open(db, { ...config, migrate: false })
      await fill(store.forTenant('acme'), 4, 2)
      await fill(store.forTenant('beta'), 3, 2, 'beta-doc')
      await expect(store.addSpace({ name: 'v3', dimensions: NEW_DIM })).rejects.toThrow(/migrate: false/)
      const result = await store.migrateTenant('acme', { to: 'v2', embed: embedNew([]), switch: true })
      expect(result).toMatchObject({ embedded: 8, switched: true })
      const { tenant } = await store.activeTenant('acme')
      const hits = await tenant.search(newModel('doc-1 part 0 v0'), { k: 20 })
      expect(hits.map((h) => h.documentId).sort()).toEqual(['doc-0', 'doc-0', 'doc-1', 'doc-1', 'doc-2', 'doc-2', 'doc-3', 'doc-3'])
      // The app's own SQL as the role: the tenant it sets sees only its rows, and the guard holds.
      const seen = await db.transaction(async (trx) => {
        await sql`select set_config('pgscale.tenant_id', 'beta', true)`.execute(trx)
        return (await sql<{ n: number }>`select count(*)::int as n from sp_rls__v2`.execute(trx)).rows[0]!.n
      })
      expect(seen).toBe(0)
      const write = db.transaction(async (trx) => {
        await sql`select set_config('pgscale.tenant_id', 'acme', true)`.execute(trx)
        await sql`insert into sp_rls (tenant_id, document_id, chunk_index, content, embedding) values ('acme', 'sneak', 0, 'x', ${asVectorText(oldModel('x'))}::vector)`.execute(
          trx,
        )
      })
      await expect(write).rejects.toBeInstanceOf(EmbeddingSpaceError)
      expect((await store.migrationStatus('beta')).active).toBe('default')
      await store.close()
    })
    await expectSpaceMatches('sp_rls', 'sp_rls__v2', 'acme')
    expect(await rowsOf('sp_rls__v2', 'beta')).toEqual([])
  })
  it("the store's migration down drops its spaces with it — tables, bookkeeping, guard, version records; a down rolled back leaves all", async () => {
    const config = { table: 'sp_down', dimensions: DIM }
    const migration = PgVectorStore.migration(config)
    await migration.up(t.db)
    const store = await PgVectorStore.open(t.db, config)
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    await store.addSpace({ name: 'v3', dimensions: NEW_DIM })
    await fill(store.forTenant('acme'), 2, 2)
    // A tenant switched (its old space kept for a rollback: the change log in use) and one mid-migration.
    await store.migrateTenant('acme', { to: 'v2', embed: embedNew([]), switch: true })
    await fill(store.forTenant('beta'), 1, 2)
    await store.migrateTenant('beta', { to: 'v3', embed: embedNew([]) })
    await store.close()
    const left = async () => ({
      relations: (
        await sql<{ n: string }>`select relname as n from pg_class where relname like 'sp\_down%' order by 1`.execute(t.db)
      ).rows.map((r) => r.n),
      functions: (
        await sql<{ n: string }>`select proname as n from pg_proc where proname like 'sp\_down%' order by 1`.execute(t.db)
      ).rows.map((r) => r.n),
      records: (
        await sql<{ n: string }>`select object as n from pgscale_object_version where object like '%sp\_down%' order by 1`.execute(t.db)
      ).rows.map((r) => r.n),
    })
    const before = await left()
    expect(before.relations).toEqual(
      expect.arrayContaining(['sp_down', 'sp_down__v2', 'sp_down__v3', 'sp_down_spaces', 'sp_down_tenant_spaces', 'sp_down_space_changes']),
    )
    expect(before.functions).toEqual(['sp_down_space_guard'])
    expect(before.records).toEqual(['store:public.sp_down', 'store:public.sp_down__v2', 'store:public.sp_down__v3'])
    // In the Migrator's transaction: a failure after the down leaves everything in place.
    const failed = t.db.transaction().execute(async (trx) => {
      await migration.down!(trx)
      throw new Error('the next migration failed')
    })
    await expect(failed).rejects.toThrow('the next migration failed')
    expect(await left()).toEqual(before)
    await t.db.transaction().execute((trx) => migration.down!(trx))
    expect(await left()).toEqual({ relations: [], functions: [], records: [] })
    // A store that never added a space: its down drops the store alone.
    await migration.up(t.db)
    await migration.down!(t.db)
    expect(await left()).toEqual({ relations: [], functions: [], records: [] })
  })
})
