import { beforeAll, describe, expect, it } from 'vitest'
import { useTestDatabase } from '../../support/test-database.js'
import { describeUnless } from '../../support/skip.js'
import {
  createUnitVector,
  createVector,
  DIM,
  indexName,
  loadMastra,
  MASTRA_MISSING,
  type MastraKit,
  type PgScaleVector,
} from './mastra-kit.js'

/**
 * Mastra's shared vector suite, its edge-case and error-handling domains (mastra-ai/mastra
 * stores/_test-utils/src/domains/vector/edge-cases.ts, error-handling.ts), through pgscale/mastra.
 * Where the suite accepts either outcome ("throw or succeed"), these tests pin the one the adapter
 * chose: a `MastraError` for every refusal, with the message the suite matches.
 */
const t = useTestDatabase()

describeUnless(MASTRA_MISSING)('pgscale/mastra: edge cases and errors', () => {
  let kit: MastraKit
  let vector: PgScaleVector
  const createIndex = (name: string) => vector.createIndex({ indexName: name, dimension: DIM })
  const rejectsMastra = async (work: Promise<unknown>, message?: RegExp) => {
    const err = await work.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(kit.MastraError)
    if (message) expect((err as Error).message).toMatch(message)
    return err as InstanceType<MastraKit['MastraError']>
  }

  beforeAll(async () => {
    kit = await loadMastra(t.db)
    vector = kit.vector('acme')
  })

  describe('an empty index', () => {
    const name = indexName('empty_test')
    beforeAll(() => createIndex(name))

    it('queries to [], counts 0, deletes unknown ids quietly', async () => {
      expect(await vector.query({ indexName: name, queryVector: createVector(1), topK: 10 })).toEqual([])
      expect(await vector.query({ indexName: name, filter: { a: 1 } })).toEqual([])
      expect((await vector.describeIndex({ indexName: name })).count).toBe(0)
      await vector.deleteVectors({ indexName: name, ids: ['nonexistent-id'] })
    })
  })

  describe('dimensions', () => {
    const name = indexName('dimension_test')
    beforeAll(() => createIndex(name))

    it('rejects vectors and queries of another dimension, and empty vectors', async () => {
      await rejectsMastra(
        vector.upsert({ indexName: name, vectors: [new Array(512).fill(0.1)] }),
        /expected a vector of 16 dimensions, got 512/,
      )
      await vector.upsert({ indexName: name, vectors: [createVector(1)], metadata: [{ test: 'valid' }] })
      await rejectsMastra(vector.query({ indexName: name, queryVector: new Array(768).fill(0.1), topK: 5 }), /16 dimensions, got 768/)
      await rejectsMastra(vector.upsert({ indexName: name, vectors: [[]] }))
      await rejectsMastra(vector.updateVector({ indexName: name, filter: { test: 'valid' }, update: { vector: [1, 2] } }), /got 2/)
      expect((await vector.describeIndex({ indexName: name })).count).toBe(1)
    })

    it('an index of 1,536 dimensions (the suite own) takes and finds its vectors', async () => {
      const big = indexName('dimension_1536')
      await vector.createIndex({ indexName: big, dimension: 1536 })
      await vector.upsert({ indexName: big, vectors: [createVector(1, 1536), createVector(7, 1536)], ids: ['a', 'b'] })
      const [hit] = await vector.query({ indexName: big, queryVector: createVector(7, 1536), topK: 1 })
      expect(hit).toMatchObject({ id: 'b' })
      expect(hit!.score).toBeCloseTo(1, 5)
      await rejectsMastra(vector.upsert({ indexName: big, vectors: [createVector(1, 512)] }))
    })
  })

  describe('a batch of 1,000 vectors', () => {
    const name = indexName('large_batch_test')
    beforeAll(() => createIndex(name))

    it('upserts 1,000 vectors in one call, queries 500, deletes by filter', async () => {
      const vectors = Array.from({ length: 1000 }, (_, i) => createVector(i))
      const ids = await vector.upsert({ indexName: name, vectors, metadata: vectors.map((_, i) => ({ batch: 'large', index: i })) })
      expect(ids).toHaveLength(1000)
      expect(new Set(ids).size).toBe(1000)
      expect((await vector.describeIndex({ indexName: name })).count).toBe(1000)
      const results = await vector.query({ indexName: name, queryVector: createVector(500), topK: 500 })
      expect(results).toHaveLength(500)
      await vector.deleteVectors({ indexName: name, filter: { batch: 'large', index: { $lt: 500 } } })
      expect((await vector.describeIndex({ indexName: name })).count).toBe(500)
    }, 120_000)
  })

  describe('concurrent operations', () => {
    const name = indexName('concurrent_test')
    beforeAll(() => createIndex(name))

    it('10 concurrent upserts all land', async () => {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          vector.upsert({ indexName: name, vectors: [createVector(i * 100)], metadata: [{ concurrent: true, batch: i }] }),
        ),
      )
      expect(results.map((ids) => ids.length)).toEqual(new Array(10).fill(1))
      expect((await vector.describeIndex({ indexName: name })).count).toBe(10)
    })

    it('10 concurrent queries, and upserts and queries mixed', async () => {
      await vector.upsert({ indexName: name, vectors: Array.from({ length: 5 }, (_, i) => createVector(i)) })
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => vector.query({ indexName: name, queryVector: createVector(i), topK: 5 })),
      )
      for (const r of results) expect(r).toHaveLength(5)
      await Promise.all([
        vector.upsert({ indexName: name, vectors: [createVector(200)], metadata: [{ op: 'upsert', id: 1 }] }),
        vector.upsert({ indexName: name, vectors: [createVector(201)], metadata: [{ op: 'upsert', id: 2 }] }),
        vector.query({ indexName: name, queryVector: createVector(100), topK: 10 }),
        vector.query({ indexName: name, queryVector: createVector(101), topK: 10 }),
      ])
      expect((await vector.describeIndex({ indexName: name })).count).toBe(17)
    })

    it('5 concurrent upserts of the same ids leave one whole version of each', async () => {
      const ids = ['s1', 's2', 's3']
      await Promise.all(
        Array.from({ length: 5 }, (_, w) =>
          vector.upsert({
            indexName: name,
            ids,
            vectors: ids.map((_, i) => createVector(w * 10 + i)),
            metadata: ids.map(() => ({ writer: w })),
          }),
        ),
      )
      const rows = await vector.query({ indexName: name, filter: { writer: { $exists: true } }, topK: 10 })
      expect(rows.map((r) => r.id)).toEqual(ids)
      expect(new Set(rows.map((r) => r.metadata?.writer)).size).toBe(1)
    })
  })

  describe('vector values', () => {
    const name = indexName('normalization_test')
    beforeAll(() => createIndex(name))

    it('rejects NaN, ±Infinity, null, undefined, strings and non-arrays (Mastra validateVectorValues)', async () => {
      for (const bad of ['string', Number.NaN, Infinity, -Infinity, null, undefined]) {
        const v = [0.1, bad, 0.2, ...new Array(DIM - 3).fill(0)] as number[]
        const err = await rejectsMastra(vector.upsert({ indexName: name, vectors: [v] }))
        expect(err.id).toMatch(/^MASTRA_VECTOR_PGSCALE_UPSERT_INVALID_VECTOR/)
      }
      await rejectsMastra(vector.upsert({ indexName: name, vectors: ['not-an-array' as never] }))
      expect((await vector.describeIndex({ indexName: name })).count).toBe(0)
    })

    it('refuses a zero vector under cosine (no direction); takes tiny and extreme values', async () => {
      await rejectsMastra(vector.upsert({ indexName: name, vectors: [new Array(DIM).fill(0)] }), /all zeros/)
      await vector.upsert({ indexName: name, vectors: [new Array(DIM).fill(1e-10)], ids: ['tiny'] })
      const extreme = new Array(DIM).fill(0)
      extreme[0] = 1000
      extreme[1] = 0.001
      extreme[2] = -1000
      await vector.upsert({ indexName: name, vectors: [extreme], ids: ['extreme'] })
      const results = await vector.query({ indexName: name, queryVector: createVector(1), topK: 10 })
      expect(results.map((r) => r.id).sort()).toEqual(['extreme', 'tiny'])
    })
  })

  describe('empty logical operators (as @mastra/pg: $and/$nor of nothing match all, $or of nothing none)', () => {
    const name = indexName('empty_logical')
    beforeAll(async () => {
      await createIndex(name)
      await vector.upsert({
        indexName: name,
        vectors: [1, 2, 3].map((s) => createVector(s)),
        metadata: ['A', 'B', 'C'].map((category) => ({ category })),
      })
    })
    const count = async (filter: object) =>
      (await vector.query({ indexName: name, queryVector: createVector(1), topK: 10, filter: filter as never })).length

    it('$and: [] → all, $or: [] → none, $nor: [] → all, and combined', async () => {
      expect(await count({ $and: [] })).toBe(3)
      expect(await count({ $or: [] })).toBe(0)
      expect(await count({ $nor: [] })).toBe(3)
      expect(await count({ $and: [], category: 'A' })).toBe(1)
      expect(await count({ $and: [{ $or: [] }] })).toBe(0)
      expect(await count({ $nor: [{ $or: [] }] })).toBe(3)
    })

    it('$not: {} is refused (Mastra: "$not operator cannot be empty")', async () => {
      await rejectsMastra(
        vector.query({ indexName: name, queryVector: createVector(1), filter: { $not: {} } as never }),
        /\$not operator cannot be empty/,
      )
    })
  })

  describe('error handling', () => {
    const name = indexName('errorhandlingtest')
    const missing = indexName('nonexistent_index')
    beforeAll(async () => {
      await createIndex(name)
      await vector.upsert({
        indexName: name,
        vectors: [createVector(1), createVector(2)],
        metadata: [
          { category: 'electronics', price: 100 },
          { category: 'books', price: 20 },
        ],
      })
    })

    it('an index that does not exist: query, upsert, describe, update and deletes reject; deleteIndex does nothing', async () => {
      const notFound = /does not exist/
      const err = await rejectsMastra(vector.query({ indexName: missing, queryVector: createVector(1), topK: 5 }), notFound)
      expect(err.id).toBe('MASTRA_VECTOR_PGSCALE_QUERY_INDEX_NOT_FOUND')
      expect(err.category).toBe('USER')
      await rejectsMastra(vector.upsert({ indexName: missing, vectors: [createVector(1)], metadata: [{ test: true }] }), notFound)
      await rejectsMastra(vector.describeIndex({ indexName: missing }), notFound)
      await rejectsMastra(vector.deleteVectors({ indexName: missing, filter: { test: true } }), notFound)
      await rejectsMastra(vector.deleteVector({ indexName: missing, id: 'x' }), notFound)
      await rejectsMastra(vector.updateVector({ indexName: missing, id: 'x', update: { metadata: {} } }), notFound)
      await vector.deleteIndex({ indexName: missing })
    })

    it('malformed filters are MastraErrors that say what is wrong', async () => {
      const query = (filter: unknown) => vector.query({ indexName: name, queryVector: createVector(1), topK: 5, filter: filter as never })
      await rejectsMastra(query({ $invalidOperator: 'value' }), /Unsupported operator: \$invalidOperator/)
      await rejectsMastra(query({ $and: 'not-an-array' }), /\$and takes an array/)
      await rejectsMastra(query({ $or: {} }), /\$or takes an array/)
      await rejectsMastra(query({ value: { $invalidOperator: 10 } }), /unsupported|invalid|unknown.*operator/i)
      await rejectsMastra(query({ price: { $gt: [10, 20] } }), /a comparison takes a number, a string or a Date/)
      await rejectsMastra(
        query({ price: { $gt: 5 }, nested: { $and: [{ a: 1 }] } }),
        /Logical operator \$and cannot be used at field level/,
      )
      await rejectsMastra(query({ category: undefined }), /undefined is not a value/)
      let deep: object = { category: 'electronics' }
      for (let i = 0; i < 100; i++) deep = { $and: [deep, { price: { $gte: 0 } }] }
      expect((await rejectsMastra(query(deep), /nests at most/)).id).toBe('MASTRA_VECTOR_PGSCALE_QUERY_INVALID_FILTER')
      // Comparisons of strings are by code point: no error, no match here.
      expect(await query({ category: { $gt: 'string', $lt: 'another' } })).toEqual([])
      // { field: null } matches a null or missing field.
      expect(await query({ category: null })).toEqual([])
    })

    it('bad parameters are MastraErrors; nothing is written', async () => {
      const q = (topK: number) => vector.query({ indexName: name, queryVector: createVector(1), topK })
      for (const topK of [-5, 0, 5.5]) expect((await rejectsMastra(q(topK))).id).toBe('MASTRA_VECTOR_PGSCALE_QUERY_INVALID_TOP_K')
      await rejectsMastra(q(1001), /topK is at most 1000/)
      const two = [createVector(1), createVector(2)]
      expect((await rejectsMastra(vector.upsert({ indexName: name, vectors: two, metadata: [{ test: true }] }))).id).toBe(
        'MASTRA_VECTOR_PGSCALE_UPSERT_METADATA_LENGTH_MISMATCH',
      )
      expect((await rejectsMastra(vector.upsert({ indexName: name, vectors: two, ids: ['id1', 'id2', 'id3'] }))).id).toBe(
        'MASTRA_VECTOR_PGSCALE_UPSERT_IDS_LENGTH_MISMATCH',
      )
      expect((await rejectsMastra(vector.upsert({ indexName: name, vectors: [], metadata: [] }))).id).toBe(
        'MASTRA_VECTOR_PGSCALE_UPSERT_EMPTY_VECTORS',
      )
      await rejectsMastra(
        vector.upsert({ indexName: name, vectors: [createVector(3)], ids: [''] }),
        /document id must be a non-empty string/,
      )
      await rejectsMastra(
        vector.upsert({ indexName: name, vectors: [createVector(3)], sparseVectors: [{ indices: [1], values: [1] }] }),
        /sparse/,
      )
      expect((await vector.describeIndex({ indexName: name })).count).toBe(2)
    })

    it('createIndex validates before it looks: a bad dimension or metric is refused for an existing index too', async () => {
      for (const dimension of [-100, 0, 1.5]) {
        const err = await rejectsMastra(
          vector.createIndex({ indexName: name, dimension, metric: 'cosine' }),
          /Dimension must be a positive integer/,
        )
        expect(err.id).toBe('MASTRA_VECTOR_PGSCALE_CREATE_INDEX_INVALID_INPUT')
      }
      await rejectsMastra(
        vector.createIndex({ indexName: indexName('invalid_metric'), dimension: DIM, metric: 'invalid-metric-type' as never }),
        /metric/,
      )
      await rejectsMastra(vector.createIndex({ indexName: 'bad-name; drop table x', dimension: DIM }), /must match/)
      await rejectsMastra(vector.createIndex({ indexName: `x${'y'.repeat(60)}`, dimension: DIM }), /too long/)
      expect(await vector.listIndexes()).not.toContain('invalid_metric')
    })

    it('metadata: a null row is {}, functions and symbols are dropped, a cycle is refused, 1 MB is taken', async () => {
      const [nullId] = await vector.upsert({ indexName: name, vectors: [createVector(100)], metadata: [null as never] })
      const [fnId] = await vector.upsert({
        indexName: name,
        vectors: [createVector(101)],
        metadata: [{ name: 'test', fn: () => 'x', sym: Symbol('s') } as never],
      })
      const circular: Record<string, unknown> = { name: 'test' }
      circular.self = circular
      await rejectsMastra(vector.upsert({ indexName: name, vectors: [createVector(200)], metadata: [circular] }), /JSON/)
      const [bigId] = await vector.upsert({
        indexName: name,
        vectors: [createVector(203)],
        metadata: [{ largeField: 'x'.repeat(1024 * 1024) }],
      })
      const rows = await vector.query({ indexName: name, queryVector: createVector(100), topK: 10 })
      expect(rows.find((r) => r.id === nullId)?.metadata).toEqual({})
      expect(rows.find((r) => r.id === fnId)?.metadata).toEqual({ name: 'test' })
      expect((rows.find((r) => r.id === bigId)?.metadata?.largeField as string).length).toBe(1024 * 1024)
    }, 30_000)

    it('deleting an index twice, and a tenant id or vector id that is not one', async () => {
      const temp = indexName('temp_double_delete')
      await createIndex(temp)
      await vector.deleteIndex({ indexName: temp })
      await vector.deleteIndex({ indexName: temp })
      expect(() => kit.vector('')).toThrow(kit.MastraError)
      expect(() => new kit.adapter.PgScaleVector({ id: '', db: t.db, tenantId: 'acme' })).toThrow(/Vector id must be provided/)
      expect(() => new kit.adapter.PgScaleVector({ id: 'x', db: t.db, tenantId: 'acme', tablePrefix: 'Bad-' })).toThrow(/tablePrefix/)
    })
  })

  it('the registry table is not an index name (with an empty prefix)', async () => {
    const bare = await loadMastra(t.db, { tablePrefix: '' })
    await expect(bare.vector('acme').createIndex({ indexName: kit.adapter.REGISTRY_TABLE, dimension: DIM })).rejects.toThrow(/reserved/)
    await bare.vector('acme').createIndex({ indexName: 'bare_index', dimension: DIM })
    await bare.vector('acme').upsert({ indexName: 'bare_index', vectors: [createUnitVector(1)] })
    expect((await bare.vector('acme').describeIndex({ indexName: 'bare_index' })).count).toBe(1)
  })
})
