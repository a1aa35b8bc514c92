import { beforeAll, expect, it } from 'vitest'
import { seededRandom } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { DIM, indexName, loadMastra, MASTRA_MISSING, type MastraKit } from './mastra-kit.js'

/**
 * `upsert` without `ids` and `deleteFilter` loads through the store's `bulkIngest` (binary COPY,
 * one transaction): every vector new under a fresh UUID, all of a batch or none of it, two such
 * loads at once both whole; with ids it still replaces (upsertChunks), as before.
 */
const t = useTestDatabase()

describeUnless(MASTRA_MISSING)('pgscale/mastra: batched ingest through COPY', () => {
  let kit: MastraKit
  const r = seededRandom('mastra-batched-ingest')
  const vectors = (n: number) => Array.from({ length: n }, () => Array.from({ length: DIM }, () => r.gaussian()))

  beforeAll(async () => {
    kit = await loadMastra(t.db)
  })

  it('3,000 vectors without ids: all stored under unique UUIDs, with their metadata, queryable', async () => {
    const vector = kit.vector('acme')
    const name = indexName('batched')
    await vector.createIndex({ indexName: name, dimension: DIM })
    const batch = vectors(3000)
    const ids = await vector.upsert({ indexName: name, vectors: batch, metadata: batch.map((_, i) => ({ i })) })
    expect(new Set(ids).size).toBe(3000)
    expect((await vector.describeIndex({ indexName: name })).count).toBe(3000)
    const [hit] = await vector.query({ indexName: name, queryVector: batch[1234]!, topK: 1, filter: { i: 1234 } })
    expect(hit!.id).toBe(ids[1234])
    // With ids the same call still replaces what is there (no second copy).
    await vector.upsert({ indexName: name, vectors: [batch[0]!], metadata: [{ i: -1 }], ids: [ids[0]!] })
    expect((await vector.describeIndex({ indexName: name })).count).toBe(3000)
    expect((await vector.query({ indexName: name, filter: { i: -1 }, topK: 5 })).map((h) => h.id)).toEqual([ids[0]])
  })

  it('a batch with one bad vector is a MastraError and writes nothing', async () => {
    const vector = kit.vector('acme')
    const name = indexName('batched_bad')
    await vector.createIndex({ indexName: name, dimension: DIM })
    const batch = vectors(1500)
    batch[1499] = batch[1499]!.slice(1)
    await expect(vector.upsert({ indexName: name, vectors: batch })).rejects.toBeInstanceOf(kit.MastraError)
    expect((await vector.describeIndex({ indexName: name })).count).toBe(0)
  })

  it('two loads at once (another tenant beside): each whole, nothing crossed', async () => {
    const [a, b] = [kit.vector('acme'), kit.vector('globex')]
    const name = indexName('batched_two')
    await a.createIndex({ indexName: name, dimension: DIM })
    await b.createIndex({ indexName: name, dimension: DIM })
    const [idsA, idsB] = await Promise.all([
      a.upsert({ indexName: name, vectors: vectors(2000), metadata: Array.from({ length: 2000 }, () => ({ who: 'a' })) }),
      b.upsert({ indexName: name, vectors: vectors(1000), metadata: Array.from({ length: 1000 }, () => ({ who: 'b' })) }),
    ])
    expect([(await a.describeIndex({ indexName: name })).count, (await b.describeIndex({ indexName: name })).count]).toEqual([2000, 1000])
    expect((await a.query({ indexName: name, filter: { who: 'b' }, topK: 10 })).length).toBe(0)
    expect(new Set([...idsA, ...idsB]).size).toBe(3000)
  })

  it('3,000 vectors with ids, twice at once: every id one whole row of one writer, none doubled; a bad one writes nothing', async () => {
    const vector = kit.vector('acme')
    const name = indexName('batched_ids')
    await vector.createIndex({ indexName: name, dimension: DIM })
    const ids = Array.from({ length: 3000 }, (_, i) => `id-${i}`)
    const batch = vectors(3000)
    const upsert = (w: string, v = batch) => vector.upsert({ indexName: name, vectors: v, ids, metadata: ids.map((_, i) => ({ i, w })) })
    await upsert('w0')
    await Promise.all([upsert('w1'), upsert('w2')])
    expect((await vector.describeIndex({ indexName: name })).count).toBe(3000)
    const counts = await Promise.all(
      ['w0', 'w1', 'w2'].map(async (w) => (await vector.query({ indexName: name, filter: { w }, topK: 5000 })).length),
    )
    expect(counts.filter((n) => n === 3000)).toHaveLength(1)
    const bad = vectors(3000)
    bad[2999] = bad[2999]!.slice(1)
    await expect(upsert('w3', bad)).rejects.toBeInstanceOf(kit.MastraError)
    expect((await vector.query({ indexName: name, filter: { w: 'w3' }, topK: 10 })).length).toBe(0)
    expect((await vector.describeIndex({ indexName: name })).count).toBe(3000)
  })
})
