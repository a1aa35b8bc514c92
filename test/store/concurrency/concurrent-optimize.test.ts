import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect } from 'vitest'
import { connect, PgVectorStore, type Database } from '../../../src/index.js'
import { generateCorpus, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { itWithServer } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * Two processes' optimize() at once on one store (same tenant indexes, same tuning rows), plain and
 * concurrent builds: both succeed, each index exists once and is valid, each tenant has one tuning.
 */
const t = useTestDatabase()
const spec: CorpusSpec = {
  seed: 'two-optimizers',
  dim: 16,
  tenants: [
    { id: 'big-a', chunks: 1500 },
    { id: 'big-b', chunks: 1200 },
    { id: 'small', chunks: 50 },
  ],
}
let a: Database
let b: Database

beforeAll(async () => {
  if (!t.url) return
  ;[a, b] = [await connect(t.url), await connect(t.url)]
})
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()])
})

describe('two optimize() at once', () => {
  for (const concurrently of [false, true]) {
    itWithServer(t.target)(`build the same tenant indexes and write the same tuning (concurrently: ${concurrently})`, async () => {
      const table = `two_opt_${concurrently ? 'cic' : 'plain'}`
      const storeA = await PgVectorStore.open(a, { table, dimensions: spec.dim })
      const storeB = await PgVectorStore.open(b, { table, dimensions: spec.dim })
      await storeA.bulkIngest(generateCorpus(spec))
      const options = { ownIndexAbove: 1000, concurrently, tuning: { maxLatencyMs: 10_000, sample: 20 } }
      const [ra, rb] = await Promise.all([storeA.optimize(options), storeB.optimize(options)])
      const indexed = [
        ...ra.built,
        ...ra.alreadyIndexed.map((tenantId) => ({ tenantId })),
        ...rb.built,
        ...rb.alreadyIndexed.map((tenantId) => ({ tenantId })),
      ]
      expect(new Set(indexed.map((x) => x.tenantId))).toEqual(new Set(['big-a', 'big-b']))
      const { rows } = await sql<{ name: string; valid: boolean }>`
        select c.relname as name, x.indisvalid as valid from pg_index x join pg_class c on c.oid = x.indexrelid
        join pg_am am on am.oid = c.relam where x.indrelid = ${table}::regclass and am.amname = 'hnsw' order by 1`.execute(t.db)
      expect(rows).toHaveLength(2)
      expect(rows.every((r) => r.valid)).toBe(true)
      const tuning = await storeA.tenantTuning()
      expect(tuning.map((x) => x.tenantId).sort()).toEqual(['big-a', 'big-b'])
      expect(tuning.every((x) => x.recall >= 0.98 || x.exact)).toBe(true)
    })
  }

  itWithServer(t.target)('both drop the unused shared index (dropUnusedSharedIndex): it is gone, neither fails', async () => {
    const table = 'two_opt_drop_shared'
    const storeA = await PgVectorStore.open(a, { table, dimensions: spec.dim })
    const storeB = await PgVectorStore.open(b, { table, dimensions: spec.dim })
    await storeA.bulkIngest(generateCorpus(spec))
    await storeA.createIndex()
    const shared = async () => {
      const { rows } = await sql<{ name: string }>`
        select c.relname as name from pg_index x join pg_class c on c.oid = x.indexrelid join pg_am am on am.oid = c.relam
        where x.indrelid = ${table}::regclass and am.amname = 'hnsw' and x.indpred is null`.execute(t.db)
      return rows.map((r) => r.name)
    }
    expect(await shared()).toHaveLength(1)
    const options = {
      ownIndexAbove: 1000,
      minOwnIndex: 10,
      concurrently: true,
      dropUnusedSharedIndex: true,
      tuning: { maxLatencyMs: 10_000, sample: 20 },
    }
    const [ra, rb] = await Promise.all([storeA.optimize(options), storeB.optimize(options)])
    expect(await shared()).toEqual([])
    expect([...ra.notes, ...rb.notes].some((n) => /It was dropped/.test(n))).toBe(true)
  })
})
