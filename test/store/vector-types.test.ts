import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { explain, indexesUsed, InvalidArgumentError, PgVectorStore } from '../../src/index.js'
import { renderStatements, storeIndexNames, tenantIndexName, toVectorLiteral } from '../../src/bench-kit.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../support/test-database.js'

/** halfvec columns, halfvec and binary quantized indexes: round trips, bad input, plans, re-ranking. */
const t = useTestDatabase()
const DIM = 16
const spec: CorpusSpec = {
  seed: 'vector-types',
  dim: DIM,
  topics: 'shared',
  tenants: [
    { id: 'big', chunks: 3000 },
    { id: 'small', chunks: 60 },
  ],
}

async function indexDefinition(name: string): Promise<string> {
  const { rows } = await sql<{ def: string }>`select pg_get_indexdef(${name}::regclass) as def`.execute(t.db)
  return rows[0]!.def
}

describe('vector literals on the server', () => {
  it('pgvector reads every literal value back as the 4-byte float it came from (seeded, extremes, subnormals)', async () => {
    let seed = 11
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31)
    const values = Float32Array.from({ length: 4_000 }, (_, i) => (next() - 0.5) * 10 ** ((i % 76) - 38))
    values.set([1, -1, 0.1, 1 / 3, 3.4028234663852886e38, -3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38, 16777217])
    const { rows } = await sql<{ v: number[] }>`select (${toVectorLiteral(values)}::vector)::real[] as v`.execute(t.db)
    const back = Float32Array.from(rows[0]!.v.map(Number))
    expect(Array.from(back)).toEqual(Array.from(values))
    // A float64 input is stored as its nearest 4-byte float, the value Math.fround gives.
    const doubles = Array.from({ length: 500 }, () => (next() - 0.5) * 1e3)
    const { rows: d } = await sql<{ v: number[] }>`select (${toVectorLiteral(doubles)}::vector)::real[] as v`.execute(t.db)
    expect(d[0]!.v.map((x) => Math.fround(Number(x)))).toEqual(doubles.map((x) => Math.fround(x)))
  })
})

describe('vectorType: halfvec', () => {
  let store: PgVectorStore
  beforeAll(async () => {
    store = await PgVectorStore.open(t.db, { table: 'half_chunks', dimensions: DIM, vectorType: 'halfvec' })
  })

  it('stores halfvec(D); binary COPY and the text path store the same 2-byte values the server makes of the input', async () => {
    const { rows } = await sql<{ type: string }>`select format_type(atttypid, atttypmod) as type from pg_attribute
      where attrelid = 'half_chunks'::regclass and attname = 'embedding'`.execute(t.db)
    expect(rows[0]!.type).toBe('halfvec(16)')
    // Values that need rounding to half precision, ties included, a subnormal, the largest finite.
    const values = [1, -2, 0.1, 1 / 3, 65504, -65504, 6e-8, 1.00048828125, 1.000732421875, 2049, 0.333, 1e-3, 7, -0.5, 3.14159, 100.1]
    await store.bulkIngest([{ tenantId: 'x', documentId: 'copy', chunkIndex: 0, content: 'c', embedding: values }])
    await store.forTenant('x').replaceDocument('text', [{ content: 't', embedding: values }])
    const { rows: stored } = await sql<{ document_id: string; v: string; expected: string }>`
      select document_id, embedding::text as v, ${toVectorLiteral(values)}::halfvec::text as expected
      from half_chunks where tenant_id = 'x' order by 1`.execute(t.db)
    expect(stored.map((r) => r.document_id)).toEqual(['copy', 'text'])
    for (const r of stored) expect(r.v).toBe(r.expected)
  })

  it('a value beyond ±65,504 is a typed error on every path, and nothing is written', async () => {
    const bad = Array.from({ length: DIM }, (_, i) => (i === 3 ? 70_000 : 1))
    await expect(store.bulkIngest([{ tenantId: 'y', documentId: 'd', chunkIndex: 0, content: 'c', embedding: bad }])).rejects.toThrow(
      /embedding\[3\] is 70000, beyond halfvec's 2-byte float \(±65504\)/,
    )
    await expect(store.forTenant('y').replaceDocument('d', [{ content: 'c', embedding: bad }])).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(store.forTenant('y').search(bad)).rejects.toBeInstanceOf(InvalidArgumentError)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from half_chunks where tenant_id = 'y'`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
  })

  it("eight concurrent replaces of one document leave exactly one writer's whole version", async () => {
    const version = (w: number) =>
      Array.from({ length: 2 + w }, (_, i) => ({
        content: `w${w}-c${i}`,
        embedding: Array.from({ length: DIM }, (_, d) => (d === w ? 1 : 0.01 * i)),
      }))
    await Promise.all(Array.from({ length: 8 }, (_, w) => store.forTenant('race').replaceDocument('doc', version(w))))
    const { rows } = await sql<{ content: string }>`
      select content from half_chunks where tenant_id = 'race' and document_id = 'doc' order by chunk_index`.execute(t.db)
    const writers = new Set(rows.map((r) => r.content.split('-')[0]))
    expect(writers.size).toBe(1)
    const w = Number([...writers][0]!.slice(1))
    expect(rows.map((r) => r.content)).toEqual(version(w).map((c) => c.content))
  })

  it('builds a halfvec HNSW index, and search uses it with exact distances', async () => {
    await store.bulkIngest(generateCorpus(spec))
    await store.createTenantIndex('big')
    expect(await indexDefinition(tenantIndexName('half_chunks', 'big'))).toMatch(/USING hnsw \(embedding halfvec_cosine_ops\)/)
    await sql`analyze half_chunks`.execute(t.db)
    const q = queryVectors(spec, 'big', 1)[0]!
    const plan = await explain(t.db, renderStatements(store.config).search, ['big', toVectorLiteral(q), 10])
    expect(indexesUsed(plan)).toContain(tenantIndexName('half_chunks', 'big'))
    const hits = await store.forTenant('big').search(q, { k: 10 })
    const exact = await store.forTenant('big').exactSearch(q, { k: 10 })
    expect(hits).toHaveLength(10)
    expect(hits[0]!.distance).toBeCloseTo(exact[0]!.distance, 6)
  })
})

describe('index quantization on a vector column', () => {
  let half: PgVectorStore
  let binary: PgVectorStore
  beforeAll(async () => {
    half = await PgVectorStore.open(t.db, { table: 'q_half', dimensions: DIM, index: { quantization: 'halfvec' } })
    binary = await PgVectorStore.open(t.db, { table: 'q_binary', dimensions: DIM, index: { quantization: 'binary', rerank: 5 } })
    for (const s of [half, binary]) {
      await s.bulkIngest(generateCorpus(spec))
      // The binary store gets no shared index: with both, the planner chose the shared bit index
      // for 'big' (a filtered walk), not its partial one.
      if (s === half) await s.createIndex()
      await s.createTenantIndex('big')
      await sql`analyze ${sql.raw(s.config.qualified)}`.execute(t.db)
    }
  })

  it("'halfvec' indexes embedding::halfvec(D); the plan uses it; the column stays vector", async () => {
    expect(await indexDefinition(storeIndexNames('q_half').sharedHnsw)).toMatch(
      /USING hnsw \(\(\(embedding\)::halfvec\(16\)\) halfvec_cosine_ops\)/,
    )
    const q = queryVectors(spec, 'big', 1)[0]!
    const plan = await explain(t.db, renderStatements(half.config).search, ['big', toVectorLiteral(q), 10])
    expect(indexesUsed(plan)).toContain(tenantIndexName('q_half', 'big'))
    const { rows } = await sql<{ type: string }>`select format_type(atttypid, atttypmod) as type from pg_attribute
      where attrelid = 'q_half'::regclass and attname = 'embedding'`.execute(t.db)
    expect(rows[0]!.type).toBe('vector(16)')
  })

  it("'binary' indexes binary_quantize(embedding)::bit(D) with Hamming distance; the plan uses it", async () => {
    expect(await indexDefinition(tenantIndexName('q_binary', 'big'))).toMatch(
      /USING hnsw \(\(\(binary_quantize\(embedding\)\)::bit\(16\)\) bit_hamming_ops\) WITH .* WHERE \(tenant_id = 'big'::text\)/,
    )
    const q = queryVectors(spec, 'big', 1)[0]!
    const plan = await explain(t.db, renderStatements(binary.config).search, ['big', toVectorLiteral(q), 10])
    expect(indexesUsed(plan)).toContain(tenantIndexName('q_binary', 'big'))
  })

  it('binary search re-ranks rerank × k candidates by the exact distance: the result is the exact order among them', async () => {
    const k = 10
    for (const q of queryVectors(spec, 'big', 5)) {
      const hits = await binary.forTenant('big').search(q, { k })
      expect(hits).toHaveLength(k)
      // The candidates the index handed over, read the same way the search reads them.
      const literal = toVectorLiteral(q)
      const candidates = await t.db.transaction(
        async (trx) =>
          (
            await sql<{ documentId: string; chunkIndex: number; distance: number }>`
              select document_id as "documentId", chunk_index as "chunkIndex", embedding <=> ${literal}::vector as distance
              from q_binary where tenant_id = 'big'
              order by binary_quantize(embedding)::bit(16) <~> binary_quantize(${literal}::vector)::bit(16)
              limit ${k * 5}`.execute(trx)
          ).rows,
        { settings: { 'hnsw.ef_search': binary.config.defaultEfSearch, 'hnsw.iterative_scan': 'relaxed_order' } },
      )
      expect(candidates).toHaveLength(k * 5)
      const best = [...candidates].sort((a, b) => a.distance - b.distance).slice(0, k)
      expect(hits.map((h) => `${h.documentId}#${h.chunkIndex}`)).toEqual(best.map((b) => `${b.documentId}#${b.chunkIndex}`))
      for (let i = 1; i < hits.length; i++) expect(hits[i]!.distance).toBeGreaterThanOrEqual(hits[i - 1]!.distance)
    }
  })

  it('a tenant no index serves is answered exactly, not from its Hamming-nearest rows', async () => {
    // 'small' has no index of its own and the binary store no shared one: ordering its rows by
    // Hamming distance and re-ranking 50 of them would miss true neighbours.
    for (const q of queryVectors(spec, 'small', 5)) {
      expect(await binary.forTenant('small').search(q, { k: 10 })).toEqual(await binary.forTenant('small').exactSearch(q, { k: 10 }))
    }
  })

  it('tiers and recall tuning work on quantized indexes: optimize() tunes the binary-indexed tenant to the target', async () => {
    for (const store of [half, binary]) {
      const report = await store.optimize({ ownIndexAbove: 1000, tuning: { sample: 40 } })
      expect(report.alreadyIndexed).toContain('big')
      const big = report.tuning.tenants.find((x) => x.tenantId === 'big')!
      expect(big.path === 'exact' || big.recall >= big.requiredOnSample).toBe(true)
    }
  })

  it('exactSearch stays exact on the full vectors, whatever the index holds', async () => {
    const q = queryVectors(spec, 'small', 1)[0]!
    expect(await binary.forTenant('small').exactSearch(q, { k: 10 })).toEqual(await half.forTenant('small').exactSearch(q, { k: 10 }))
  })
})

describe('vector options', () => {
  it('bad values are refused before anything is created', async () => {
    const bad = [
      { vectorType: 'float16' },
      { index: { quantization: 'pq' } },
      { index: { quantization: 'binary', rerank: 0 } },
      { index: { quantization: 'binary', rerank: 2.5 } },
    ]
    for (const extra of bad) {
      await expect(PgVectorStore.open(t.db, { table: 'never_typed', dimensions: DIM, ...(extra as object) })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      )
    }
    const { rows } = await sql<{ present: boolean }>`select to_regclass('never_typed') is not null as present`.execute(t.db)
    expect(rows[0]!.present).toBe(false)
  })

  it('a store recorded before these options opens unchanged; other options on an existing table are a SchemaMismatchError', async () => {
    await PgVectorStore.open(t.db, { table: 'old_vectors', dimensions: DIM })
    await sql`update pgscale_object_version set config = config - 'vectorType' - 'quantization' where object = 'store:public.old_vectors'`.execute(
      t.db,
    )
    const reopened = await PgVectorStore.open(t.db, { table: 'old_vectors', dimensions: DIM })
    expect(reopened.config).toMatchObject({ vectorType: 'vector', quantization: 'none' })
    await expect(PgVectorStore.open(t.db, { table: 'old_vectors', dimensions: DIM, vectorType: 'halfvec' })).rejects.toThrow(
      /vectorType is "vector", configured "halfvec"/,
    )
    await expect(PgVectorStore.open(t.db, { table: 'old_vectors', dimensions: DIM, index: { quantization: 'binary' } })).rejects.toThrow(
      /quantization is "none", configured "binary"/,
    )
  })
})
