import { sql, type Transaction } from 'kysely'
import { beforeAll, beforeEach, expect, it } from 'vitest'
import type { VectorStoreQuery } from '@llamaindex/core/vector-store'
import { DimensionMismatchError, InvalidArgumentError, PgScaleError, PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { axisVector } from '../../support/vectors.js'
import { allIds, LLAMAINDEX_MISSING, loadLlamaIndex, plainNodes, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * The adapter as a LlamaIndex.TS `BaseVectorStore`, against SimpleVectorStore (LlamaIndex's
 * reference store, llamaindex 0.12.1) on the same nodes where both answer: add, query, ref-doc
 * deletes, re-adding an id, the empty store, docIds, the modes, dimensions, and the adapter's own
 * refusals. Each test has a tenant of its own in one table.
 */
const t = useTestDatabase()
const DIM = 8
const TABLE = 'li_conformance'
const vec = (axis: number, tilt = 0) => axisVector(DIM, axis, tilt)

describeUnless(LLAMAINDEX_MISSING)('PgScaleVectorStore as a LlamaIndex.TS BaseVectorStore', () => {
  let kit: LlamaIndexKit
  let store: PgVectorStore
  let pg: PgScaleVectorStore
  let tenants = 0

  /** The query LlamaIndex's retriever sends: default mode, an embedding, top k. */
  const q = (queryEmbedding: number[], extra: Partial<VectorStoreQuery<any>> = {}): VectorStoreQuery<any> => ({
    queryEmbedding,
    similarityTopK: 10,
    mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT,
    ...extra,
  })

  /** Nodes of two source documents and one without a source. */
  const corpus = () => [
    kit.node('a1', '  Cats purr.\n', vec(0), { kind: 'pet', n: 1 }, 'doc-a'),
    kit.node('a2', 'Cats sleep', vec(0, 0.5), { kind: 'pet', n: 2 }, 'doc-a'),
    kit.node('a3', 'Cats hunt', vec(1), { kind: 'wild', n: 3 }, 'doc-a'),
    kit.node('b1', 'Tax forms', vec(2), { kind: 'finance', n: 4 }, 'doc-b'),
    kit.node('b2', 'Tax dates', vec(3), { kind: 'finance', n: 5 }, 'doc-b'),
    kit.node('loose', 'A note', vec(4), { kind: 'note', n: 6 }),
  ]

  /** SimpleVectorStore holding the same nodes. */
  async function reference() {
    const simple = new kit.llamaindex.SimpleVectorStore({ embedModel: kit.hashEmbedding(DIM) })
    await simple.add(corpus())
    return simple
  }

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: DIM })
  })

  beforeEach(() => {
    pg = kit.adapter.PgScaleVectorStore.forTenant(store, `tenant-${++tenants}`, { embedModel: kit.hashEmbedding(DIM) })
  })

  it('is a BaseVectorStore that stores text, bound to its tenant; client() is the tenant handle', () => {
    expect(pg).toBeInstanceOf(kit.vectorStore.BaseVectorStore)
    expect(pg.storesText).toBe(true)
    expect(pg.tenantId).toBe(`tenant-${tenants}`)
    expect(pg.client().tenantId).toBe(pg.tenantId)
  })

  it('an empty store answers every mode with nothing', async () => {
    const { MMR, HYBRID } = kit.vectorStore.VectorStoreQueryMode
    const filters = { filters: [{ key: 'kind', operator: '==' as const, value: 'pet' }] }
    for (const extra of [{}, { filters }, { mode: MMR }, { mode: HYBRID, queryStr: 'cats' }, { docIds: ['a1'] }]) {
      expect(await pg.query(q(vec(0), extra))).toEqual({ nodes: [], similarities: [], ids: [] })
    }
    await pg.delete('doc-a') // nothing to delete: no error
  })

  it('add returns the node ids; query returns the nodes rebuilt, nearest first, as SimpleVectorStore ranks them', async () => {
    const input = corpus()
    const before = input.map((n) => JSON.stringify(n.toMutableJSON()))
    expect(await pg.add(input)).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'loose'])
    expect(input.map((n) => JSON.stringify(n.toMutableJSON()))).toEqual(before) // the caller's nodes are not changed
    const simple = await reference()
    for (const axis of [0, 1, 3]) {
      const [ours, theirs] = await Promise.all([
        pg.query(q(vec(axis, 0.2), { similarityTopK: 4 })),
        simple.query(q(vec(axis, 0.2), { similarityTopK: 4 })),
      ])
      expect(ours.ids).toEqual(theirs.ids)
      ours.similarities.forEach((s, i) => expect(s).toBeCloseTo(theirs.similarities[i]!, 6))
    }
    const result = await pg.query(q(vec(0), { similarityTopK: 2 }))
    expect(result.ids).toEqual(['a1', 'a2'])
    expect(result.similarities[0]).toBeCloseTo(1, 6) // 1 − cosine distance: the same direction
    expect(result.similarities[1]).toBeCloseTo(1 / Math.sqrt(1.25), 6)
    expect(plainNodes(result)).toEqual([
      { id: 'a1', text: '  Cats purr.\n', metadata: { kind: 'pet', n: 1 }, refDocId: 'doc-a' },
      { id: 'a2', text: 'Cats sleep', metadata: { kind: 'pet', n: 2 }, refDocId: 'doc-a' },
    ])
    expect(result.nodes![0]).toBeInstanceOf(kit.schema.TextNode)
    const [loose] = (await pg.query(q(vec(4), { similarityTopK: 1 }))).nodes!
    expect(loose!.sourceNode).toBeUndefined()
    expect(loose!.metadata).toEqual({ kind: 'note', n: 6 })
  })

  it('re-adding a node id replaces it whole (text, metadata, embedding): never a duplicate', async () => {
    await pg.add(corpus())
    expect(await pg.add([kit.node('a1', 'Cats purr loudly', vec(5), { kind: 'loud' }, 'doc-c')])).toEqual(['a1'])
    expect(await pg.client().count()).toBe(6)
    const result = await pg.query(q(vec(5), { similarityTopK: 1 }))
    expect(plainNodes(result)).toEqual([{ id: 'a1', text: 'Cats purr loudly', metadata: { kind: 'loud' }, refDocId: 'doc-c' }])
    expect((await pg.query(q(vec(0), { similarityTopK: 1 }))).ids).toEqual(['a2'])
    // The same id twice in one call: the last one wins, once.
    await pg.add([kit.node('x', 'first', vec(6)), kit.node('x', 'second', vec(6))])
    expect(plainNodes(await pg.query(q(vec(6), { similarityTopK: 5, docIds: ['x'] })))).toEqual([{ id: 'x', text: 'second', metadata: {} }])
  })

  it('delete(refDocId) removes every node of that source document, and only those: SimpleVectorStore’s meaning', async () => {
    await pg.add(corpus())
    const simple = await reference()
    for (const refDocId of ['doc-a', 'None', 'a1', 'doc-missing']) {
      await pg.delete(refDocId)
      await simple.delete(refDocId)
      expect(await allIds(pg, q(vec(0)))).toEqual(await allIds(simple, q(vec(0))))
    }
    expect(await allIds(pg, q(vec(0)))).toEqual(['b1', 'b2', 'loose'])
    // The node ids of a document are not ref doc ids: delete('a1') above removed nothing.
    await pg.delete('doc-b')
    expect(await allIds(pg, q(vec(0)))).toEqual(['loose'])
  })

  it('inside an app transaction: add and delete commit or roll back with it', async () => {
    const tenantId = `tenant-${++tenants}`
    const inTx = (trx: Transaction<any>) =>
      kit.adapter.PgScaleVectorStore.forTenant(store, tenantId, { embedModel: kit.hashEmbedding(DIM), transaction: trx })
    const outside = kit.adapter.PgScaleVectorStore.forTenant(store, tenantId, { embedModel: kit.hashEmbedding(DIM) })
    await t.db.transaction().execute(async (trx) => {
      await inTx(trx).add(corpus())
    })
    const failed = await t.db
      .transaction()
      .execute(async (trx) => {
        await inTx(trx).delete('doc-a')
        expect(await inTx(trx).client().count()).toBe(3)
        throw new Error('the app rolls back')
      })
      .catch((e: Error) => e.message)
    expect(failed).toBe('the app rolls back')
    expect(await allIds(outside, q(vec(0)))).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'loose'])
  })

  it('add is all or nothing: a node without an embedding or of other dimensions is a typed error, nothing is written', async () => {
    const bare = kit.node('bare', 'no vector', vec(0))
    bare.embedding = undefined
    for (const bad of [bare, kit.node('short', 'too short', [1, 0, 0])]) {
      const err = await pg.add([kit.node('ok', 'fine', vec(1)), bad]).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(bad === bare ? InvalidArgumentError : DimensionMismatchError)
    }
    expect(await pg.client().count()).toBe(0)
    expect(await pg.add([])).toEqual([])
  })

  it('a query of other dimensions, or with no embedding and no text, is a typed error', async () => {
    await pg.add(corpus())
    await expect(pg.query(q([1, 0, 0]))).rejects.toBeInstanceOf(DimensionMismatchError)
    await expect(pg.query(q(vec(0), { docIds: ['a1'], queryEmbedding: [1, 2] }))).rejects.toBeInstanceOf(DimensionMismatchError)
    await expect(pg.query({ similarityTopK: 2, mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
  })

  it('queryStr without queryEmbedding is embedded with the adapter’s embedModel', async () => {
    const words = kit.hashEmbedding(DIM)
    await pg.add([kit.node('w', 'purring cats', await words.getTextEmbedding('purring cats')), kit.node('v', 'other', vec(3))])
    const result = await pg.query({ queryStr: 'purring cats', similarityTopK: 1, mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT })
    expect(result.ids).toEqual(['w'])
    expect(result.similarities[0]).toBeCloseTo(1, 6)
  })

  it('docIds: only those node ids (an absent one ignored), with filters and in MMR, as SimpleVectorStore answers', async () => {
    await pg.add(corpus())
    const simple = await reference()
    const { MMR } = kit.vectorStore.VectorStoreQueryMode
    const pet = { filters: [{ key: 'kind', operator: '==' as const, value: 'pet' }] }
    for (const extra of [
      { docIds: ['a1', 'b2', 'nope'] },
      { docIds: ['a1', 'a2', 'a3', 'b1'], filters: pet },
      { docIds: ['a1', 'a2', 'a3', 'b1'], similarityTopK: 2 },
      { docIds: ['a1', 'a2', 'a3'], mode: MMR, similarityTopK: 2, mmrThreshold: 0.5 },
      { docIds: [] },
    ]) {
      const [ours, theirs] = await Promise.all([pg.query(q(vec(0, 0.3), extra)), simple.query(q(vec(0, 0.3), extra))])
      expect(ours.ids).toEqual(theirs.ids)
    }
    const hits = await pg.query(q(vec(0), { docIds: ['b1', 'a1'] }))
    expect(hits.ids).toEqual(['a1', 'b1'])
    expect(hits.similarities[0]).toBeCloseTo(1, 6)
    expect(plainNodes(hits)[0]).toEqual({ id: 'a1', text: '  Cats purr.\n', metadata: { kind: 'pet', n: 1 }, refDocId: 'doc-a' })
  })

  it('mmr: picks as SimpleVectorStore does at its lambda 0.5; mmrThreshold is the lambda (1 relevance, 0 diversity)', async () => {
    const { MMR } = kit.vectorStore.VectorStoreQueryMode
    // A near-duplicate of the best hit, and a farther but different one.
    const nodes = [
      kit.node('best', 'best', [1, 0.05, 0, 0, 0, 0, 0, 0], {}, 'd'),
      kit.node('twin', 'twin', [1, 0.06, 0, 0, 0, 0, 0, 0], {}, 'd'),
      kit.node('other', 'other', [1, -0.9, 0, 0, 0, 0, 0, 0], {}, 'd'),
    ]
    await pg.add(nodes)
    const simple = new kit.llamaindex.SimpleVectorStore({ embedModel: kit.hashEmbedding(DIM) })
    await simple.add(nodes)
    const query = q(vec(0), { mode: MMR, similarityTopK: 2 })
    // SimpleVectorStore (llamaindex 0.12.1) hands mmrThreshold to getTopKMMREmbeddings in the
    // similarityCutoff slot: its lambda is always 0.5. Both agree there.
    for (const mmrThreshold of [undefined, 0.5]) {
      const [ours, theirs] = await Promise.all([pg.query({ ...query, mmrThreshold }), simple.query({ ...query, mmrThreshold })])
      expect(ours.ids).toEqual(theirs.ids)
      expect(ours.ids).toEqual(['best', 'other'])
    }
    expect((await pg.query({ ...query, mmrThreshold: 1 })).ids).toEqual(['best', 'twin'])
    expect((await pg.query({ ...query, mmrThreshold: 0.2 })).ids).toEqual(['best', 'other'])
    const scored = await pg.query({ ...query, customParams: { mmrFetchK: 3 } })
    expect(scored.similarities[1]).toBeCloseTo(1 / Math.sqrt(1.81), 5) // the hit's own similarity, not its MMR score
  })

  it('hybrid: the vector and full-text lists fused by reciprocal rank; needs queryStr; alpha and docIds are refused', async () => {
    const { HYBRID } = kit.vectorStore.VectorStoreQueryMode
    await pg.add(corpus())
    // The words name b2 ("Tax dates"); the vector is nearest a1: both come first, before the rest.
    const result = await pg.query(q(vec(0), { mode: HYBRID, queryStr: 'tax dates', similarityTopK: 3 }))
    expect(result.ids.slice(0, 2).sort()).toEqual(['a1', 'b2'])
    expect(result.similarities[result.ids.indexOf('a1')]).toBeCloseTo(1, 6)
    for (const extra of [
      { queryStr: undefined },
      { queryStr: '  ' },
      { queryStr: 'tax', alpha: 0.5 },
      { queryStr: 'tax', docIds: ['b1'] },
    ]) {
      await expect(pg.query(q(vec(0), { mode: HYBRID, ...extra }))).rejects.toBeInstanceOf(InvalidArgumentError)
    }
  })

  it('modes pgscale does not serve are refused with a typed error, as are bad query fields', async () => {
    await pg.add(corpus())
    const { SPARSE, SVM, LOGISTIC_REGRESSION, LINEAR_REGRESSION, SEMANTIC_HYBRID } = kit.vectorStore.VectorStoreQueryMode
    for (const mode of [SPARSE, SVM, LOGISTIC_REGRESSION, LINEAR_REGRESSION, SEMANTIC_HYBRID]) {
      await expect(pg.query(q(vec(0), { mode }))).rejects.toThrow(InvalidArgumentError)
    }
    for (const extra of [
      { similarityTopK: -1 },
      { similarityTopK: 1001 },
      { similarityTopK: 2.5 },
      { mmrThreshold: 1.5, mode: kit.vectorStore.VectorStoreQueryMode.MMR },
      { docIds: 'a1' as unknown as string[] },
      { customParams: { ef: 10 } },
      { customParams: { efSearch: 0 } },
      { customParams: { efSearch: 2.5 } },
      { customParams: { mmrFetchK: 5 }, similarityTopK: 6 },
      { customParams: { mmrFetchK: -1 }, docIds: ['a1'], mode: kit.vectorStore.VectorStoreQueryMode.MMR },
    ]) {
      await expect(pg.query(q(vec(0), extra))).rejects.toBeInstanceOf(InvalidArgumentError)
    }
    await expect(pg.delete('')).rejects.toBeInstanceOf(InvalidArgumentError)
    // similarityTopK 0 answers nothing, like SimpleVectorStore; customParams efSearch is the query's ef_search.
    expect((await pg.query(q(vec(0), { similarityTopK: 0 }))).ids).toEqual([])
    expect((await pg.query(q(vec(0), { similarityTopK: 1, customParams: { efSearch: 200 } }))).ids).toEqual(['a1'])
  })

  it('rows written without the adapter are read as TextNodes: id = document id (document#chunk past the first)', async () => {
    const tenant = pg.client()
    await tenant.replaceDocument('report', [
      { content: 'part one', embedding: vec(6), metadata: { source: 'pdf' } },
      { content: 'part two', embedding: vec(6, 0.1), metadata: { source: 'pdf' } },
    ])
    const result = await pg.query(q(vec(6), { similarityTopK: 2 }))
    expect(plainNodes(result)).toEqual([
      { id: 'report', text: 'part one', metadata: { source: 'pdf' } },
      { id: 'report#1', text: 'part two', metadata: { source: 'pdf' } },
    ])
  })

  it('forTenant refuses a store of another distance than cosine, something not a store, a bad tenant id: typed errors', async () => {
    const embedModel = kit.hashEmbedding(DIM)
    const l2 = await PgVectorStore.open(t.db, { table: 'li_l2', dimensions: DIM, distance: 'l2' })
    const { PgScaleVectorStore } = kit.adapter
    expect(() => PgScaleVectorStore.forTenant(l2, 'acme', { embedModel })).toThrow(InvalidArgumentError)
    expect(() => PgScaleVectorStore.forTenant({} as PgVectorStore, 'acme', { embedModel })).toThrow(InvalidArgumentError)
    expect(() => PgScaleVectorStore.forTenant(store, 'acme', null as never)).toThrow(InvalidArgumentError)
    for (const tenantId of ['', 42 as unknown as string]) {
      expect(() => PgScaleVectorStore.forTenant(store, tenantId, { embedModel })).toThrow(PgScaleError)
    }
  })

  it('stores what LlamaIndex’s own stores store: nodeToMetadata, text apart, the ref doc id under ref_doc_id', async () => {
    await pg.add(corpus())
    const { rows } = await sql<{ document_id: string; content: string; metadata: Record<string, unknown> }>`
      select document_id, content, metadata from ${sql.table(TABLE)} where tenant_id = ${pg.tenantId} and document_id in ('a1', 'loose')
      order by document_id`.execute(t.db)
    expect(rows[0]).toMatchObject({ document_id: 'a1', content: '  Cats purr.\n' })
    expect(rows[0]!.metadata).toMatchObject({
      kind: 'pet',
      n: 1,
      _node_type: 'TextNode',
      ref_doc_id: 'doc-a',
      doc_id: 'doc-a',
      document_id: 'doc-a',
    })
    expect(JSON.parse(rows[0]!.metadata._node_content as string)).toMatchObject({ id_: 'a1', text: '' })
    expect(rows[1]!.metadata).not.toHaveProperty('ref_doc_id') // no source: no "None"
    expect(await pg.client().count({ ref_doc_id: 'doc-a' })).toBe(3)
  })
})
