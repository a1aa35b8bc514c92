import { beforeAll, beforeEach, expect, it } from 'vitest'
import { PgVectorStore } from '../../../src/index.js'
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
 * LangChain's standard vector-store tests, ported from Python `langchain-tests`
 * (`VectorStoreIntegrationTests`, libs/standard-tests/langchain_tests/integration_tests/vectorstores.py):
 * its 12 behaviours (the async twins are the same calls in JS), on `SyntheticEmbeddings({ vectorSize: 6 })`
 * where Python uses `DeterministicFakeEmbedding(size=6)`, and `getByIds` for `get_by_ids`. Python's
 * fixture yields an empty store per test: here each test gets a tenant of its own in one table,
 * which other tests' tenants share. Twice: through the store, and through a second embedding space
 * each tenant was migrated and switched to first (the adapter built from `activeTenant`, as
 * docs/store.md says an app does) — its writes then go through the space guard and its change log.
 */
const t = useTestDatabase()

const throughs = ['the store', 'a second embedding space (each tenant switched to it)'] as const
for (const through of throughs)
  describeUnless(LANGCHAIN_MISSING)(`LangChain VectorStoreIntegrationTests, ported — through ${through}`, () => {
    const spaced = through !== 'the store'
    let kit: LangChainKit
    let store: PgVectorStore
    let vectorStore: PgScaleVectorStore
    let tenants = 0

    const doc = (pageContent: string, metadata: Record<string, unknown>, id?: string) =>
      plain(new kit.Document({ pageContent, metadata, ...(id === undefined ? {} : { id }) }))

    beforeAll(async () => {
      kit = await loadLangChain()
      store = await PgVectorStore.open(t.db, {
        table: spaced ? 'lc_conformance_spaced' : 'lc_conformance',
        dimensions: SYNTHETIC_DIMENSIONS,
      })
      if (spaced) await store.addSpace({ name: 'next', dimensions: SYNTHETIC_DIMENSIONS })
    })

    beforeEach(async () => {
      const tenant = `tenant-${++tenants}`
      const embeddings = kit.synthetic()
      if (!spaced) {
        vectorStore = kit.adapter.PgScaleVectorStore.forTenant(store, tenant, embeddings)
        return
      }
      await store.migrateTenant(tenant, { to: 'next', embed: (texts) => embeddings.embedDocuments(texts), switch: true })
      const active = await store.activeTenant(tenant)
      expect(active.space).toBe('next')
      vectorStore = kit.adapter.PgScaleVectorStore.forTenant(active.store, tenant, embeddings)
    })

    const fooBar = () => [
      new kit.Document({ pageContent: 'foo', metadata: { id: 1 } }),
      new kit.Document({ pageContent: 'bar', metadata: { id: 2 } }),
    ]

    it('1. a new store is empty', async () => {
      expect(await vectorStore.similaritySearch('foo', 1)).toEqual([])
    })

    it('2. add documents without ids: found nearest first, with their generated ids; the input documents are not changed', async () => {
      const documents = fooBar()
      const before = documents.map((d) => ({ ...d, metadata: { ...d.metadata } }))
      const ids = await vectorStore.addDocuments(documents)
      expect(ids).toHaveLength(2)
      for (const id of ids) expect(typeof id).toBe('string')
      expect((await vectorStore.similaritySearch('bar', 2)).map(plain)).toEqual([
        doc('bar', { id: 2 }, ids[1]),
        doc('foo', { id: 1 }, ids[0]),
      ])
      expect(documents.map((d) => ({ ...d }))).toEqual(before)
      for (const d of documents) expect(d.id).toBeUndefined()
    })

    it('3. the store is still empty: nothing of the other tests is seen', async () => {
      expect(await vectorStore.similaritySearch('foo', 1)).toEqual([])
      expect(await vectorStore.similaritySearch('bar', 4)).toEqual([])
    })

    it('4. delete one document by id', async () => {
      expect(await vectorStore.addDocuments(fooBar(), { ids: ['1', '2'] })).toEqual(['1', '2'])
      await vectorStore.delete({ ids: ['1'] })
      expect((await vectorStore.similaritySearch('foo', 1)).map(plain)).toEqual([doc('bar', { id: 2 }, '2')])
    })

    it('5. delete documents in bulk', async () => {
      const documents = [...fooBar(), new kit.Document({ pageContent: 'baz', metadata: { id: 3 } })]
      expect(await vectorStore.addDocuments(documents, { ids: ['1', '2', '3'] })).toEqual(['1', '2', '3'])
      await vectorStore.delete({ ids: ['1', '2'] })
      expect((await vectorStore.similaritySearch('foo', 1)).map(plain)).toEqual([doc('baz', { id: 3 }, '3')])
    })

    it('6. deleting ids that are not there is no error', async () => {
      await vectorStore.delete({ ids: ['1'] })
      await vectorStore.delete({ ids: ['1', '2', '3'] })
      expect(await vectorStore.similaritySearch('foo', 1)).toEqual([])
    })

    it('7. adding the same documents with the same ids twice keeps one of each', async () => {
      await vectorStore.addDocuments(fooBar(), { ids: ['1', '2'] })
      await vectorStore.addDocuments(fooBar(), { ids: ['1', '2'] })
      expect((await vectorStore.similaritySearch('bar', 2)).map(plain)).toEqual([doc('bar', { id: 2 }, '2'), doc('foo', { id: 1 }, '1')])
      expect(await vectorStore.tenant.count()).toBe(2)
    })

    it('8. adding an existing id overwrites its content and metadata', async () => {
      await vectorStore.addDocuments(fooBar(), { ids: ['1', '2'] })
      const replacement = new kit.Document({ pageContent: 'new foo', metadata: { id: 1, some_other_field: 'foo' } })
      expect(await vectorStore.addDocuments([replacement], { ids: ['1'] })).toEqual(['1'])
      expect((await vectorStore.similaritySearch('new foo', 2)).map(plain)).toEqual([
        doc('new foo', { id: 1, some_other_field: 'foo' }, '1'),
        doc('bar', { id: 2 }, '2'),
      ])
    })

    it('9. getByIds returns the documents with their ids', async () => {
      expect(await vectorStore.addDocuments(fooBar(), { ids: ['1', '2'] })).toEqual(['1', '2'])
      // Python's newer suite sorts by id; pgscale returns them in the order of the ids asked for.
      expect((await vectorStore.getByIds(['1', '2'])).map(plain)).toEqual([doc('foo', { id: 1 }, '1'), doc('bar', { id: 2 }, '2')])
      expect((await vectorStore.getByIds(['2', '1'])).map((d) => d.id)).toEqual(['2', '1'])
    })

    it('10. getByIds of ids that are not there is [] (no error)', async () => {
      expect(await vectorStore.getByIds(['1', '2', '3'])).toEqual([])
      expect(await vectorStore.getByIds([])).toEqual([])
    })

    it('11. documents added without ids get string ids that getByIds finds', async () => {
      const ids = await vectorStore.addDocuments(fooBar())
      expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true)
      expect((await vectorStore.getByIds(ids)).map(plain)).toEqual([doc('foo', { id: 1 }, ids[0]), doc('bar', { id: 2 }, ids[1])])
    })

    it('12. a Document.id is honoured when no ids are passed', async () => {
      const documents = [
        new kit.Document({ pageContent: 'foo', metadata: { id: 1 }, id: 'foo' }),
        new kit.Document({ pageContent: 'bar', metadata: { id: 2 } }),
      ]
      const ids = await vectorStore.addDocuments(documents)
      expect(ids[0]).toBe('foo')
      expect(ids[1]).not.toBe('foo')
      expect((await vectorStore.getByIds(ids)).map(plain)).toEqual([doc('foo', { id: 1 }, 'foo'), doc('bar', { id: 2 }, ids[1])])
    })
  })
