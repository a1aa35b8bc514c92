import { beforeAll, describe, expect, it } from 'vitest'
import type { MetadataFilter, MetadataFilters, VectorStoreQuery } from '@llamaindex/core/vector-store'
import { InvalidArgumentError, PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { axisVector } from '../../support/vectors.js'
import { allIds, LLAMAINDEX_MISSING, loadLlamaIndex, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * Every LlamaIndex filter operator against SimpleVectorStore (llamaindex 0.12.1's reference
 * semantics, `buildFilterFn`) on the same nodes: the same filters must give the same node ids —
 * through the store's SQL on a plain table, on a table with metadata indexes declared (whose
 * indexed form the compiler then uses), and through the `docIds` path (pgscale's reference
 * evaluator). The nodes hold strings, numbers, arrays (nested ones too), empty values, nulls and
 * missing keys; where
 * SimpleVectorStore's JavaScript coerces or misreads values, the adapter's documented behaviour is
 * pinned below ("documented divergences").
 */
const t = useTestDatabase()
const DIM = 16

type Op = MetadataFilter['operator']
type Case = [key: string, operator: Op, value?: MetadataFilter['value']]

/** The nodes' metadata: every node has a source document (SimpleVectorStore filters only those). */
const METADATA: Record<string, Record<string, unknown>> = {
  n1: { genre: 'drama', year: 1999, rating: 7.5, tags: ['a', 'b'], nums: [1, 2], note: 'hello', author: 'ann', deep: [[1], 2] },
  n2: { genre: 'comedy', year: 2005, rating: 6, tags: ['b', 'c'], nums: [2, 3], note: '', author: 'bob', deep: [1] },
  n3: { genre: 'drama', year: 2010, rating: 8.25, tags: [], nums: [], note: null, author: 'ann', deep: 1 },
  n4: { genre: ['drama', 'comedy'], year: 2020, tags: ['c'], nums: [5] },
  n5: { genre: 'horror', year: 1985, rating: 5, tags: 'a', nums: 7, note: 'x', deep: [[2], ''] },
  n6: { genre: 'Drama', year: 2001.5, rating: 9, tags: ['a', 'b', 'c'], nums: [1, 2, 3], note: 'hello world', author: 'cy' },
  n7: { year: 2015, rating: 7.5, tags: ['d'], author: 'bob', nested: { x: 1 } },
  n8: { genre: 'comedy', year: 2005, rating: 6.5, tags: ['a', 'c'], nums: [3], note: 'hi', author: 'ann', shelf: [] },
  n9: { genre: null, tags: null, note: null, author: null },
}
const REF_DOC: Record<string, string> = { n1: 'd1', n2: 'd1', n3: 'd2', n4: 'd2', n5: 'd2', n6: 'd3', n7: 'd3', n8: 'd3', n9: 'd1' }

const CASES: Case[] = [
  ['genre', '==', 'drama'],
  ['genre', '==', 'comedy'],
  ['genre', '!=', 'drama'],
  ['genre', 'in', ['drama', 'horror']],
  ['genre', 'nin', ['drama', 'horror']],
  ['genre', 'is_empty'],
  ['genre', 'contains', 'comedy'],
  ['genre', 'any', ['comedy', 'x']],
  ['genre', 'all', ['drama', 'comedy']],
  ['genre', 'all', []],
  ['genre', 'any', []],
  ['genre', 'in', []],
  ['genre', 'nin', []],
  ['year', '>', 2005],
  ['year', '>=', 2005],
  ['year', '<', 2005],
  ['year', '<=', 2005],
  ['year', '==', 2005],
  ['year', '!=', 2005],
  ['year', '==', 2001.5],
  ['year', '==', '2005'],
  ['year', 'in', [1999, 2020, 3000]],
  ['year', 'nin', [1999, 2020]],
  ['rating', '>', 6.5],
  ['rating', '<=', 7.5],
  ['rating', '!=', 6],
  ['rating', 'is_empty'],
  ['author', '<', 'bob'],
  ['author', '>=', 'bob'],
  ['author', '>', 'ann'],
  ['author', 'in', ['ann', 'cy']],
  ['author', 'nin', ['ann']],
  ['tags', 'contains', 'a'],
  ['tags', 'any', ['a', 'd']],
  ['tags', 'all', ['a', 'b']],
  ['tags', 'all', []],
  ['tags', 'is_empty'],
  ['tags', '==', 'a'],
  ['tags', '!=', 'a'],
  ['tags', 'in', ['a']],
  ['tags', 'nin', ['a']],
  ['nums', 'contains', 2],
  ['nums', 'any', [3, 7]],
  ['nums', 'all', [1, 2]],
  ['nums', '==', 7],
  ['note', 'is_empty'],
  ['note', '==', 'hello'],
  ['note', '!=', 'hello'],
  ['note', 'in', ['hi', 'x']],
  ['deep', '==', 1],
  ['deep', '!=', 1],
  ['deep', 'in', [1, 2]],
  ['deep', 'nin', [1]],
  ['deep', 'any', [1]],
  ['deep', 'any', [2]],
  ['deep', 'all', [2]],
  ['deep', 'is_empty'],
  ['shelf', 'is_empty'],
  ['nested', 'is_empty'],
  ['nested', '==', 1],
  ['missing', 'is_empty'],
  ['missing', '==', 'x'],
  ['missing', '!=', 'x'],
  ['missing', 'nin', ['x']],
  ['ref_doc_id', '==', 'd1'],
  ['doc_id', 'in', ['d1', 'd3']],
  ['document_id', '!=', 'd2'],
  ['_node_type', '==', 'TextNode'],
]

const one = ([key, operator, value]: Case): MetadataFilter => (value === undefined ? { key, operator } : { key, operator, value })

/** Each operator alone, then and/or combinations, then the empty lists. */
const FILTERS: Array<{ name: string; filters: MetadataFilters }> = [
  ...CASES.map((c) => ({ name: `${c[0]} ${c[1]} ${JSON.stringify(c[2] ?? null)}`, filters: { filters: [one(c)] } })),
  { name: 'and: drama after 2000', filters: { filters: [one(['genre', '==', 'drama']), one(['year', '>', 2000])] } },
  {
    name: 'and (explicit): comedy, not ann',
    filters: { condition: 'and', filters: [one(['genre', 'any', ['comedy']]), one(['author', 'nin', ['ann']])] },
  },
  {
    name: 'or: horror or tagged d',
    filters: { condition: 'or', filters: [one(['genre', '==', 'horror']), one(['tags', 'contains', 'd'])] },
  },
  { name: 'or: no note or rated 9', filters: { condition: 'or', filters: [one(['note', 'is_empty']), one(['rating', '>=', 9])] } },
  {
    name: 'or of three',
    filters: { condition: 'or', filters: [one(['year', '<', 1990]), one(['nums', 'all', [1, 2, 3]]), one(['ref_doc_id', '==', 'd2'])] },
  },
  { name: 'and of nothing: every node', filters: { filters: [] } },
  { name: 'or of nothing: no node', filters: { condition: 'or', filters: [] } },
]

describeUnless(LLAMAINDEX_MISSING)('LlamaIndex filters: the same node ids as SimpleVectorStore', () => {
  let kit: LlamaIndexKit
  let plain: PgScaleVectorStore
  let indexed: PgScaleVectorStore
  let simple: InstanceType<LlamaIndexKit['llamaindex']['SimpleVectorStore']>
  const ids = Object.keys(METADATA)

  const query = (filters: MetadataFilters | undefined, extra: Partial<VectorStoreQuery> = {}): VectorStoreQuery => ({
    queryEmbedding: axisVector(DIM, 0, 0.5),
    similarityTopK: 100,
    mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT,
    filters,
    ...extra,
  })

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    const nodes = () => ids.map((id, i) => kit.node(id, `node ${id}`, axisVector(DIM, i, 0.3), structuredClone(METADATA[id]!), REF_DOC[id]))
    const embedModel = kit.hashEmbedding(DIM)
    const plainStore = await PgVectorStore.open(t.db, { table: 'li_filters', dimensions: DIM })
    const indexedStore = await PgVectorStore.open(t.db, { table: 'li_filters_indexed', dimensions: DIM })
    for (const [path, type] of [
      ['genre', 'string'],
      ['year', 'number'],
      ['rating', 'number'],
      ['author', 'string'],
      ['ref_doc_id', 'string'],
    ] as const) {
      await indexedStore.createMetadataIndex(path, type)
    }
    plain = kit.adapter.PgScaleVectorStore.forTenant(plainStore, 'acme', { embedModel })
    indexed = kit.adapter.PgScaleVectorStore.forTenant(indexedStore, 'acme', { embedModel })
    simple = new kit.llamaindex.SimpleVectorStore({ embedModel })
    for (const s of [plain, indexed, simple]) await s.add(nodes())
  })

  it('without filters, every node', async () => {
    expect(await allIds(plain, query(undefined))).toEqual(ids)
    expect(await allIds(simple, query(undefined))).toEqual(ids)
  })

  describe('each filter', () => {
    it.each(FILTERS)('$name', async ({ filters }) => {
      const expected = await allIds(simple, query(filters))
      expect(await allIds(plain, query(filters))).toEqual(expected)
      expect(await allIds(indexed, query(filters))).toEqual(expected)
      // The docIds path evaluates the same filter with pgscale's reference evaluator.
      const someIds = ['n1', 'n2', 'n4', 'n5', 'n7', 'n9', 'absent']
      expect(await allIds(plain, query(filters, { docIds: someIds }))).toEqual(await allIds(simple, query(filters, { docIds: someIds })))
    })
  })

  it('ranks the filtered nodes as SimpleVectorStore does, and cuts at similarityTopK (the relaxed first search and its fallback)', async () => {
    // Near n4 (genre ['drama', 'comedy']) the relaxed filter's hits hold an array: the exact search answers.
    const filters: MetadataFilters[] = [
      { filters: [one(['genre', '==', 'drama'])] },
      { filters: [one(['tags', 'in', ['a', 'c']])] },
      { filters: [one(['year', '>', 2000])] },
      { condition: 'or', filters: [one(['genre', '==', 'drama']), one(['tags', 'contains', 'c'])] },
      { filters: [one(['rating', '<=', 7.5]), one(['note', 'is_empty'])] },
    ]
    for (const f of filters) {
      for (let axis = 0; axis < ids.length; axis++) {
        // A little of every axis, unevenly, so no two nodes tie for a place.
        const near = axisVector(DIM, axis, 0.2).map((x, j) => x + 0.01 * (((j * 7) % 11) + 1))
        const q = query(f, { queryEmbedding: near, similarityTopK: 2 })
        const expected = (await simple.query(q)).ids
        expect((await plain.query(q)).ids, `${JSON.stringify(f)} near n${axis + 1}`).toEqual(expected)
        expect((await indexed.query(q)).ids).toEqual(expected)
      }
    }
    expect(kit.adapter.toPgScaleFilter({ filters: [one(['genre', 'in', ['drama']])] })).toEqual({
      filter: { genre: { $in: ['drama'], $not: { $elemMatch: { $in: ['drama'] } } } },
      relaxed: { genre: { $in: ['drama'] } },
      matchesNothing: false,
    })
    expect(kit.adapter.toPgScaleFilter({ filters: [one(['tags', 'any', ['a']])] }).relaxed).toBeUndefined()
  })

  it('refuses what it cannot map exactly, with a typed error, before anything is sent', async () => {
    const bad: unknown[] = [
      { filters: [{ key: 'note', operator: 'text_match', value: 'hell' }] },
      { filters: [{ key: 'note', operator: 'regex', value: 'h.*' }] },
      { filters: [{ key: 'a.b', operator: '==', value: 1 }] },
      { filters: [{ key: '$where', operator: '==', value: 1 }] },
      { filters: [{ key: '', operator: '==', value: 1 }] },
      { filters: [{ key: '_node_content', operator: 'is_empty' }] },
      { filters: [{ key: 'flag', operator: '==', value: true }] },
      { filters: [{ key: 'flag', operator: '==' }] },
      { filters: [{ key: 'flag', operator: '==', value: null }] },
      { filters: [{ key: 'year', operator: '>', value: Number.NaN }] },
      { filters: [{ key: 'tags', operator: '==', value: ['a'] }] },
      { filters: [{ key: 'tags', operator: 'in', value: 'a' }] },
      { filters: [{ key: 'tags', operator: 'any', value: [true] }] },
      { filters: [{ key: 'tags', operator: 'contains', value: ['a'] }] },
      { filters: [{ filters: [{ key: 'a', operator: '==', value: 1 }] }] },
      { filters: [{ key: 'a', operator: '==', value: 1 }], condition: 'not' },
      { filter: [] },
    ]
    for (const filters of bad) {
      await expect(plain.query(query(filters as MetadataFilters)), JSON.stringify(filters)).rejects.toBeInstanceOf(InvalidArgumentError)
    }
    expect(() => kit.adapter.toPgScaleFilter(bad[0] as MetadataFilters)).toThrow(/text_match/)
  })

  describe('documented divergences: where SimpleVectorStore’s JavaScript coerces or misreads, the adapter is exact', () => {
    let tenant: PgScaleVectorStore
    let reference: InstanceType<LlamaIndexKit['llamaindex']['SimpleVectorStore']>

    beforeAll(async () => {
      const store = await PgVectorStore.open(t.db, { table: 'li_filters_edge', dimensions: DIM })
      tenant = kit.adapter.PgScaleVectorStore.forTenant(store, 'edge', { embedModel: kit.hashEmbedding(DIM) })
      reference = new kit.llamaindex.SimpleVectorStore({ embedModel: kit.hashEmbedding(DIM) })
      const nodes = () => [
        kit.node('text-year', 'a', axisVector(DIM, 1), { year: '2020', n: 0, list: ['', 'x'] }, 'd'),
        kit.node('null-year', 'b', axisVector(DIM, 2), { year: null, n: 1 }, 'd'),
        kit.node('list-year', 'c', axisVector(DIM, 3), { year: [2020] }, 'd'),
        kit.node('no-source', 'd', axisVector(DIM, 4), { year: 2020 }),
      ]
      await tenant.add(nodes())
      await reference.add(nodes())
    })

    const compare = async (filter: MetadataFilter) => [
      await allIds(tenant, query({ filters: [filter] })),
      await allIds(reference, query({ filters: [filter] })),
    ]

    it('a comparison matches values of its operand’s type only: no "2020" > 2019, no [2020] > 2019; null is 0, as in JavaScript', async () => {
      expect(await compare({ key: 'year', operator: '>', value: 2019 })).toEqual([['no-source'], ['list-year', 'text-year']])
      // null < 5 is true in JavaScript, so in SimpleVectorStore: the adapter agrees (docs/adapters/llamaindex.md, the operator table).
      expect(await compare({ key: 'year', operator: '<', value: 5 })).toEqual([['null-year'], ['null-year']])
      expect(await compare({ key: 'year', operator: '>', value: -1 })).toEqual([
        ['no-source', 'null-year'],
        ['list-year', 'null-year', 'text-year'],
      ])
    })

    it('a 0 or "" found by in, nin or contains counts (SimpleVectorStore’s !!find() misses it)', async () => {
      expect(await compare({ key: 'n', operator: 'in', value: [0] })).toEqual([['text-year'], []])
      expect(await compare({ key: 'n', operator: 'nin', value: [0] })).toEqual([['null-year'], ['null-year', 'text-year']])
      expect(await compare({ key: 'list', operator: 'contains', value: '' })).toEqual([['text-year'], []])
    })

    it('a node without a source document is filtered on its metadata (SimpleVectorStore keeps no metadata for it)', async () => {
      expect(await compare({ key: 'year', operator: '==', value: 2020 })).toEqual([['no-source'], []])
    })
  })
})
