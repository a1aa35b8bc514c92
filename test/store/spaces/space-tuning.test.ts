import { sql } from 'kysely'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { connect, Database, EmbeddingSpaceError, PgVectorStore, type TenantStore } from '../../../src/index.js'
import { useTestDatabase } from '../../support/test-database.js'
import { DIM, NEW_DIM, newModel, oldModel } from './space-fixtures.js'

/**
 * The new space's tenant tuned before the switch: the backfill builds the tenant's index and tunes
 * it with `optimize`'s tuner at its recall target in the space it searches; the switch refuses an
 * index left untuned (unless told), a tenant below `ownIndexAbove` switches with nothing to tune,
 * a failed tuning resumes; and the switch's last pass runs before its lock, so the lock waits only
 * for the chunks written during that pass. Every figure is read from the database or from the
 * calls the store makes (the search's settings as sent).
 */
const t = useTestDatabase()

const chunks = (doc: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ content: `${doc} part ${i}`, embedding: oldModel(`${doc} part ${i}`), metadata: { doc, i } }))

async function fill(tenant: TenantStore, docs: number, perDoc: number): Promise<void> {
  for (let d = 0; d < docs; d++) await tenant.replaceDocument(`doc-${d}`, chunks(`doc-${d}`, perDoc))
}

const embed = async (texts: string[]) => texts.map(newModel)
/** Small and quick, the default ef_search (100) left out so a tuned search is told apart from an untuned one. */
const TUNING = { sample: 40, filters: false, maxLatencyMs: 10_000, efSearchSteps: [40, 64, 130, 200] }

/** The ef_search of every search sent through `queryWithSettings` while `run` runs (the store's own call, observed, not replaced). */
async function efSearchesOf(run: () => Promise<unknown>): Promise<unknown[]> {
  const spy = vi.spyOn(Database.prototype, 'queryWithSettings')
  try {
    await run()
    return spy.mock.calls.map((c) => (c[2] as Record<string, unknown>)['hnsw.ef_search'])
  } finally {
    spy.mockRestore()
  }
}

afterEach(() => vi.restoreAllMocks())

describe('the new space tuned before the switch', () => {
  it('a tenant above ownIndexAbove is tuned at its recall target; after the switch its searches use that ef_search', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_tune', dimensions: DIM })
    const acme = store.forTenant('acme')
    await fill(acme, 30, 4)
    await fill(store.forTenant('beta'), 5, 4)
    // The tenant's recall target in the space it searches: 0.95, not the default 0.98.
    await store.optimize({ ownIndexAbove: 50, targetRecall: 0.95, tuning: TUNING })
    expect((await store.tenantTuning()).map((x) => [x.tenantId, x.targetRecall])).toEqual([['acme', 0.95]])
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })

    const result = await store.migrateTenant('acme', { to: 'v2', embed, ownIndexAbove: 50, tune: { tuning: TUNING } })
    expect(result).toMatchObject({ embedded: 120, indexBuilt: true, switched: false })
    expect(result.tuning).toMatchObject({ space: 'v2', chunks: 120, indexed: true, untuned: false, tunedNow: true })
    const tuned = result.tuning!.tuning!
    expect(tuned).toMatchObject({ tenantId: 'acme', targetRecall: 0.95, rowsAtTuning: 120, exact: false, querySource: 'chunks' })
    expect(tuned.recallBound!.lower).toBeGreaterThan(0)
    expect(tuned.recallBound!.mean).toBeGreaterThanOrEqual(0.95)
    // The status says the same before the switch; the space it searches keeps its own tuning.
    const status = await store.migrationStatus('acme')
    expect(status).toMatchObject({ state: 'ready', target: 'v2', tuning: { space: 'v2', indexed: true, untuned: false } })
    expect(status.tuning.tuning).toMatchObject({ efSearch: tuned.efSearch, targetRecall: 0.95 })
    // A second call finds it tuned for its size: nothing embedded, nothing tuned again.
    const again = await store.migrateTenant('acme', { to: 'v2', embed, ownIndexAbove: 50, tune: { tuning: TUNING } })
    expect(again).toMatchObject({ embedded: 0, tuning: { tunedNow: false, tuning: { tunedAt: tuned.tunedAt } } })

    await store.switchTenant('acme', 'v2')
    const { tenant, store: v2 } = await store.activeTenant('acme')
    expect((await v2.tenantTuning()).map((x) => [x.tenantId, x.targetRecall, x.efSearch])).toEqual([['acme', 0.95, tuned.efSearch]])
    expect(tuned.efSearch).not.toBe(v2.config.defaultEfSearch)
    const used = await efSearchesOf(() => tenant.search(newModel('doc-3 part 1'), { k: 3 }))
    expect(used).toEqual([tuned.efSearch])

    // Below ownIndexAbove: no index, nothing to tune, and the switch needs nothing.
    const small = await store.migrateTenant('beta', { to: 'v2', embed, ownIndexAbove: 50 })
    expect(small).toMatchObject({
      embedded: 20,
      indexBuilt: false,
      tuning: { indexed: false, tuning: null, untuned: false, tunedNow: false },
    })
    expect(await store.switchTenant('beta', 'v2')).toMatchObject({ active: 'v2' })
    expect((await v2.tenantTuning()).map((x) => x.tenantId)).toEqual(['acme'])
    const { rows: indexes } = await sql<{
      name: string
    }>`select indexname as name from pg_indexes where tablename = 'sp_tune__v2' and indexdef like '%hnsw%' order by 1`.execute(t.db)
    expect(indexes.map((r) => r.name).filter((n) => n.includes('beta'))).toEqual([])
    await expect(store.migrateTenant('beta', { to: 'default', embed, tune: { targetRecall: 1.5 } })).rejects.toThrow(/targetRecall/)
    await store.close()
  })

  it('with tune: false the switch refuses the untuned index (typed), allowUntuned switches it, and its searches run at the default ef_search', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_untuned', dimensions: DIM })
    await fill(store.forTenant('acme'), 30, 4)
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    const result = await store.migrateTenant('acme', { to: 'v2', embed, ownIndexAbove: 50, tune: false })
    expect(result).toMatchObject({ indexBuilt: true, tuning: null })
    expect((await store.migrationStatus('acme')).tuning).toMatchObject({ indexed: true, tuning: null, untuned: true })
    const refused = await store.switchTenant('acme', 'v2').catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(EmbeddingSpaceError)
    expect(refused).toMatchObject({ untuned: true, pending: 0 })
    expect((await store.migrationStatus('acme')).active).toBe('default')
    await store.switchTenant('acme', 'v2', { allowUntuned: true })
    const { tenant, store: v2 } = await store.activeTenant('acme')
    expect(await efSearchesOf(() => tenant.search(newModel('doc-3 part 1'), { k: 3 }))).toEqual([v2.config.defaultEfSearch])
    await store.close()
  })

  it("the switch's tuning check: a few writes since the tuning switch, a third more chunks are refused as untuned (typed)", async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_drift', dimensions: DIM })
    const acme = store.forTenant('acme')
    await fill(acme, 30, 4)
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    const tuned = await store.migrateTenant('acme', { to: 'v2', embed, ownIndexAbove: 50, tune: { tuning: TUNING } })
    expect(tuned.tuning).toMatchObject({ chunks: 120, untuned: false, tunedNow: true })
    // 2 chunks more (under the margin): the switch's check holds without counting the tenant.
    await acme.replaceDocument('extra', chunks('extra', 2))
    const few = await store.switchTenant('acme', 'v2', { embed })
    expect(few).toMatchObject({ active: 'v2' })
    await store.rollbackTenant('acme')
    // Back in the old space, 40 more chunks (a third): migrated without re-tuning, the switch refuses.
    for (let d = 30; d < 40; d++) await acme.replaceDocument(`doc-${d}`, chunks(`doc-${d}`, 4))
    await store.migrateTenant('acme', { to: 'v2', embed, ownIndexAbove: 50, tune: false })
    const refused = await store.switchTenant('acme', 'v2', { embed }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(EmbeddingSpaceError)
    expect(refused).toMatchObject({ untuned: true })
    expect((await store.migrationStatus('acme')).tuning).toMatchObject({ chunks: 162, untuned: true })
    await store.close()
  })

  it('a tuning that fails leaves the migration backfilling and untuned, never switched; the next call tunes it without embedding again', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_tunefail', dimensions: DIM })
    await fill(store.forTenant('acme'), 30, 4)
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    // The fault: the space's tuning table refuses the tenant's row (as a dead connection would end the tuning).
    await sql
      .raw(
        `create function sp_tunefail_fault() returns trigger language plpgsql as $$ begin raise exception 'tuning fault injected'; end $$;
         create trigger sp_tunefail_fault before insert or update on sp_tunefail__v2_tenant_tuning for each row execute function sp_tunefail_fault()`,
      )
      .execute(t.db)
    const calls: string[][] = []
    const counting = async (texts: string[]) => (calls.push(texts), texts.map(newModel))
    const options = { to: 'v2', embed: counting, ownIndexAbove: 50, switch: true, tune: { tuning: TUNING } }
    await expect(store.migrateTenant('acme', options)).rejects.toThrow(/tuning fault injected/)
    const status = await store.migrationStatus('acme')
    expect(status).toMatchObject({
      active: 'default',
      target: 'v2',
      state: 'backfilling',
      pending: 0,
      tuning: { indexed: true, untuned: true },
    })
    await expect(store.switchTenant('acme', 'v2')).rejects.toMatchObject({ untuned: true })
    expect(calls.flat()).toHaveLength(120)

    await sql.raw(`drop trigger sp_tunefail_fault on sp_tunefail__v2_tenant_tuning`).execute(t.db)
    const resumed = await store.migrateTenant('acme', options)
    expect(resumed).toMatchObject({ embedded: 0, switched: true, tuning: { tunedNow: true, untuned: false } })
    expect(calls.flat()).toHaveLength(120)
    expect((await store.activeTenant('acme')).space).toBe('v2')
    await store.close()
  })

  it('the switch embeds under its lock only the chunks written during its last unlocked pass', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_lastpass', dimensions: DIM })
    const acme = store.forTenant('acme')
    await fill(acme, 4, 3)
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    await store.migrateTenant('acme', { to: 'v2', embed })
    // Written after the backfill's last pass.
    for (const doc of ['late-1', 'late-2', 'late-3']) await acme.replaceDocument(doc, chunks(doc, 1))
    // On a server, another connection tells whether the switch holds the tenant's state row.
    const probe = t.url ? await connect(t.url, { maxConnections: 1, requireVector: false }) : undefined
    const locked = async () =>
      probe
        ? (await sql`select 1 from sp_lastpass_tenant_spaces where tenant_id = 'acme' for update skip locked`.execute(probe)).rows
            .length === 0
        : undefined
    const calls: Array<{ texts: string[]; locked: boolean | undefined }> = []
    await store.switchTenant('acme', 'v2', {
      embed: async (texts) => {
        calls.push({ texts, locked: await locked() })
        // A write during the first call (the unlocked pass; never under the lock — it would wait for the switch): the lock must take it along.
        if (calls.length === 1 && calls[0]!.locked !== true) await acme.replaceDocument('during', chunks('during', 1))
        return texts.map(newModel)
      },
    })
    await probe?.close()
    expect(calls.map((c) => c.texts)).toEqual([['late-1 part 0', 'late-2 part 0', 'late-3 part 0'], ['during part 0']])
    if (t.url) expect(calls.map((c) => c.locked)).toEqual([false, true])
    const { tenant } = await store.activeTenant('acme')
    expect((await tenant.getChunks(['during', 'late-3'])).map((c) => c.content)).toEqual(['during part 0', 'late-3 part 0'])
    expect((await store.migrationStatus('acme')).total).toBe(16)
    await store.close()
  })
})
