import { beforeAll, beforeEach, expect, it } from 'vitest'
import { PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import {
  InMemoryRecordManager,
  LANGCHAIN_MISSING,
  loadLangChain,
  SYNTHETIC_DIMENSIONS,
  type LangChainKit,
  type PgScaleVectorStore,
} from './langchain-kit.js'

/**
 * `@langchain/core/indexing`'s `index()` end to end on the adapter: it calls only
 * `addDocuments(docs, { ids })` (new Documents without `id`, the ids UUIDv5 hashes of content and
 * metadata) and `delete({ ids })`. Re-runs skip what is unchanged, incremental cleanup deletes a
 * source's stale documents, full cleanup everything not seen, and `forceUpdate` rewrites in place.
 */
const t = useTestDatabase()
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describeUnless(LANGCHAIN_MISSING)('pgscale/langchain: the indexing API', () => {
  let kit: LangChainKit
  let store: PgVectorStore
  let vectorStore: PgScaleVectorStore
  let records: InMemoryRecordManager
  let tenants = 0

  beforeAll(async () => {
    kit = await loadLangChain()
    store = await PgVectorStore.open(t.db, { table: 'lc_indexing', dimensions: SYNTHETIC_DIMENSIONS })
  })

  beforeEach(() => {
    vectorStore = kit.adapter.PgScaleVectorStore.forTenant(store, `tenant-${++tenants}`, kit.synthetic())
    records = new InMemoryRecordManager()
  })

  const docs = (source: string, texts: string[]) => texts.map((pageContent) => new kit.Document({ pageContent, metadata: { source } }))
  const stored = async () => (await vectorStore.tenant.find({ limit: 100 })).rows.map((r) => `${r.metadata.source}: ${r.content}`).sort()

  it('a first run adds every document under the ids index() chose; a second run skips them all', async () => {
    const sources = [...docs('alpha', ['apples are red', 'bananas are yellow']), ...docs('beta', ['cherries are dark'])]
    const run = () =>
      kit.index({ docsSource: sources, recordManager: records, vectorStore, options: { cleanup: 'incremental', sourceIdKey: 'source' } })
    expect(await run()).toEqual({ numAdded: 3, numDeleted: 0, numUpdated: 0, numSkipped: 0 })
    const keys = [...records.records.keys()]
    expect(keys).toHaveLength(3)
    for (const key of keys) expect(key).toMatch(UUID)
    // The store holds exactly the record manager's keys, as document ids.
    expect((await vectorStore.getByIds(keys)).map((d) => d.id).sort()).toEqual([...keys].sort())
    expect(await vectorStore.tenant.count()).toBe(3)
    expect(await run()).toEqual({ numAdded: 0, numDeleted: 0, numUpdated: 0, numSkipped: 3 })
    expect(await vectorStore.tenant.count()).toBe(3)
  })

  it('incremental cleanup: a changed document of a source replaces its old version; other sources are untouched', async () => {
    const options = { cleanup: 'incremental' as const, sourceIdKey: 'source' }
    await kit.index({
      docsSource: [...docs('alpha', ['apples are red', 'bananas are yellow']), ...docs('beta', ['cherries are dark'])],
      recordManager: records,
      vectorStore,
      options,
    })
    const result = await kit.index({
      docsSource: docs('alpha', ['apples are green', 'bananas are yellow']),
      recordManager: records,
      vectorStore,
      options,
    })
    expect(result).toEqual({ numAdded: 1, numDeleted: 1, numUpdated: 0, numSkipped: 1 })
    expect(await stored()).toEqual(['alpha: apples are green', 'alpha: bananas are yellow', 'beta: cherries are dark'])
    expect(await vectorStore.getByIds([...records.records.keys()])).toHaveLength(3)
  })

  it('full cleanup deletes every document the run did not see', async () => {
    await kit.index({
      docsSource: [...docs('alpha', ['apples are red', 'bananas are yellow']), ...docs('beta', ['cherries are dark'])],
      recordManager: records,
      vectorStore,
    })
    const result = await kit.index({
      docsSource: docs('beta', ['cherries are dark', 'dates are sweet']),
      recordManager: records,
      vectorStore,
      options: { cleanup: 'full', cleanupBatchSize: 1 },
    })
    expect(result).toEqual({ numAdded: 1, numDeleted: 2, numUpdated: 0, numSkipped: 1 })
    expect(await stored()).toEqual(['beta: cherries are dark', 'beta: dates are sweet'])
  })

  it('forceUpdate rewrites the same ids in place: updated, never duplicated', async () => {
    const sources = docs('alpha', ['apples are red', 'bananas are yellow'])
    await kit.index({ docsSource: sources, recordManager: records, vectorStore })
    const result = await kit.index({ docsSource: sources, recordManager: records, vectorStore, options: { forceUpdate: true } })
    expect(result).toEqual({ numAdded: 0, numDeleted: 0, numUpdated: 2, numSkipped: 0 })
    expect(await vectorStore.tenant.count()).toBe(2)
  })

  it('the same record keys in two tenants: each tenant’s run writes and deletes its own rows only', async () => {
    const other = kit.adapter.PgScaleVectorStore.forTenant(store, `tenant-${++tenants}`, kit.synthetic())
    const otherRecords = new InMemoryRecordManager()
    const sources = docs('alpha', ['apples are red'])
    await kit.index({ docsSource: sources, recordManager: records, vectorStore, options: { cleanup: 'full' } })
    await kit.index({ docsSource: sources, recordManager: otherRecords, vectorStore: other, options: { cleanup: 'full' } })
    expect([...otherRecords.records.keys()]).toEqual([...records.records.keys()])
    await kit.index({ docsSource: [], recordManager: otherRecords, vectorStore: other, options: { cleanup: 'full' } })
    expect(await other.tenant.count()).toBe(0)
    expect(await stored()).toEqual(['alpha: apples are red'])
  })
})
