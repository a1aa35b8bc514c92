import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DimensionMismatchError, InvalidArgumentError, PgScaleError, PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import {
  LANGCHAIN_MISSING,
  loadLangChain,
  plain,
  SYNTHETIC_DIMENSIONS,
  type LangChainKit,
  type PgScaleVectorStore,
} from './langchain-kit.js'

/**
 * The adapter's own surface beyond the standard tests: how it is made (`forTenant`, the
 * constructor, `fromTexts`/`fromDocuments`), ids (batches, repeats, documents of several chunks
 * through `replaceDocument`), the app's transaction, and what it refuses — a typed `PgScaleError`
 * before anything is embedded or sent, the table unchanged.
 */
const t = useTestDatabase()
const TABLE = 'lc_api'

describeUnless(LANGCHAIN_MISSING)('pgscale/langchain: the adapter', () => {
  let kit: LangChainKit
  let store: PgVectorStore
  let vectorStore: PgScaleVectorStore
  let tenants = 0

  const tableState = async () =>
    JSON.stringify((await sql`select * from ${sql.table(TABLE)} order by tenant_id, document_id, chunk_index`.execute(t.db)).rows)

  beforeAll(async () => {
    kit = await loadLangChain()
    store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: SYNTHETIC_DIMENSIONS })
  })

  beforeEach(() => {
    vectorStore = kit.adapter.PgScaleVectorStore.forTenant(store, `tenant-${++tenants}`, kit.synthetic())
  })

  describe('made as LangChain makes stores', () => {
    it('the constructor takes (embeddings, { store, tenantId }); it is a pgscale vector store to LangChain', async () => {
      const made = new kit.adapter.PgScaleVectorStore(kit.synthetic(), { store, tenantId: 'made' })
      expect(made.tenantId).toBe('made')
      expect(made._vectorstoreType()).toBe('pgscale')
      expect(made.lc_namespace).toEqual(['langchain', 'vectorstores', 'pgscale'])
      expect(kit.adapter.PgScaleVectorStore.lc_name()).toBe('PgScaleVectorStore')
      expect(made.lc_kwargs).toEqual({ tenantId: 'made' })
      expect(made.embeddings).toBeDefined()
    })

    it('fromTexts: one metadata per text or one for all, ids optional', async () => {
      const tenantId = `tenant-${++tenants}`
      const made = await kit.adapter.PgScaleVectorStore.fromTexts(['apples', 'pears'], [{ n: 1 }, { n: 2 }], kit.synthetic(), {
        store,
        tenantId,
        ids: ['x', 'y'],
      })
      expect((await made.getByIds(['x', 'y'])).map(plain)).toEqual([
        { pageContent: 'apples', metadata: { n: 1 }, id: 'x' },
        { pageContent: 'pears', metadata: { n: 2 }, id: 'y' },
      ])
      const shared = await kit.adapter.PgScaleVectorStore.fromTexts(['plums', 'figs'], { source: 'list' }, kit.synthetic(), {
        store,
        tenantId: `tenant-${++tenants}`,
      })
      const found = await shared.similaritySearch('figs', 2)
      expect(found.map((d) => [d.pageContent, d.metadata])).toEqual([
        ['figs', { source: 'list' }],
        ['plums', { source: 'list' }],
      ])
    })

    it('fromDocuments writes the documents under their ids', async () => {
      const made = await kit.adapter.PgScaleVectorStore.fromDocuments(
        [new kit.Document({ pageContent: 'kiwis', metadata: {}, id: 'k' })],
        kit.synthetic(),
        { store, tenantId: `tenant-${++tenants}` },
      )
      expect((await made.getByIds(['k']))[0]?.pageContent).toBe('kiwis')
    })
  })

  describe('ids', () => {
    it('addVectors returns one id per document, in order, also when an id repeats (the last document wins)', async () => {
      const docs = ['alpha', 'beta', 'gamma'].map((pageContent) => new kit.Document({ pageContent, metadata: { v: pageContent } }))
      const vectors = await kit.synthetic().embedDocuments(docs.map((d) => d.pageContent))
      expect(await vectorStore.addVectors(vectors, docs, { ids: ['x', 'y', 'x'] })).toEqual(['x', 'y', 'x'])
      expect((await vectorStore.getByIds(['x', 'y'])).map((d) => d.pageContent)).toEqual(['gamma', 'beta'])
      expect(await vectorStore.tenant.count()).toBe(2)
      expect(await vectorStore.addVectors([], [])).toEqual([])
      expect(await vectorStore.addDocuments([])).toEqual([])
    })

    it('options.ids win over Document.id', async () => {
      const ids = await vectorStore.addDocuments([new kit.Document({ pageContent: 'alpha', metadata: {}, id: 'own' })], { ids: ['given'] })
      expect(ids).toEqual(['given'])
      expect(await vectorStore.getByIds(['own'])).toEqual([])
      expect((await vectorStore.getByIds(['given']))[0]?.id).toBe('given')
    })

    it('replaceDocument: chunks of one document under its id, replaced whole; delete and getByIds take the document', async () => {
      const chunks = ['first part', 'second part', 'third part'].map((pageContent, i) => new kit.Document({ pageContent, metadata: { i } }))
      expect(await vectorStore.replaceDocument('manual', chunks)).toEqual({ written: 3, removed: 0 })
      expect((await vectorStore.getByIds(['manual'])).map(plain)).toEqual(
        chunks.map((c, i) => ({ pageContent: c.pageContent, metadata: { i }, id: 'manual' })),
      )
      const hits = await vectorStore.similaritySearch('second part', 3)
      expect(hits.map((d) => d.id)).toEqual(['manual', 'manual', 'manual'])
      expect(hits[0]?.pageContent).toBe('second part')
      expect(await vectorStore.replaceDocument('manual', chunks.slice(0, 2))).toEqual({ written: 2, removed: 1 })
      // Added as a LangChain document, the id becomes a document of one chunk.
      await vectorStore.addDocuments([new kit.Document({ pageContent: 'the summary', metadata: {} })], { ids: ['manual'] })
      expect((await vectorStore.getByIds(['manual'])).map((d) => d.pageContent)).toEqual(['the summary'])
      await vectorStore.replaceDocument('manual', chunks)
      await vectorStore.delete({ ids: ['manual'] })
      expect(await vectorStore.tenant.count()).toBe(0)
      // Vectors given: nothing is embedded.
      const vectors = await kit.synthetic().embedDocuments(['anything'])
      expect(await vectorStore.replaceDocument('given', [new kit.Document({ pageContent: '', metadata: {} })], { vectors })).toEqual({
        written: 1,
        removed: 0,
      })
    })

    it('metadata is stored as JSON writes it (a nested Date becomes its ISO string)', async () => {
      const at = new Date('2024-05-01T10:00:00Z')
      await vectorStore.addDocuments([new kit.Document({ pageContent: 'dated', metadata: { at, nested: { at } }, id: 'd' })])
      const [doc] = await vectorStore.getByIds(['d'])
      expect(doc?.metadata).toEqual({ at: at.toISOString(), nested: { at: at.toISOString() } })
      expect((await vectorStore.similaritySearch('dated', 1, { at: { $gte: new Date('2024-01-01T00:00:00Z') } }))[0]?.id).toBe('d')
    })
  })

  describe('inside the app’s transaction', () => {
    it('writes commit or roll back with it', async () => {
      const tenantId = `tenant-${++tenants}`
      await expect(
        t.db.transaction().execute(async (trx) => {
          const inTrx = kit.adapter.PgScaleVectorStore.forTenant(store, tenantId, kit.synthetic(), { transaction: trx })
          await inTrx.addDocuments([new kit.Document({ pageContent: 'uncommitted', metadata: {}, id: 'u' })])
          expect((await inTrx.getByIds(['u']))[0]?.pageContent).toBe('uncommitted')
          throw new Error('the app changes its mind')
        }),
      ).rejects.toThrow('the app changes its mind')
      const outside = kit.adapter.PgScaleVectorStore.forTenant(store, tenantId, kit.synthetic())
      expect(await outside.getByIds(['u'])).toEqual([])
      await t.db.transaction().execute(async (trx) => {
        const inTrx = kit.adapter.PgScaleVectorStore.forTenant(store, tenantId, kit.synthetic(), { transaction: trx })
        await inTrx.addDocuments([new kit.Document({ pageContent: 'committed', metadata: {}, id: 'c' })])
      })
      expect((await outside.getByIds(['c']))[0]?.pageContent).toBe('committed')
    })
  })

  describe('refused: a typed PgScaleError, nothing embedded or sent', () => {
    const doc = (pageContent: string, id?: string) => new kit.Document({ pageContent, metadata: {}, ...(id === undefined ? {} : { id }) })
    let embedded = 0
    const counting = () => {
      const inner = kit.synthetic()
      return {
        embedDocuments: (texts: string[]) => ((embedded += texts.length), inner.embedDocuments(texts)),
        embedQuery: (text: string) => ((embedded += 1), inner.embedQuery(text)),
      }
    }
    const cases: Array<[string, (v: PgScaleVectorStore) => Promise<unknown>, new (...args: any[]) => PgScaleError]> = [
      ['delete({})', (v) => v.delete({} as never), InvalidArgumentError],
      ['delete() with nothing', (v) => v.delete(undefined as never), InvalidArgumentError],
      ['delete({ ids, filter })', (v) => v.delete({ ids: ['a'], filter: { n: 1 } } as never), InvalidArgumentError],
      ['delete({ ids: "a" })', (v) => v.delete({ ids: 'a' as never }), InvalidArgumentError],
      ['delete({ ids: [""] })', (v) => v.delete({ ids: ['ok', ''] }), InvalidArgumentError],
      ['delete({ filter: {} })', (v) => v.delete({ filter: {} }), InvalidArgumentError],
      ['delete({ filter }) with a community range of a string', (v) => v.delete({ filter: { n: { gt: '1' } } }), InvalidArgumentError],
      ['addDocuments: ids of another length', (v) => v.addDocuments([doc('alpha'), doc('beta')], { ids: ['a'] }), InvalidArgumentError],
      ['addDocuments: not an array', (v) => v.addDocuments(doc('alpha') as never), InvalidArgumentError],
      ['addDocuments: a null document', (v) => v.addDocuments([doc('alpha'), null as never]), InvalidArgumentError],
      ['addDocuments: a numeric id', (v) => v.addDocuments([doc('alpha')], { ids: [7 as never] }), InvalidArgumentError],
      ['addDocuments: an empty Document.id', (v) => v.addDocuments([doc('alpha'), doc('beta', '')]), InvalidArgumentError],
      ['addVectors: fewer vectors than documents', (v) => v.addVectors([[1, 0, 0, 0, 0, 0]], [doc('a'), doc('b')]), InvalidArgumentError],
      ['addVectors: wrong dimensions', (v) => v.addVectors([[1, 0]], [doc('a')]), DimensionMismatchError],
      [
        'addVectors: a metadata Date',
        (v) => v.addVectors([[1, 0, 0, 0, 0, 0]], [{ pageContent: 'a', metadata: new Date() as never }]),
        InvalidArgumentError,
      ],
      ['similaritySearch: k = 0', (v) => v.similaritySearch('alpha', 0), InvalidArgumentError],
      [
        'similaritySearchVectorWithScore: k = 1001',
        (v) => v.similaritySearchVectorWithScore([1, 0, 0, 0, 0, 0], 1001),
        InvalidArgumentError,
      ],
      ['maxMarginalRelevanceSearch: lambda 2', (v) => v.maxMarginalRelevanceSearch('alpha', { k: 2, lambda: 2 }), InvalidArgumentError],
      ['maxMarginalRelevanceSearch: no options', (v) => v.maxMarginalRelevanceSearch('alpha', undefined as never), InvalidArgumentError],
      ['getByIds: not an array', (v) => v.getByIds('a' as never), InvalidArgumentError],
      ['replaceDocument: vectors of another length', (v) => v.replaceDocument('d', [doc('a')], { vectors: [] }), InvalidArgumentError],
      ['replaceDocument: an empty document id', (v) => v.replaceDocument('', [doc('a')]), InvalidArgumentError],
    ]
    it.each(cases)('%s', async (_name, call, errorClass) => {
      const adapter = kit.adapter.PgScaleVectorStore.forTenant(store, 'refusals', counting())
      await adapter.addDocuments([doc('alpha', 'a')])
      const before = await tableState()
      embedded = 0
      const err = await call(adapter).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(errorClass)
      expect(err).toBeInstanceOf(PgScaleError)
      expect(await tableState()).toBe(before)
      if (!/similaritySearch|maxMarginal|replaceDocument: vectors/.test(_name)) expect(embedded).toBe(0)
    })

    it('the constructor: no store, a bad tenant id, bad options', () => {
      const make = (args: unknown) => () => new kit.adapter.PgScaleVectorStore(kit.synthetic(), args as never)
      expect(make(undefined)).toThrow(InvalidArgumentError)
      expect(make({ tenantId: 'acme' })).toThrow(InvalidArgumentError)
      expect(make({ store, tenantId: '' })).toThrow(InvalidArgumentError)
      expect(make({ store, tenantId: 'acme', scoreNormalization: 'cosine' })).toThrow(InvalidArgumentError)
      expect(make({ store, tenantId: 'acme', searchOptions: 3 })).toThrow(InvalidArgumentError)
    })
  })

  it('the adapter never closes the app’s store or pool', async () => {
    const tenantId = `tenant-${++tenants}`
    await kit.adapter.PgScaleVectorStore.fromTexts(['apples'], {}, kit.synthetic(), { store, tenantId })
    expect((await sql<{ one: number }>`select 1 as one`.execute(t.db)).rows).toEqual([{ one: 1 }])
    expect(await store.forTenant(tenantId).count()).toBe(1)
  })
})
