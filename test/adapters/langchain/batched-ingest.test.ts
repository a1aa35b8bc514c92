import { beforeAll, expect, it } from 'vitest'
import { PgScaleError, PgVectorStore } from '../../../src/index.js'
import { seededRandom } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { LANGCHAIN_MISSING, loadLangChain, SYNTHETIC_DIMENSIONS, type LangChainKit } from './langchain-kit.js'

/**
 * `addVectors`/`addDocuments` without ids (none given, no document with its own) load through the
 * store's `bulkIngest` (binary COPY, one transaction): every row new under a fresh UUID, a batch
 * whole or not at all, two loads at once both whole; with ids they replace through the store's
 * `bulkUpsert` (binary COPY too): two such batches of the same ids at once leave one writer's rows.
 */
const t = useTestDatabase()

describeUnless(LANGCHAIN_MISSING)('pgscale/langchain: batched ingest through COPY', () => {
  let kit: LangChainKit
  let store: PgVectorStore
  const r = seededRandom('langchain-batched-ingest')
  const vectors = (n: number) => Array.from({ length: n }, () => Array.from({ length: SYNTHETIC_DIMENSIONS }, () => r.gaussian()))
  const docs = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) => new kit.Document({ pageContent: `doc ${i}`, metadata: { i, tag } }))

  beforeAll(async () => {
    kit = await loadLangChain()
    store = await PgVectorStore.open(t.db, { table: 'lc_batched', dimensions: SYNTHETIC_DIMENSIONS })
  })

  it('3,000 documents without ids: all stored under unique UUIDs; with ids the same call replaces', async () => {
    const vs = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.synthetic())
    const batch = vectors(3000)
    const ids = await vs.addVectors(batch, docs(3000, 'a'))
    expect(new Set(ids).size).toBe(3000)
    expect(await vs.tenant.count({ tag: 'a' })).toBe(3000)
    const [found] = await vs.getByIds([ids[1234]!])
    expect(found!.metadata).toEqual({ i: 1234, tag: 'a' })
    await vs.addVectors([batch[0]!], [new kit.Document({ pageContent: 'again', metadata: { i: 0, tag: 'a' } })], { ids: [ids[0]!] })
    expect(await vs.tenant.count({ tag: 'a' })).toBe(3000)
    expect((await vs.getByIds([ids[0]!]))[0]!.pageContent).toBe('again')
  })

  it('a batch with one bad vector is a typed error and writes nothing', async () => {
    const vs = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.synthetic())
    const batch = vectors(1500)
    batch[1499] = batch[1499]!.slice(1)
    await expect(vs.addVectors(batch, docs(1500, 'bad'))).rejects.toBeInstanceOf(PgScaleError)
    expect(await vs.tenant.count({ tag: 'bad' })).toBe(0)
  })

  it('two loads at once (two tenants): each whole, nothing crossed', async () => {
    const [a, b] = [
      kit.adapter.PgScaleVectorStore.forTenant(store, 'one', kit.synthetic()),
      kit.adapter.PgScaleVectorStore.forTenant(store, 'two', kit.synthetic()),
    ]
    await Promise.all([a.addVectors(vectors(2000), docs(2000, 'x')), b.addVectors(vectors(1000), docs(1000, 'x'))])
    expect([await a.tenant.count({ tag: 'x' }), await b.tenant.count({ tag: 'x' })]).toEqual([2000, 1000])
  })

  it('3,000 documents with ids, twice at once: every id one whole row of one writer, none doubled; a bad one writes nothing', async () => {
    const vs = kit.adapter.PgScaleVectorStore.forTenant(store, 'ids', kit.synthetic())
    const ids = Array.from({ length: 3000 }, (_, i) => `id-${i}`)
    const batch = vectors(3000)
    const written = (w: string) =>
      Array.from({ length: 3000 }, (_, i) => new kit.Document({ pageContent: `${w} ${i}`, metadata: { i, w } }))
    await vs.addVectors(batch, written('w0'), { ids })
    await Promise.all([vs.addVectors(batch, written('w1'), { ids }), vs.addVectors(batch, written('w2'), { ids: [...ids] })])
    expect(await vs.tenant.count()).toBe(3000)
    const winners = await Promise.all(['w0', 'w1', 'w2'].map((w) => vs.tenant.count({ w })))
    expect(winners.filter((n) => n === 3000)).toHaveLength(1)
    const found = await vs.getByIds(['id-0', 'id-2999'])
    expect(found.map((d) => d.pageContent.split(' ')[0])).toEqual(Array(2).fill(found[0]!.pageContent.split(' ')[0]))
    const bad = vectors(3000)
    bad[2999] = bad[2999]!.slice(1)
    await expect(vs.addVectors(bad, written('w3'), { ids })).rejects.toBeInstanceOf(PgScaleError)
    expect(await vs.tenant.count({ w: 'w3' })).toBe(0)
    expect(await vs.tenant.count()).toBe(3000)
  })
})
