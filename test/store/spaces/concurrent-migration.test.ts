import { describe, expect, it } from 'vitest'
import { EmbeddingSpaceError, PgVectorStore, type TenantStore } from '../../../src/index.js'
import { useTestDatabase } from '../../support/test-database.js'
import { DIM, NEW_DIM, newModel, oldModel, rowsOf as tenantRows } from './space-fixtures.js'

/**
 * A migration while the tenant keeps working: writers of every kind during the backfill (none
 * lost, none left with the old vector only), the switch while searches run (none fails, none
 * empty, none mixed). The embed is slow on purpose so the writes land between its batches.
 */
const t = useTestDatabase()

const slowEmbed = async (texts: string[]) => {
  await new Promise((resolve) => setTimeout(resolve, 3))
  return texts.map(newModel)
}

type Chunk = { content: string; metadata: Record<string, unknown> }

const rowsOf = (table: string, tenantId: string) => tenantRows(t.db, table, tenantId)

describe('a migration under load', () => {
  it('writes of every kind during the backfill are all in the new space at the switch, with the new vector of their text', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_load', dimensions: DIM })
    const acme = store.forTenant('acme')
    // The model of the tenant's documents: what every completed write left.
    const model = new Map<string, Chunk[]>()
    const write = async (tenant: TenantStore, doc: string, version: number, n: number) => {
      const chunks = Array.from({ length: n }, (_, i) => ({ content: `${doc} ${i} v${version}`, metadata: { doc, version } }))
      await tenant.replaceDocument(
        doc,
        chunks.map((c) => ({ ...c, embedding: oldModel(c.content) })),
      )
      model.set(doc, chunks)
    }
    for (let d = 0; d < 20; d++) await write(acme, `doc-${d}`, 0, 3)
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })

    // A seeded linear congruential sequence: the same operations every run.
    let state = 20261202
    const random = () => {
      state = (state * 1103515245 + 12345) % 2147483648
      return state / 2147483648
    }
    let stop = false
    let refused: unknown
    let completed = 0
    const writer = (async () => {
      for (let n = 1; !stop; n++) {
        const doc = `doc-${Math.floor(random() * 24)}`
        const op = random()
        try {
          if (op < 0.45) await write(acme, doc, n, 1 + Math.floor(random() * 3))
          else if (op < 0.6) {
            await acme.deleteDocument(doc)
            model.delete(doc)
          } else if (op < 0.8) {
            const content = `upserted ${doc} v${n}`
            await acme.upsertChunks([{ id: `u-${doc}`, content, embedding: oldModel(content), metadata: { up: n } }])
            model.set(`u-${doc}`, [{ content, metadata: { up: n } }])
          } else if (model.has(doc)) {
            const changed = await acme.updateMetadata({ ids: [doc] }, { metadata: { touched: n }, mode: 'merge' })
            if (changed > 0)
              model.set(
                doc,
                model.get(doc)!.map((c) => ({ ...c, metadata: { ...c.metadata, touched: n } })),
              )
          }
          completed++
        } catch (err) {
          refused = err
          return
        }
        await new Promise((resolve) => setTimeout(resolve, 1))
      }
    })()
    const result = await store.migrateTenant('acme', { to: 'v2', embed: slowEmbed, batchSize: 4, switch: true })
    stop = true
    await writer
    expect(result.switched).toBe(true)
    expect(completed).toBeGreaterThan(5) // writes did land while the backfill ran
    // A write after the switch through the old space is refused with a typed error (not lost: the app is told).
    if (refused !== undefined) expect(refused).toBeInstanceOf(EmbeddingSpaceError)

    const expected = [...model.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([doc, chunks]) => chunks.map((c, i) => [`${doc}#${i}`, c.content, c.metadata]))
    const base = await rowsOf('sp_load', 'acme')
    const v2 = await rowsOf('sp_load__v2', 'acme')
    expect(base.map((r) => [r.key, r.content, r.metadata])).toEqual(expected)
    expect(v2.map((r) => [r.key, r.content, r.metadata])).toEqual(expected)
    for (const r of v2) {
      const got = JSON.parse(r.embedding) as number[]
      newModel(r.content).forEach((x, i) => expect(got[i]).toBeCloseTo(x, 5))
    }
    await store.close()
  })

  it('the switch under concurrent searches: no search fails, none is empty, each answers in one space', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_search', dimensions: DIM })
    const acme = store.forTenant('acme')
    for (let d = 0; d < 30; d++) {
      await acme.replaceDocument(
        `doc-${d}`,
        [0, 1].map((i) => ({ content: `doc-${d} ${i}`, embedding: oldModel(`doc-${d} ${i}`) })),
      )
    }
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    await store.migrateTenant('acme', { to: 'v2', embed: slowEmbed })
    const question = 'doc-7 1'
    const bySpace = { default: 0, v2: 0 }
    const failures: unknown[] = []
    let stop = false
    const searcher = async () => {
      while (!stop) {
        try {
          const { space, tenant } = await store.activeTenant('acme')
          const hits = await tenant.search(space === 'v2' ? newModel(question) : oldModel(question), { k: 3 })
          if (hits.length !== 3 || hits[0]!.content !== question) failures.push(hits)
          bySpace[space as 'default' | 'v2']++
          // A handle of the old space keeps answering in it.
          if ((await acme.search(oldModel(question), { k: 3 }))[0]?.content !== question) failures.push('old handle')
        } catch (err) {
          failures.push(err)
        }
      }
    }
    const searchers = [searcher(), searcher()]
    await new Promise((resolve) => setTimeout(resolve, 50))
    await store.switchTenant('acme', 'v2')
    await new Promise((resolve) => setTimeout(resolve, 50))
    stop = true
    await Promise.all(searchers)
    expect(failures).toEqual([])
    expect(bySpace.default).toBeGreaterThan(0)
    expect(bySpace.v2).toBeGreaterThan(0)
    await store.close()
  })

  it('two backfills of one tenant at once (two workers) both finish, and the space holds each chunk once with its vector', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_twice', dimensions: DIM })
    const acme = store.forTenant('acme')
    for (let d = 0; d < 12; d++) {
      await acme.replaceDocument(
        `doc-${d}`,
        [0, 1, 2].map((i) => ({ content: `doc-${d} ${i}`, embedding: oldModel(`doc-${d} ${i}`) })),
      )
    }
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    const other = await PgVectorStore.open(t.db, { table: 'sp_twice', dimensions: DIM }) // another process's store
    const results = await Promise.all([
      store.migrateTenant('acme', { to: 'v2', embed: slowEmbed, batchSize: 5 }),
      other.migrateTenant('acme', { to: 'v2', embed: slowEmbed, batchSize: 5 }),
    ])
    expect(results[0].embedded + results[1].embedded).toBeGreaterThanOrEqual(36)
    const v2 = await rowsOf('sp_twice__v2', 'acme')
    expect(v2.map((r) => r.content)).toEqual((await rowsOf('sp_twice', 'acme')).map((r) => r.content))
    for (const r of v2) {
      const got = JSON.parse(r.embedding) as number[]
      newModel(r.content).forEach((x, i) => expect(got[i]).toBeCloseTo(x, 5))
    }
    expect(await store.migrationStatus('acme')).toMatchObject({ state: 'ready', pending: 0, total: 36 })
    await other.close()
    await store.close()
  })

  it('two switches of one tenant at once: one flips it, the other is told it is not migrating any more', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_two_switch', dimensions: DIM })
    await store.forTenant('acme').replaceDocument('d', [{ content: 'only', embedding: oldModel('only') }])
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    await store.migrateTenant('acme', { to: 'v2', embed: slowEmbed })
    const other = await PgVectorStore.open(t.db, { table: 'sp_two_switch', dimensions: DIM })
    const outcomes = await Promise.allSettled([store.switchTenant('acme', 'v2'), other.switchTenant('acme', 'v2')])
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1)
    const refused = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')
    expect(refused?.reason).toBeInstanceOf(EmbeddingSpaceError)
    expect(await store.migrationStatus('acme')).toMatchObject({ active: 'v2', previous: 'default', state: 'switched' })
    await other.close()
    await store.close()
  })
})
