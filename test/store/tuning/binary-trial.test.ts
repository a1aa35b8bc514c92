import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { countRecall, PgVectorStore, type Database } from '../../../src/index.js'
import { tenantTrialIndexName, tryBinaryRerank, type BinaryTrialContext } from '../../../src/bench-kit.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * Binary quantization with re-rank tried by the tuner on one tenant of a full-vector store (#42
 * item 5): a binary index of the tenant built beside its own, the tuning queries measured through
 * it, the index dropped — whatever happens. Its figures are checked against what a store created
 * binary-quantized delivers on the same rows (another path: the store's own binary search).
 */
const t = useTestDatabase()
const DIM = 64
const spec: CorpusSpec = {
  seed: 'binary-trial',
  dim: DIM,
  topics: 'per-tenant',
  topicsPerTenant: 12,
  tenants: [
    { id: 'big', chunks: 2000 },
    { id: 'small', chunks: 300 },
  ],
}
const TABLE = 'trial_chunks'

async function indexNames(table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = ${table} order by 1`.execute(t.db)
  return rows.map((r) => r.name)
}

describe('the binary trial', () => {
  let store: PgVectorStore
  let input: Omit<BinaryTrialContext, 'hnswP50Ms'>
  const queries = queryVectors(spec, 'big', 60)

  beforeAll(async () => {
    store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: DIM, querySample: false })
    await store.bulkIngest(generateCorpus(spec))
    await store.createTenantIndex('big')
    const truth = []
    for (const q of queries) truth.push(await store.forTenant('big').exactSearch(q, { k: 10 }))
    input = {
      db: t.db as Database,
      searchDb: t.db as Database,
      config: store.config,
      tenantId: 'big',
      queries,
      truth,
      steps: [40, 100, 200, 400, 800],
      judge: (perQuery) => {
        const mean = perQuery.reduce((a, b) => a + b, 0) / perQuery.length
        return { ok: mean >= 0.95, lower: mean, mean, queries: perQuery.length }
      },
      boundMs: 60_000,
      build: {},
    }
  }, 300_000)

  it('measures the tenant through a binary index, drops it, and reports what a binary-quantized store of the same rows delivers', async () => {
    const before = await indexNames(TABLE)
    const tried = await tryBinaryRerank({ ...input, hnswP50Ms: 1e9 })
    expect(await indexNames(TABLE)).toEqual(before)
    expect(tried.kind).toBe('binary-rerank')
    expect(tried.buildSeconds).toBeGreaterThan(0)
    expect(tried.outcome).toBe('faster') // 64 dimensions, 12 topics: re-rank finds the target
    expect(tried.reason).toMatch(/quantization: 'binary'/)
    // The same rows in a store created binary-quantized, at the trial's re-rank and ef_search.
    const binary = await PgVectorStore.open(t.db, {
      table: 'trial_binary_chunks',
      dimensions: DIM,
      querySample: false,
      index: { quantization: 'binary', rerank: tried.rerank! },
    })
    await binary.bulkIngest(generateCorpus(spec))
    await binary.createTenantIndex('big')
    let hits = 0
    let expected = 0
    for (const [i, q] of queries.entries()) {
      const c = countRecall(
        input.truth[i]!,
        await binary.forTenant('big').search(q, { k: 10, efSearch: tried.efSearch!, exactFallback: false }),
      )
      hits += c.hits
      expected += c.expected
    }
    // Two graphs of the same rows (HNSW levels are random): within a few points of each other.
    expect(Math.abs(hits / expected - tried.recall!)).toBeLessThanOrEqual(0.05)
    // Slower than the full-vector setting it is compared with: `slower`, with both figures.
    const slower = await tryBinaryRerank({ ...input, hnswP50Ms: 1e-6 })
    expect(slower.outcome).toBe('slower')
    expect(slower.reason).toMatch(/slower than the full-vector index/)
  })

  it('an index a dead trial left is dropped by the next; a search failing mid-trial drops its index and rethrows', async () => {
    const name = tenantTrialIndexName(TABLE, 'big')
    await sql.raw(`create index "${name}" on ${TABLE} (chunk_index) where tenant_id = 'big'`).execute(t.db)
    const failing = Object.create(t.db) as Database
    let searches = 0
    failing.queryWithSettings = async () => {
      if (++searches > 3) throw new Error('connection lost')
      return []
    }
    await expect(tryBinaryRerank({ ...input, searchDb: failing, hnswP50Ms: undefined })).rejects.toThrow('connection lost')
    expect(searches).toBe(4)
    expect(await indexNames(TABLE)).not.toContain(name)
    // A trial whose searches return nothing misses the target, and still leaves nothing behind.
    const empty = Object.create(t.db) as Database
    empty.queryWithSettings = async () => []
    const missed = await tryBinaryRerank({ ...input, searchDb: empty, hnswP50Ms: undefined })
    expect(missed).toMatchObject({ kind: 'binary-rerank', outcome: 'missed the target', efSearch: null })
    expect(await indexNames(TABLE)).not.toContain(name)
  })

  for (const concurrently of [true, false]) {
    it(`two trials of one tenant at once (concurrently: ${concurrently}) take turns: no deadlock, every search through a whole trial index, nothing left`, async () => {
      const name = tenantTrialIndexName(TABLE, 'big')
      const before = await indexNames(TABLE)
      const spans: Array<{ trial: number; at: number }> = []
      let missing = 0
      // Each trial's searches, recorded: which trial searched when, and whether its index was there.
      const watched = (trial: number) => {
        const db = Object.create(t.db) as Database
        db.queryWithSettings = async (...args: Parameters<Database['queryWithSettings']>) => {
          const { rows } = await sql<{ valid: boolean | null }>`
            select (select indisvalid from pg_index where indexrelid = to_regclass(${name})) as valid`.execute(t.db)
          if (rows[0]?.valid !== true) missing++
          spans.push({ trial, at: spans.length })
          return t.db.queryWithSettings(...(args as [any, any, any]))
        }
        return db
      }
      const [a, b] = await Promise.all(
        [0, 1].map((trial) => tryBinaryRerank({ ...input, searchDb: watched(trial), build: { concurrently }, hnswP50Ms: 1e9 })),
      )
      expect(a!.outcome).toBe('faster')
      expect(b!.outcome).toBe('faster')
      expect(missing).toBe(0)
      // One trial's searches all come before the other's: they took turns.
      const order = spans.map((s) => s.trial)
      const switches = order.filter((x, i) => i > 0 && x !== order[i - 1]).length
      expect(switches).toBe(1)
      expect(await indexNames(TABLE)).toEqual(before)
    })
  }
})
