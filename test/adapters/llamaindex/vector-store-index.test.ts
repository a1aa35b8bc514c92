import { beforeAll, expect, it } from 'vitest'
import type { MetadataFilters } from '@llamaindex/core/vector-store'
import { PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { LLAMAINDEX_MISSING, loadLlamaIndex, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * The adapter driven by LlamaIndex.TS itself (llamaindex 0.12.1), with no LLM and no embedding
 * service: `VectorStoreIndex.fromVectorStore`, `insertNodes` and `insert` (documents split by
 * LlamaIndex's sentence splitter, embedded by a deterministic BaseEmbedding), `asRetriever`
 * (filters, modes), `asQueryEngine` with `MockLLM`, and `deleteRefDoc`.
 */
const t = useTestDatabase()
const DIM = 64

const DOCUMENTS = [
  {
    id: 'cats',
    metadata: { topic: 'pets', year: 2023 },
    text:
      'Cats purr when they are content and warm. Cats sleep for most of the day in sunny spots by the window. ' +
      'Cats hunt small birds and mice at dawn and at dusk. Cats groom their fur with rough tongues after every meal. ' +
      'Cats climb shelves, curtains and trees to watch the room from above. Cats knead soft blankets before they settle down. ' +
      'Cats chase string, feathers and shadows on the wall. Cats drink little water when they eat wet food. ' +
      'Cats scratch posts to keep their claws sharp and short. Cats greet their people by rubbing against their legs.',
  },
  {
    id: 'taxes',
    metadata: { topic: 'finance', year: 2024 },
    text:
      'Taxes are due in April for most households in the country. Tax forms list income, deductions and credits line by line. ' +
      'Late taxes incur penalties and interest that grow every month. Receipts for deductions should be kept for several years. ' +
      'Taxes on savings are withheld by the bank before interest is paid out. Refunds of overpaid taxes arrive a few weeks after filing.',
  },
  { id: 'dogs', metadata: { topic: 'pets', year: 2024 }, text: 'Dogs bark at strangers. Dogs fetch sticks in the park.' },
]

describeUnless(LLAMAINDEX_MISSING)('VectorStoreIndex over PgScaleVectorStore', () => {
  let kit: LlamaIndexKit
  let vectorStore: PgScaleVectorStore
  let index: Awaited<ReturnType<LlamaIndexKit['llamaindex']['VectorStoreIndex']['fromVectorStore']>>

  const refDocs = (nodes: Array<{ node: { sourceNode?: { nodeId: string } } }>) => nodes.map((n) => n.node.sourceNode?.nodeId)
  const finance: MetadataFilters = { filters: [{ key: 'topic', operator: '==', value: 'finance' }] }

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    const { Settings, VectorStoreIndex } = kit.llamaindex
    Settings.embedModel = kit.hashEmbedding(DIM)
    Settings.llm = new kit.MockLLM({ responseMessage: 'mock answer' })
    const store = await PgVectorStore.open(t.db, { table: 'li_index', dimensions: DIM })
    vectorStore = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme') // embedModel: Settings.embedModel
    index = await VectorStoreIndex.fromVectorStore(vectorStore)
    const documents = DOCUMENTS.map((d) => new kit.schema.Document({ id_: d.id, text: d.text, metadata: d.metadata }))
    // Two documents split small by LlamaIndex's sentence splitter (several nodes each), one through
    // insert (Settings' splitter: one node).
    const splitter = new kit.SentenceSplitter({ chunkSize: 64, chunkOverlap: 0 })
    await index.insertNodes(splitter.getNodesFromDocuments(documents.slice(0, 2)))
    await index.insert(documents[2]!)
  })

  it('insert splits a document into nodes, each a row of the tenant under the document’s ref doc id', async () => {
    const tenant = vectorStore.client()
    expect(await tenant.count({ ref_doc_id: 'cats' })).toBeGreaterThan(1)
    expect(await tenant.count({ ref_doc_id: 'taxes' })).toBeGreaterThan(1)
    expect(await tenant.count()).toBe(
      (await tenant.count({ ref_doc_id: 'cats' })) +
        (await tenant.count({ ref_doc_id: 'taxes' })) +
        (await tenant.count({ ref_doc_id: 'dogs' })),
    )
    const { rows } = await tenant.find({ filter: { ref_doc_id: 'cats' } })
    expect(rows.every((r) => r.content.includes('Cats') && r.metadata.topic === 'pets')).toBe(true)
  })

  it('asRetriever retrieves the nearest nodes with their scores (1 − cosine distance), nearest first', async () => {
    const hits = await index.asRetriever({ similarityTopK: 3 }).retrieve('cats purr')
    expect(hits).toHaveLength(3)
    expect(refDocs(hits)).toEqual(['cats', 'cats', 'cats'])
    const scores = hits.map((h) => h.score!)
    expect([...scores].sort((a, b) => b - a)).toEqual(scores)
    for (const s of scores) {
      expect(s).toBeGreaterThan(0)
      expect(s).toBeLessThanOrEqual(1 + 1e-9)
    }
    expect((hits[0]!.node as { text?: string }).text).toContain('Cats purr')
  })

  it('asRetriever with filters: only the nodes that match', async () => {
    const hits = await index.asRetriever({ similarityTopK: 10, filters: finance }).retrieve('cats purr')
    expect(new Set(refDocs(hits))).toEqual(new Set(['taxes']))
    const recent = await index
      .asRetriever({
        similarityTopK: 10,
        filters: {
          filters: [
            { key: 'year', operator: '>=', value: 2024 },
            { key: 'topic', operator: 'in', value: ['pets'] },
          ],
        },
      })
      .retrieve('animals')
    expect(new Set(refDocs(recent))).toEqual(new Set(['dogs']))
  })

  it('asRetriever in MMR and hybrid mode', async () => {
    const { MMR, HYBRID } = kit.vectorStore.VectorStoreQueryMode
    const mmr = await index.asRetriever({ similarityTopK: 2, mode: MMR }).retrieve('cats purr')
    expect(mmr).toHaveLength(2)
    expect(refDocs(mmr)[0]).toBe('cats')
    // Hybrid: the retriever sends the query text with its embedding; the words find the tax nodes.
    const hybrid = await index.asRetriever({ similarityTopK: 2, mode: HYBRID }).retrieve('penalties interest')
    expect(refDocs(hybrid)).toContain('taxes')
  })

  it('asQueryEngine answers with the MockLLM over the retrieved (pre-filtered) nodes', async () => {
    const response = await index.asQueryEngine({ similarityTopK: 2, preFilters: finance }).query({ query: 'when are taxes due?' })
    expect(response.message.content).toBe('mock answer')
    expect(response.sourceNodes?.length).toBe(2)
    expect(new Set(refDocs(response.sourceNodes ?? []))).toEqual(new Set(['taxes']))
  })

  it('another index over the same adapter reads the same rows: the store is the state', async () => {
    const again = await kit.llamaindex.VectorStoreIndex.fromVectorStore(vectorStore)
    expect(refDocs(await again.asRetriever({ similarityTopK: 1 }).retrieve('dogs bark'))).toEqual(['dogs'])
  })

  it('deleteRefDoc(id, false) deletes every node of the document, and only those', async () => {
    const tenant = vectorStore.client()
    const before = await tenant.count()
    const cats = await tenant.count({ ref_doc_id: 'cats' })
    await index.deleteRefDoc('cats', false)
    expect(await tenant.count({ ref_doc_id: 'cats' })).toBe(0)
    expect(await tenant.count()).toBe(before - cats)
    expect(refDocs(await index.asRetriever({ similarityTopK: 10 }).retrieve('cats purr'))).not.toContain('cats')
    // With deleteFromDocStore (the default), LlamaIndex also deletes from its document store, which
    // holds nothing for a store that keeps the text, and throws there: after the rows are deleted.
    await expect(index.deleteRefDoc('dogs')).rejects.toThrow()
    expect(await tenant.count({ ref_doc_id: 'dogs' })).toBe(0)
    expect(await tenant.count({ ref_doc_id: 'taxes' })).toBeGreaterThan(1)
  })
})
