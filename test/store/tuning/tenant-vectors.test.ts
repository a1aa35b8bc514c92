import { describe, expect, it } from 'vitest'
import { InvalidArgumentError, PgVectorStore, type IngestRow } from '../../../src/index.js'
import {
  exactAnswersInMemory,
  exactInMemory,
  IN_MEMORY_NUMBERS,
  readTenantVectors,
  seededRandom,
  vectorFromBinary,
} from '../../../src/bench-kit.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * A tenant read whole for tuning (the query model's neighbours and the tuning queries' exact
 * answers, in memory): the vectors read are the stored ones (pgvector's binary form on a native
 * server, text on PGlite), and the exact answers computed in memory are the server's exact scan's
 * under each distance — another implementation, differential on seeded queries (ties by distance).
 */
const t = useTestDatabase()
const DIM = 24

function* rows(tenantId: string, n: number, seed: string): Iterable<IngestRow> {
  const r = seededRandom(seed)
  for (let i = 0; i < n; i++) {
    // Some exact duplicates (ties) and a spread of norms (inner product differs from cosine).
    const base = i % 17 === 0 && i > 0 ? seededRandom(`${seed}:${i - 1}`) : seededRandom(`${seed}:${i}`)
    const scale = 0.5 + r.next() * 2
    yield {
      tenantId,
      documentId: `d${i}`,
      chunkIndex: 0,
      content: `c${i}`,
      embedding: Array.from({ length: DIM }, () => base.gaussian() * scale),
    }
  }
}

describe('a tenant read whole for tuning', () => {
  for (const distance of ['cosine', 'l2', 'inner_product'] as const) {
    it(`reads the stored vectors and answers exactly as the server's exact scan does (${distance})`, async () => {
      const store = await PgVectorStore.open(t.db, { table: `tv_${distance}`, dimensions: DIM, distance, querySample: false })
      await store.bulkIngest(rows('a', 600, `tv:${distance}`))
      await store.bulkIngest(rows('b', 50, `tv:${distance}:other`))
      const tenant = await readTenantVectors(t.db, store.config, 'a', 'seed')
      expect(tenant.complete).toBe(true)
      expect(tenant.vectors).toHaveLength(600)
      // The stored vectors (4-byte floats): the same numbers as their text, whatever form was read.
      const stored = new Map<string, number[]>()
      for (const row of rows('a', 600, `tv:${distance}`))
        stored.set(
          row.documentId,
          Array.from(row.embedding, (x) => Math.fround(x)),
        )
      tenant.vectors.forEach((v, i) => {
        const want = stored.get(tenant.keys[i]!.documentId)!
        v.forEach((x, j) => expect(Math.abs(x - want[j]!)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want[j]!))))
      })
      const handle = store.forTenant('a')
      const q = seededRandom(`tv:${distance}:queries`)
      for (let i = 0; i < 25; i++) {
        const query = Array.from({ length: DIM }, () => q.gaussian())
        const mine = exactInMemory(tenant, query, 10, distance)
        const server = await handle.exactSearch(query, { k: 10 })
        // Same distances rank by rank (single vs double precision), and the same rows up to ties.
        mine.forEach((r, rank) => expect(r.distance).toBeCloseTo(server[rank]!.distance, 4))
        const kth = server.at(-1)!.distance
        const sure = (rs: ReadonlyArray<{ documentId: string; distance: number }>) =>
          rs
            .filter((r) => r.distance < kth - 1e-4)
            .map((r) => r.documentId)
            .sort()
        expect(sure(mine)).toEqual(sure(server))
      }
    })
  }

  it('a tenant too large to read whole is read in part, and exact answers from that part are refused (typed)', async () => {
    // One row more than fits: 1,001 chunks of 4,000 dimensions against 4,000,000 numbers.
    const dim = 4000
    const store = await PgVectorStore.open(t.db, { table: 'tv_part', dimensions: dim, querySample: false })
    const r = seededRandom('tv:part')
    const count = IN_MEMORY_NUMBERS / dim + 1
    await store.bulkIngest(
      Array.from({ length: count }, (_, i) => ({
        tenantId: 'big',
        documentId: `d${i}`,
        chunkIndex: 0,
        content: 'x',
        embedding: Array.from({ length: dim }, () => r.gaussian()),
      })),
    )
    const tenant = await readTenantVectors(t.db, store.config, 'big', 'seed')
    expect(tenant.complete).toBe(false)
    expect(tenant.vectors).toHaveLength(count)
    const query = Array.from({ length: dim }, () => r.gaussian())
    expect(() => exactInMemory(tenant, query, 10, 'cosine')).toThrow(InvalidArgumentError)
    await expect(exactAnswersInMemory(store.forTenant('big'), store.config, tenant, [query], 10)).rejects.toThrow(/whole tenant/)
  })

  it('decodes pgvector binary vectors from bytes or hex text; anything else is refused', () => {
    const bytes = Buffer.from('0002000040400000bf800000', 'hex')
    expect(vectorFromBinary(bytes)).toEqual([3, -1])
    expect(vectorFromBinary(new Uint8Array(bytes))).toEqual([3, -1])
    expect(vectorFromBinary('\\x0002000040400000bf800000')).toEqual([3, -1])
    expect(() => vectorFromBinary('[3,-1]')).toThrow(TypeError)
    expect(() => vectorFromBinary(Buffer.from('0003000040400000bf800000', 'hex'))).toThrow(/3 dimensions has 12 bytes/)
  })
})
