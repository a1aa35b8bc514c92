import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { useTestDatabase } from '../../support/test-database.js'
import { describeUnless } from '../../support/skip.js'
import {
  createUnitVector,
  createVector,
  DIM,
  indexName,
  loadMastra,
  MASTRA_MISSING,
  pad,
  type MastraKit,
  type PgScaleVector,
} from './mastra-kit.js'

/**
 * Mastra's shared vector suite (mastra-ai/mastra stores/_test-utils/src/domains/vector/), the
 * domains of everyday use, through pgscale/mastra: basic operations (index lifecycle, upsert,
 * query), advanced operations (deleteVectors and updateVector by ids or filter, with their error
 * rules), the Memory system's thread_id/resource_id filters — and what the adapter adds: scores as
 * @mastra/pg computes them for each metric, minScore, metadata-only queries, deleteFilter's atomic
 * replace. Edge cases and errors: edge-cases.test.ts; filters: filter-operators.test.ts; tenants:
 * tenant-isolation.test.ts.
 */
const t = useTestDatabase()

describeUnless(MASTRA_MISSING)('pgscale/mastra: MastraVector operations', () => {
  let kit: MastraKit
  let vector: PgScaleVector
  const createIndex = (name: string, metric?: 'cosine' | 'euclidean' | 'dotproduct') =>
    vector.createIndex({ indexName: name, dimension: DIM, ...(metric ? { metric } : {}) })

  beforeAll(async () => {
    kit = await loadMastra(t.db)
    vector = kit.vector('acme')
  })

  it('is a MastraVector', () => {
    expect(vector).toBeInstanceOf(kit.MastraVector)
    expect(vector.id).toBe('pgscale-test')
    expect(vector.tenantId).toBe('acme')
  })

  it('registers with Mastra, which hands it back (new Mastra({ vectors }))', async () => {
    const { Mastra } = (await import('@mastra/core' as string)) as {
      Mastra: new (config: { vectors: Record<string, unknown> }) => { getVector(name: string): unknown }
    }
    const mastra = new Mastra({ vectors: { pgscale: vector } })
    expect(mastra.getVector('pgscale')).toBe(vector)
  }, 120_000)

  describe('index lifecycle', () => {
    const name = indexName('lifecycle_test')

    it('creates an index, lists and describes it, deletes it', async () => {
      await createIndex(name)
      expect(await vector.listIndexes()).toContain(name)
      expect(await vector.describeIndex({ indexName: name })).toEqual({ dimension: DIM, count: 0, metric: 'cosine' })
      await createIndex(name) // again: nothing changes
      await vector.deleteIndex({ indexName: name })
      expect(await vector.listIndexes()).not.toContain(name)
      await expect(vector.describeIndex({ indexName: name })).rejects.toThrow(/does not exist/)
    })

    it('rejects a query on an index that does not exist', async () => {
      await expect(vector.query({ indexName: indexName('non_existent'), queryVector: createUnitVector(0), topK: 5 })).rejects.toThrow(
        kit.MastraError,
      )
    })

    it('folds index names to lower case, as @mastra/pg does', async () => {
      const upper = `Folded_${Date.now()}`
      await createIndex(upper)
      expect(await vector.listIndexes()).toContain(upper.toLowerCase())
      expect((await vector.describeIndex({ indexName: upper.toLowerCase() })).dimension).toBe(DIM)
    })

    it('another dimension for an existing index is a MastraError; another metric keeps the existing one', async () => {
      const name = indexName('redefined')
      await createIndex(name)
      const err = await vector.createIndex({ indexName: name, dimension: DIM * 2 }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(kit.MastraError)
      expect((err as InstanceType<MastraKit['MastraError']>).id).toBe('VECTOR_VALIDATE_INDEX_DIMENSION_MISMATCH')
      await vector.createIndex({ indexName: name, dimension: DIM, metric: 'euclidean' })
      expect((await vector.describeIndex({ indexName: name })).metric).toBe('cosine')
    })
  })

  describe('basic upsert', () => {
    const name = indexName('upsert_test')
    beforeAll(() => createIndex(name))

    it('upserts one vector and many, returning string ids in order', async () => {
      const [one] = await vector.upsert({ indexName: name, vectors: [createVector(1)], metadata: [{ type: 'single' }] })
      expect(typeof one).toBe('string')
      const ids = await vector.upsert({
        indexName: name,
        vectors: [createVector(2), createVector(3), createVector(4)],
        ids: ['b', 'c', 'd'],
      })
      expect(ids).toEqual(['b', 'c', 'd'])
      expect((await vector.describeIndex({ indexName: name })).count).toBe(4)
    })

    it('an upsert of existing ids replaces them (vector and metadata), never adds', async () => {
      const before = (await vector.describeIndex({ indexName: name })).count
      await vector.upsert({ indexName: name, vectors: [createVector(11)], metadata: [{ type: 'updated' }], ids: ['b'] })
      expect((await vector.describeIndex({ indexName: name })).count).toBe(before)
      const [hit] = await vector.query({ indexName: name, queryVector: createVector(11), topK: 1, includeVector: true })
      expect(hit).toMatchObject({ id: 'b', metadata: { type: 'updated' } })
      expect(hit!.vector![0]).toBeCloseTo(createVector(11)[0]!, 6)
    })

    it('an id given twice in one call: the last vector wins, and both places return it', async () => {
      const ids = await vector.upsert({
        indexName: name,
        vectors: [createVector(5), createVector(6)],
        ids: ['twice', 'twice'],
        metadata: [{ n: 1 }, { n: 2 }],
      })
      expect(ids).toEqual(['twice', 'twice'])
      const [hit] = await vector.query({ indexName: name, queryVector: createVector(6), topK: 1, filter: { n: { $exists: true } } })
      expect(hit).toMatchObject({ id: 'twice', metadata: { n: 2 } })
    })

    it('upserts without metadata (stored as {})', async () => {
      const ids = await vector.upsert({ indexName: name, vectors: [createVector(20), createVector(21)] })
      expect(ids).toHaveLength(2)
      const results = await vector.query({ indexName: name, queryVector: createVector(20), topK: 5 })
      expect(results.length).toBeGreaterThan(0)
      expect(results.find((r) => r.id === ids[0])?.metadata).toEqual({})
    })
  })

  describe('basic query', () => {
    const name = indexName('query_test')
    beforeAll(async () => {
      await createIndex(name)
      await vector.upsert({
        indexName: name,
        vectors: [1, 2, 3, 4, 5].map((s) => createVector(s)),
        metadata: ['A', 'A', 'B', 'B', 'C'].map((category, i) => ({ category, value: i + 1 })),
        ids: ['v1', 'v2', 'v3', 'v4', 'v5'],
      })
    })

    it('returns ids and numeric scores, most similar first, at most topK', async () => {
      const results = await vector.query({ indexName: name, queryVector: createVector(1), topK: 5 })
      expect(results).toHaveLength(5)
      expect(results[0]).toMatchObject({ id: 'v1', metadata: { category: 'A', value: 1 } })
      expect(results[0]!.score).toBeCloseTo(1, 5)
      for (let i = 1; i < results.length; i++) expect(results[i - 1]!.score).toBeGreaterThanOrEqual(results[i]!.score)
      expect(await vector.query({ indexName: name, queryVector: createVector(2), topK: 3 })).toHaveLength(3)
      expect(await vector.query({ indexName: name, queryVector: createVector(1), topK: 1 })).toHaveLength(1)
      expect(await vector.query({ indexName: name, queryVector: createVector(1), topK: 1000 })).toHaveLength(5)
      expect(await vector.query({ indexName: name, queryVector: createVector(1) })).toHaveLength(5) // topK defaults to 10
    })

    it('filters by metadata; a filter nothing matches returns []', async () => {
      const results = await vector.query({ indexName: name, queryVector: createVector(3), topK: 10, filter: { category: 'A' } })
      expect(results.map((r) => r.id).sort()).toEqual(['v1', 'v2'])
      expect(await vector.query({ indexName: name, queryVector: createVector(1), topK: 10, filter: { category: 'NonExistent' } })).toEqual(
        [],
      )
    })

    it('includeVector returns the stored vectors; without it there are none', async () => {
      const withVectors = await vector.query({ indexName: name, queryVector: createVector(1), topK: 3, includeVector: true })
      for (const r of withVectors) expect(r.vector).toHaveLength(DIM)
      expect(withVectors[0]!.vector!.map((x) => Math.round(x * 1e6))).toEqual(createVector(1).map((x) => Math.round(x * 1e6)))
      for (const r of await vector.query({ indexName: name, queryVector: createVector(1), topK: 3, includeVector: false })) {
        expect(r.vector).toBeUndefined()
      }
    })

    it('minScore keeps only scores above it (strictly, as @mastra/pg)', async () => {
      const all = await vector.query({ indexName: name, queryVector: createVector(1), topK: 5 })
      const third = all[2]!.score
      const above = await vector.query({ indexName: name, queryVector: createVector(1), topK: 5, minScore: third })
      expect(above.map((r) => r.id)).toEqual(all.filter((r) => r.score > third).map((r) => r.id))
      expect(await vector.query({ indexName: name, queryVector: createVector(1), topK: 5, minScore: 1.5 })).toEqual([])
    })

    it('without a queryVector, a metadata-only query: matches by id order, score 0', async () => {
      const results = await vector.query({ indexName: name, filter: { category: { $in: ['B', 'C'] } }, topK: 2 })
      expect(results).toEqual([
        { id: 'v3', score: 0, metadata: { category: 'B', value: 3 } },
        { id: 'v4', score: 0, metadata: { category: 'B', value: 4 } },
      ])
      const [withVector] = await vector.query({ indexName: name, filter: { category: 'C' }, includeVector: true })
      expect(withVector).toMatchObject({ id: 'v5', score: 0 })
      expect(withVector!.vector).toHaveLength(DIM)
      await expect(vector.query({ indexName: name, topK: 2 })).rejects.toThrow(/Either queryVector or filter must be provided/)
      await expect(vector.query({ indexName: name, filter: {} })).rejects.toThrow(/Either queryVector or filter must be provided/)
    })
  })

  describe('scores per metric, as @mastra/pg computes them', () => {
    it.each([
      ['cosine', (q: number[], v: number[]) => dot(q, v) / (norm(q) * norm(v))],
      ['euclidean', (q: number[], v: number[]) => 1 / (1 + Math.hypot(...q.map((x, i) => x - v[i]!)))],
      ['dotproduct', (q: number[], v: number[]) => dot(q, v)],
    ] as const)('%s', async (metric, expected) => {
      const name = indexName(`metric_${metric}`)
      await createIndex(name, metric)
      expect(await vector.listIndexes()).toContain(name)
      expect((await vector.describeIndex({ indexName: name })).metric).toBe(metric)
      const vectors = [pad([1, 0, 0]), pad([0.6, 0.8, 0]), pad([-2, 1, 0.5])]
      await vector.upsert({ indexName: name, vectors, ids: ['x', 'y', 'z'] })
      const query = pad([0.8, 0.6, 0])
      const results = await vector.query({ indexName: name, queryVector: query, topK: 3 })
      const want = ['x', 'y', 'z'].map((id, i) => ({ id, score: expected(query, vectors[i]!) })).sort((a, b) => b.score - a.score)
      expect(results.map((r) => r.id)).toEqual(want.map((w) => w.id))
      results.forEach((r, i) => expect(r.score).toBeCloseTo(want[i]!.score, 5))
    })
  })

  describe('advanced operations: deleteVectors and updateVector', () => {
    let name: string
    const four = [pad([0.1, 0.2, 0.3, 0.4]), pad([0.4, 0.5, 0.6, 0.7]), pad([0.7, 0.8, 0.9, 1.0]), pad([0.2, 0.3, 0.4, 0.5])]
    const count = async () => (await vector.describeIndex({ indexName: name })).count
    const all = () => vector.query({ indexName: name, queryVector: pad([0.5, 0.5, 0.5, 0.5]), topK: 10 })

    beforeEach(async () => {
      name = indexName('advanced_ops')
      await createIndex(name)
    })

    it('deleteVectors by a simple filter', async () => {
      await vector.upsert({
        indexName: name,
        vectors: four.slice(0, 3),
        metadata: [{ source_id: 'doc1.pdf' }, { source_id: 'doc2.pdf' }, { source_id: 'doc1.pdf' }],
      })
      await vector.deleteVectors({ indexName: name, filter: { source_id: 'doc1.pdf' } })
      expect(await count()).toBe(1)
      expect((await all())[0]?.metadata?.source_id).toBe('doc2.pdf')
    })

    it('deleteVectors by $and, $or and $in filters', async () => {
      const metadata = [
        { tenant: 'acme', env: 'prod', status: 'active', category: 'A' },
        { tenant: 'acme', env: 'dev', status: 'archived', category: 'B' },
        { tenant: 'globex', env: 'prod', status: 'deleted', category: 'C' },
        { tenant: 'acme', env: 'staging', status: 'pending', category: 'D' },
      ]
      await vector.upsert({ indexName: name, vectors: four, metadata })
      await vector.deleteVectors({ indexName: name, filter: { $and: [{ tenant: 'acme' }, { env: 'prod' }] } })
      expect((await all()).map((r) => r.metadata?.env).sort()).toEqual(['dev', 'prod', 'staging'])
      expect((await all()).find((r) => r.metadata?.env === 'prod')?.metadata?.tenant).toBe('globex')
      await vector.deleteVectors({ indexName: name, filter: { $or: [{ status: 'archived' }, { status: 'deleted' }] } })
      expect((await all()).map((r) => r.metadata?.status)).toEqual(['pending'])
      await vector.upsert({ indexName: name, vectors: four, metadata: ['A', 'B', 'C', 'D'].map((category) => ({ category })) })
      await vector.deleteVectors({ indexName: name, filter: { category: { $in: ['B', 'D'] } } })
      expect((await all()).map((r) => r.metadata?.category).sort()).toEqual(['A', 'C'])
    })

    it('deleteVectors with a filter nothing matches changes nothing; {} is refused', async () => {
      await vector.upsert({ indexName: name, vectors: [four[0]!], metadata: [{ name: 'test' }] })
      await vector.deleteVectors({ indexName: name, filter: { name: 'nonexistent' } })
      expect(await count()).toBe(1)
      await expect(vector.deleteVectors({ indexName: name, filter: {} })).rejects.toThrow(/empty filter/i)
      await expect(vector.deleteVectors({ indexName: name, filter: { $and: [] } })).rejects.toThrow(/empty filter/i)
      expect(await count()).toBe(1)
    })

    it('deleteVectors by ids; unknown ids are a no-op; the error rules', async () => {
      const ids = await vector.upsert({ indexName: name, vectors: four, metadata: [1, 2, 3, 4].map((n) => ({ name: `vec${n}` })) })
      await vector.deleteVectors({ indexName: name, ids: [ids[0]!, ids[2]!] })
      expect((await all()).map((r) => r.metadata?.name).sort()).toEqual(['vec2', 'vec4'])
      await vector.deleteVectors({ indexName: name, ids: ['nonexistent-1', 'nonexistent-2'] })
      expect(await count()).toBe(2)
      await expect(vector.deleteVectors({ indexName: name, ids: [] })).rejects.toThrow(/empty ids array/i)
      await expect(vector.deleteVectors({ indexName: name, filter: { source_id: 'doc.pdf' }, ids: ['vec_1'] })).rejects.toThrow(
        /mutually exclusive/i,
      )
      await expect(vector.deleteVectors({ indexName: name })).rejects.toThrow(/Either filter or ids must be provided/i)
      expect(await count()).toBe(2)
    })

    it('deleteVector deletes one vector by id', async () => {
      const ids = await vector.upsert({ indexName: name, vectors: four.slice(0, 2) })
      await vector.deleteVector({ indexName: name, id: ids[0]! })
      await vector.deleteVector({ indexName: name, id: 'never-there' })
      expect((await all()).map((r) => r.id)).toEqual([ids[1]])
    })

    it('updateVector by filter replaces the metadata of every match, and only theirs', async () => {
      const metadata = ['user_1', 'user_1', 'user_2', 'user_2'].map((userId) => ({ userId, status: 'active' }))
      await vector.upsert({ indexName: name, vectors: four, metadata })
      await vector.updateVector({
        indexName: name,
        filter: { userId: 'user_1' },
        update: { metadata: { userId: 'user_1', status: 'archived' } },
      })
      const results = await all()
      expect(results.filter((r) => r.metadata?.userId === 'user_1').map((r) => r.metadata?.status)).toEqual(['archived', 'archived'])
      expect(results.filter((r) => r.metadata?.userId === 'user_2').map((r) => r.metadata?.status)).toEqual(['active', 'active'])
    })

    it('updateVector by a complex filter; a filter nothing matches changes nothing', async () => {
      const metadata = [
        { tenant: 'acme', env: 'prod', version: 1 },
        { tenant: 'acme', env: 'dev', version: 1 },
        { tenant: 'globex', env: 'prod', version: 1 },
        { tenant: 'acme', env: 'prod', version: 2 },
      ]
      await vector.upsert({ indexName: name, vectors: four, metadata })
      await vector.updateVector({
        indexName: name,
        filter: { $and: [{ tenant: 'acme' }, { env: 'prod' }, { version: 1 }] },
        update: { metadata: { tenant: 'acme', env: 'prod', version: 1, marked: true } },
      })
      expect((await all()).filter((r) => r.metadata?.marked === true).map((r) => r.metadata)).toEqual([
        { tenant: 'acme', env: 'prod', version: 1, marked: true },
      ])
      await vector.updateVector({ indexName: name, filter: { tenant: 'nobody' }, update: { metadata: { updated: true } } })
      expect((await all()).some((r) => r.metadata?.updated)).toBe(false)
    })

    it('updateVector by id: the vector, the metadata or both', async () => {
      const [id] = await vector.upsert({ indexName: name, vectors: [four[0]!], metadata: [{ v: 1 }] })
      await vector.updateVector({ indexName: name, id: id!, update: { vector: pad([0, 0, 0, 0, 1]) } })
      const [moved] = await vector.query({ indexName: name, queryVector: pad([0, 0, 0, 0, 1]), topK: 1 })
      expect(moved).toMatchObject({ id, metadata: { v: 1 } })
      expect(moved!.score).toBeCloseTo(1, 5)
      await vector.updateVector({ indexName: name, id: id!, update: { metadata: { v: 2 } } })
      expect((await all())[0]?.metadata).toEqual({ v: 2 })
    })

    it('updateVector: the error rules', async () => {
      const update = { metadata: { status: 'archived' } }
      await expect(vector.updateVector({ indexName: name, id: 'vec_1', filter: { userId: 'user_1' }, update } as never)).rejects.toThrow(
        /mutually exclusive/i,
      )
      await expect(vector.updateVector({ indexName: name, update } as never)).rejects.toThrow(/Either id or filter must be provided/i)
      await expect(vector.updateVector({ indexName: name, filter: {}, update })).rejects.toThrow(/empty filter/i)
      await expect(vector.updateVector({ indexName: name, id: 'x', update: {} })).rejects.toThrow(/No updates provided/)
    })

    it('re-indexing a document: deleteVectors by source, then its new chunks', async () => {
      const docId = 'user-guide.pdf'
      await vector.upsert({ indexName: name, vectors: four.slice(0, 3), metadata: [0, 1, 2].map((chunk) => ({ source_id: docId, chunk })) })
      await vector.deleteVectors({ indexName: name, filter: { source_id: docId } })
      expect(await count()).toBe(0)
      const newIds = await vector.upsert({
        indexName: name,
        vectors: four,
        metadata: [0, 1, 2, 3].map((chunk) => ({ source_id: docId, chunk, version: 2 })),
      })
      expect(newIds).toHaveLength(4)
      expect(await count()).toBe(4)
    })

    it('upsert with deleteFilter replaces a source atomically: a failing upsert deletes nothing', async () => {
      await vector.upsert({
        indexName: name,
        vectors: four.slice(0, 3),
        metadata: [0, 1, 2].map((chunk) => ({ source_id: 'a.pdf', chunk })),
      })
      await vector.upsert({ indexName: name, vectors: [four[3]!], metadata: [{ source_id: 'b.pdf', chunk: 0 }] })
      const bad = [four[0]!, [...four[1]!.slice(0, DIM - 1), Number.NaN]]
      await expect(vector.upsert({ indexName: name, vectors: bad, deleteFilter: { source_id: 'a.pdf' } })).rejects.toThrow(kit.MastraError)
      const wrongDimension = [four[0]!, four[1]!.slice(1)]
      await expect(vector.upsert({ indexName: name, vectors: wrongDimension, deleteFilter: { source_id: 'a.pdf' } })).rejects.toThrow()
      expect(await count()).toBe(4)
      await vector.upsert({
        indexName: name,
        vectors: four.slice(0, 2),
        metadata: [0, 1].map((chunk) => ({ source_id: 'a.pdf', chunk, v: 2 })),
        deleteFilter: { source_id: 'a.pdf' },
      })
      const rows = await all()
      expect(rows.filter((r) => r.metadata?.source_id === 'a.pdf').map((r) => r.metadata?.v)).toEqual([2, 2])
      expect(rows.filter((r) => r.metadata?.source_id === 'b.pdf')).toHaveLength(1)
      await expect(vector.upsert({ indexName: name, vectors: [four[0]!], deleteFilter: { $nor: [] } })).rejects.toThrow(/every vector/)
    })
  })

  describe('DDL runs only in createIndex', () => {
    const exists = async (name: string) =>
      (await sql<{ present: boolean }>`select to_regclass(${name}) is not null as present`.execute(t.db)).rows[0]!.present

    it('reads of a fresh schema create nothing; createIndex creates the registry and the table', async () => {
      await sql`create schema fresh`.execute(t.db)
      const fresh = new kit.adapter.PgScaleVector({ id: 'fresh', db: t.db, tenantId: 'acme', schema: 'fresh' })
      expect(await fresh.listIndexes()).toEqual([])
      await expect(fresh.query({ indexName: 'docs', queryVector: createVector(1) })).rejects.toThrow(/does not exist/)
      await fresh.deleteIndex({ indexName: 'docs' })
      expect(await exists(`fresh.${kit.adapter.REGISTRY_TABLE}`)).toBe(false)
      await fresh.createIndex({ indexName: 'docs', dimension: DIM })
      expect(await exists(`fresh.${kit.adapter.REGISTRY_TABLE}`)).toBe(true)
      expect(await exists('fresh.mastra_docs')).toBe(true)
      await fresh.disconnect()
    })

    it('with disableInit, createIndex only records the tenant: tables must exist', async () => {
      await sql`create schema deployed`.execute(t.db)
      const options = { id: 'deployed', db: t.db, schema: 'deployed', disableInit: true }
      const noDdl = new kit.adapter.PgScaleVectors(options)
      const err = await noDdl
        .forTenant('acme')
        .createIndex({ indexName: 'docs', dimension: DIM })
        .catch((e: unknown) => e)
      expect(err).toBeInstanceOf(kit.MastraError)
      expect((err as InstanceType<MastraKit['MastraError']>).id).toBe('MASTRA_VECTOR_PGSCALE_CREATE_INDEX_REGISTRY_MISSING')
      expect(await exists(`deployed.${kit.adapter.REGISTRY_TABLE}`)).toBe(false)
      await new kit.adapter.PgScaleVectors({ ...options, disableInit: false })
        .forTenant('owner')
        .createIndex({ indexName: 'docs', dimension: DIM })
      await expect(noDdl.forTenant('acme').createIndex({ indexName: 'other', dimension: DIM })).rejects.toThrow(/MIGRATION|migrate/i)
      expect(await exists('deployed.mastra_other')).toBe(false)
      const acme = noDdl.forTenant('acme')
      await acme.createIndex({ indexName: 'docs', dimension: DIM })
      await acme.upsert({ indexName: 'docs', vectors: [createVector(1)], ids: ['a'] })
      expect(await acme.listIndexes()).toEqual(['docs'])
      expect((await acme.describeIndex({ indexName: 'docs' })).count).toBe(1)
      await noDdl.close()
    })
  })

  describe("the Memory system's metadata filters (thread_id, resource_id)", () => {
    const name = indexName('metadata_filter_test')
    beforeAll(async () => {
      await vector.createIndex({ indexName: name, dimension: 4 })
      await vector.upsert({
        indexName: name,
        vectors: [
          [1, 0, 0, 0],
          [0, 1, 0, 0],
          [0, 0, 1, 0],
          [0, 0, 0, 1],
        ],
        metadata: [
          { thread_id: 'thread-123', resource_id: 'resource-123', message: 'first' },
          { thread_id: 'thread-123', resource_id: 'resource-123', message: 'second' },
          { thread_id: 'thread-456', resource_id: 'resource-456', message: 'third' },
          { thread_id: 'thread-456', resource_id: 'resource-456', message: 'fourth' },
        ],
      })
    })
    const query = (queryVector: number[], filter?: Record<string, string>) =>
      vector.query({ indexName: name, queryVector, topK: 10, filter })

    it('filters by thread_id, resource_id, both, or an unknown thread', async () => {
      const byThread = await query([1, 0, 0, 0], { thread_id: 'thread-123' })
      expect(byThread.map((r) => r.metadata?.message).sort()).toEqual(['first', 'second'])
      const byResource = await query([0, 1, 0, 0], { resource_id: 'resource-123' })
      expect(byResource.map((r) => r.metadata?.resource_id)).toEqual(['resource-123', 'resource-123'])
      expect(await query([1, 0, 0, 0], { thread_id: 'thread-123', resource_id: 'resource-123' })).toHaveLength(2)
      expect(await query([1, 0, 0, 0], { thread_id: 'non-existent-thread' })).toHaveLength(0)
    })

    it('returns every vector without a filter', async () => {
      const results = await query([0.5, 0.5, 0.5, 0.5])
      expect(results).toHaveLength(4)
      expect(new Set(results.map((r) => r.metadata?.thread_id))).toEqual(new Set(['thread-123', 'thread-456']))
    })

    it('"metadata." is not a prefix: the path is taken as written (no field metadata.thread_id here)', async () => {
      expect(await query([1, 0, 0, 0], { 'metadata.thread_id': 'thread-123' })).toEqual([])
    })
  })
})

function dot(a: readonly number[], b: readonly number[]): number {
  return a.reduce((sum, x, i) => sum + x * b[i]!, 0)
}

function norm(a: readonly number[]): number {
  return Math.sqrt(dot(a, a))
}
