import { beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, matchesFilter, PgVectorStore, type Distance, type MetadataFilter } from '../../../src/index.js'
import { seededRandom } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { LANGCHAIN_MISSING, loadLangChain, SYNTHETIC_DIMENSIONS, type LangChainKit, type PgScaleVectorStore } from './langchain-kit.js'

/**
 * Searching through the adapter: pgscale's filters as LangChain's `FilterType` (the same rows as the
 * store's own semantics, `matchesFilter`), MMR and the retrievers built on the base class
 * (`asRetriever`, `searchType: 'mmr'`), and scores in the direction LangChain's thresholding
 * (`ScoreThresholdRetriever`) expects, under each distance.
 */
const t = useTestDatabase()

const KINDS = ['faq', 'blog', 'policy', 'memo']
const TAGS = ['red', 'green', 'blue']
const ROWS = 60

/** The 60 documents of the filter tests: metadata from a seed, random 6-d vectors. */
function filterRows(): Array<{ id: string; metadata: Record<string, unknown>; vector: number[] }> {
  const random = seededRandom('lc-filters')
  return Array.from({ length: ROWS }, (_, i) => {
    const metadata: Record<string, unknown> = {
      kind: KINDS[random.int(KINDS.length)]!,
      n: i,
      tags: TAGS.filter(() => random.next() < 0.4),
    }
    if (i % 10 === 3) metadata.owner = i % 20 === 3 ? 'ana' : null
    return { id: `row-${i}`, metadata, vector: Array.from({ length: SYNTHETIC_DIMENSIONS }, () => random.gaussian()) }
  })
}

const FILTERS: Array<[string, MetadataFilter]> = [
  ['$in', { kind: { $in: ['faq', 'policy'] } }],
  ['$or', { $or: [{ kind: 'memo' }, { n: { $lt: 5 } }] }],
  ['broad: every row', { n: { $gte: 0 } }],
  ['selective: one row', { n: 7 }],
  ['an array element', { tags: 'red' }],
  ['$nin and a range', { kind: { $nin: ['faq'] }, n: { $gte: 30 } }],
  ['$nor', { $nor: [{ kind: 'blog' }, { tags: { $size: 0 } }] }],
  ['null: null or missing', { owner: null }],
  ['$exists', { owner: { $exists: true } }],
  ['nothing', { kind: 'invoice' }],
]

describeUnless(LANGCHAIN_MISSING)('pgscale/langchain: searches', () => {
  let kit: LangChainKit

  beforeAll(async () => {
    kit = await loadLangChain()
  })

  describe('filters: pgscale’s language, the store’s semantics', () => {
    let vectorStore: PgScaleVectorStore
    const rows = filterRows()
    const query = rows[0]!.vector.map((x, i) => x + (i % 2 ? 0.3 : -0.2))

    beforeAll(async () => {
      const store = await PgVectorStore.open(t.db, { table: 'lc_filters', dimensions: SYNTHETIC_DIMENSIONS })
      vectorStore = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.synthetic())
      const documents = rows.map((r) => new kit.Document({ pageContent: `row ${r.id}`, metadata: r.metadata }))
      await vectorStore.addVectors(
        rows.map((r) => r.vector),
        documents,
        { ids: rows.map((r) => r.id) },
      )
    })

    it.each(FILTERS)('%s: the rows matchesFilter accepts, nearest first; the top 5 are the exact top 5', async (_name, filter) => {
      const expected = rows.filter((r) => matchesFilter(r.metadata, filter)).map((r) => r.id)
      const all = await vectorStore.similaritySearchVectorWithScore(query, ROWS, filter)
      expect(all.map(([doc]) => doc.id).sort()).toEqual([...expected].sort())
      const scores = all.map(([, score]) => score)
      expect(scores).toEqual([...scores].sort((a, b) => b - a))
      const top = await vectorStore.similaritySearchVectorWithScore(query, 5, filter)
      const exact = await vectorStore.tenant.exactSearch(query, { k: 5, filter })
      expect(top.map(([doc]) => doc.id)).toEqual(exact.map((h) => h.documentId))
      for (const [doc] of top) expect(matchesFilter(doc.metadata, filter)).toBe(true)
    })

    it('the retriever passes its filter to every search', async () => {
      const filter = { kind: { $in: ['faq', 'policy'] } }
      const docs = await vectorStore.asRetriever({ k: 50, filter }).invoke('row')
      expect(docs.length).toBe(rows.filter((r) => matchesFilter(r.metadata, filter)).length)
      for (const doc of docs) expect(['faq', 'policy']).toContain(doc.metadata.kind)
    })

    it('the community PGVectorStore dialect means what PGVectorStore means; a range of a non-number is refused', async () => {
      const ids = async (filter: Record<string, unknown>) =>
        (await vectorStore.similaritySearchVectorWithScore(query, ROWS, filter)).map(([d]) => d.id).sort()
      const where = (p: (m: Record<string, unknown>) => boolean) =>
        rows
          .filter((r) => p(r.metadata))
          .map((r) => r.id)
          .sort()
      expect(await ids({ kind: { in: ['faq'] } })).toEqual(where((m) => m.kind === 'faq'))
      expect(await ids({ n: { gte: 3, lt: 5 } })).toEqual(where((m) => (m.n as number) >= 3 && (m.n as number) < 5))
      // notIn: the owner there, not null, not 'ana' (rows without it are left out, as PGVectorStore's NOT IN does).
      expect(await ids({ owner: { notIn: ['ana'] } })).toEqual([])
      expect(await ids({ kind: { notIn: ['faq'] } })).toEqual(where((m) => m.kind !== 'faq'))
      // neq: missing and null included (PGVectorStore: IS NULL OR <>).
      expect(await ids({ owner: { neq: 'ana' } })).toEqual(where((m) => m.owner !== 'ana'))
      const err = await vectorStore.similaritySearchVectorWithScore(query, 5, { n: { gt: '3' } }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(InvalidArgumentError)
      expect((err as Error).message).toMatch(/takes a number/)
      // An equality with such an object is written with $eq (and matches nothing here).
      expect(await vectorStore.similaritySearchVectorWithScore(query, 5, { kind: { $eq: { in: ['faq'] } } })).toEqual([])
      // pgscale's own checks apply: unknown operators, and a string filter.
      await expect(vectorStore.similaritySearchVectorWithScore(query, 5, { n: { $regex: 'x' } })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      )
      await expect(vectorStore.similaritySearchVectorWithScore(query, 5, 'kind = faq' as never)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      )
    })

    it('delete({ filter }) deletes exactly the matching rows; {} is refused', async () => {
      const filter = { $and: [{ kind: 'memo' }, { n: { $gte: 40 } }] }
      const before = await vectorStore.tenant.count()
      const matching = rows.filter((r) => matchesFilter(r.metadata, filter)).map((r) => r.id)
      expect(matching.length).toBeGreaterThan(0)
      await vectorStore.delete({ filter })
      expect(await vectorStore.tenant.count()).toBe(before - matching.length)
      expect(await vectorStore.getByIds(matching)).toEqual([])
      await expect(vectorStore.delete({ filter: {} })).rejects.toBeInstanceOf(InvalidArgumentError)
      expect(await vectorStore.tenant.count()).toBe(before - matching.length)
    })
  })

  describe('MMR and the retrievers', () => {
    let vectorStore: PgScaleVectorStore

    beforeAll(async () => {
      const store = await PgVectorStore.open(t.db, { table: 'lc_angles', dimensions: 2 })
      vectorStore = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.angles())
      await vectorStore.addDocuments([
        new kit.Document({ pageContent: 'first 10°', metadata: { kind: 'a' }, id: 'first' }),
        new kit.Document({ pageContent: 'near duplicate 12°', metadata: { kind: 'a' }, id: 'near-duplicate' }),
        new kit.Document({ pageContent: 'diverse -40°', metadata: { kind: 'b' }, id: 'diverse' }),
        new kit.Document({ pageContent: 'far 100°', metadata: { kind: 'b' }, id: 'far' }),
      ])
      // Another tenant's chunk as near to the query as 'first': never a candidate.
      await store.forTenant('other').upsertChunks([{ id: 'theirs', content: '-10°', embedding: [Math.cos(0.17), -Math.sin(0.17)] }])
    })

    const ids = (docs: Array<{ id?: string }>) => docs.map((d) => d.id)

    it('maxMarginalRelevanceSearch passes over a near-duplicate for a diverse document; lambda 1 is relevance alone', async () => {
      expect(ids(await vectorStore.maxMarginalRelevanceSearch('0°', { k: 2 }))).toEqual(['first', 'diverse'])
      expect(ids(await vectorStore.maxMarginalRelevanceSearch('0°', { k: 2, lambda: 1 }))).toEqual(['first', 'near-duplicate'])
      expect(ids(await vectorStore.maxMarginalRelevanceSearch('0°', { k: 3, fetchK: 4, lambda: 0.5 }))).toEqual([
        'first',
        'diverse',
        'near-duplicate',
      ])
      expect(ids(await vectorStore.maxMarginalRelevanceSearch('0°', { k: 2, filter: { kind: 'b' } }))).toEqual(['diverse', 'far'])
      // As LangChain's other stores: no more than fetchK documents.
      expect(ids(await vectorStore.maxMarginalRelevanceSearch('0°', { k: 3, fetchK: 2 }))).toEqual(['first', 'near-duplicate'])
      const [first] = await vectorStore.maxMarginalRelevanceSearch('0°', { k: 1 })
      expect(first?.pageContent).toBe('first 10°')
      expect(first?.metadata).toEqual({ kind: 'a' })
    })

    it('asRetriever: similarity by default (k as a number or in the fields), mmr with searchType, tagged pgscale', async () => {
      expect(ids(await vectorStore.asRetriever(2).invoke('0°'))).toEqual(['first', 'near-duplicate'])
      expect(ids(await vectorStore.asRetriever({ k: 2 }).invoke('0°'))).toEqual(['first', 'near-duplicate'])
      expect(ids(await vectorStore.asRetriever().invoke('0°'))).toEqual(['first', 'near-duplicate', 'diverse', 'far'])
      const mmr = vectorStore.asRetriever({ searchType: 'mmr', k: 2, searchKwargs: { fetchK: 4, lambda: 0.5 } })
      expect(ids(await mmr.invoke('0°'))).toEqual(['first', 'diverse'])
      expect(ids(await vectorStore.asRetriever({ searchType: 'mmr', k: 2, filter: { kind: 'b' } }).invoke('0°'))).toEqual([
        'diverse',
        'far',
      ])
      expect(mmr.tags).toContain('pgscale')
    })
  })

  describe('scores: a similarity, higher is nearer, under every distance', () => {
    const angles = [10, 12, -40, 100]
    const cos = (degrees: number) => Math.cos((degrees * Math.PI) / 180)
    const stores: Partial<Record<Distance, PgScaleVectorStore>> = {}

    beforeAll(async () => {
      for (const distance of ['cosine', 'inner_product', 'l2'] as const) {
        const store = await PgVectorStore.open(t.db, { table: `lc_scores_${distance}`, dimensions: 2, distance })
        stores[distance] = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.angles())
        await stores[distance].addDocuments(angles.map((a) => new kit.Document({ pageContent: `${a}°`, metadata: {}, id: `at-${a}` })))
      }
    })

    it('cosine: 1 − distance, the cosine similarity (1 for the same direction)', async () => {
      const hits = await stores.cosine!.similaritySearchWithScore('0°', 4)
      expect(hits.map(([doc]) => doc.id)).toEqual(['at-10', 'at-12', 'at--40', 'at-100'])
      hits.forEach(([, score], i) => expect(score).toBeCloseTo(cos(angles[i]!), 5))
      const [[, same]] = (await stores.cosine!.similaritySearchWithScore('12°', 1)) as [[unknown, number]]
      expect(same).toBeCloseTo(1, 6)
    })

    it('inner product: the inner product (the cosine on unit vectors); l2: 1 / (1 + distance)', async () => {
      const ip = await stores.inner_product!.similaritySearchWithScore('0°', 4)
      expect(ip.map(([doc]) => doc.id)).toEqual(['at-10', 'at-12', 'at--40', 'at-100'])
      ip.forEach(([, score], i) => expect(score).toBeCloseTo(cos(angles[i]!), 5))
      const l2 = await stores.l2!.similaritySearchWithScore('0°', 4)
      expect(l2.map(([doc]) => doc.id)).toEqual(['at-10', 'at-12', 'at--40', 'at-100'])
      l2.forEach(([, score], i) => expect(score).toBeCloseTo(1 / (1 + Math.sqrt(2 - 2 * cos(angles[i]!))), 5))
      for (const hits of [ip, l2]) expect(hits.map(([, s]) => s)).toEqual(hits.map(([, s]) => s).sort((a, b) => b - a))
    })

    it("LangChain's ScoreThresholdRetriever keeps the documents at or above minSimilarityScore", async () => {
      // @langchain/classic comes with @langchain/community (the example app's dependency): loaded by name, typed here.
      const specifier = '@langchain/classic/retrievers/score_threshold'
      const { ScoreThresholdRetriever } = (await import(/* @vite-ignore */ specifier)) as {
        ScoreThresholdRetriever: {
          fromVectorStore(
            vectorStore: PgScaleVectorStore,
            options: { minSimilarityScore: number; maxK?: number; kIncrement?: number },
          ): { invoke(query: string): Promise<Array<{ id?: string }>> }
        }
      }
      for (const distance of ['cosine', 'inner_product', 'l2'] as const) {
        const min = distance === 'l2' ? 1 / (1 + Math.sqrt(2 - 2 * cos(30))) : cos(30)
        const retriever = ScoreThresholdRetriever.fromVectorStore(stores[distance]!, { minSimilarityScore: min, maxK: 10, kIncrement: 1 })
        expect((await retriever.invoke('0°')).map((d) => d.id)).toEqual(['at-10', 'at-12'])
      }
    })

    it("scoreNormalization: 'distance' returns the store's distance, lower is nearer", async () => {
      const store = await PgVectorStore.open(t.db, { table: 'lc_scores_cosine', dimensions: 2 })
      const distances = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.angles(), { scoreNormalization: 'distance' })
      const hits = await distances.similaritySearchWithScore('0°', 4)
      hits.forEach(([, score], i) => expect(score).toBeCloseTo(1 - cos(angles[i]!), 5))
      expect(() => kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.angles(), { scoreNormalization: 'cos' as never })).toThrow(
        InvalidArgumentError,
      )
    })
  })
})
