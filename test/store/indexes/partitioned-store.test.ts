import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { explain, indexesUsed, InvalidArgumentError, PgVectorStore, SchemaMismatchError } from '../../../src/index.js'
import { renderStatements, tenantIndexName } from '../../../src/bench-kit.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * A store hash-partitioned by tenant (`partitions: N`) answers exactly like the same store in one
 * table, keeps each tenant's index on its tenant's partition, and plans against that partition only.
 */
const t = useTestDatabase()
const spec: CorpusSpec = {
  seed: 'partitions',
  dim: 16,
  topics: 'shared',
  tenants: [
    { id: 'large-a', chunks: 1500 },
    { id: 'large-b', chunks: 1200 },
    ...Array.from({ length: 10 }, (_, i) => ({ id: `small-${i}`, chunks: 40 })),
  ],
}
let parted: PgVectorStore
let single: PgVectorStore

async function partitionOf(relation: string): Promise<string> {
  const { rows } = await sql<{
    part: string
  }>`select indrelid::regclass::text as part from pg_index where indexrelid = ${relation}::regclass`.execute(t.db)
  return rows[0]!.part
}

beforeAll(async () => {
  parted = await PgVectorStore.open(t.db, { table: 'parted_chunks', dimensions: spec.dim, partitions: 4 })
  single = await PgVectorStore.open(t.db, { table: 'single_chunks', dimensions: spec.dim })
  await parted.bulkIngest(generateCorpus(spec))
  await single.bulkIngest(generateCorpus(spec))
})

describe('a partitioned store', () => {
  it('is a table hash-partitioned by tenant into the partitions asked for, every row in its tenant’s partition', async () => {
    const { rows } = await sql<{ partitions: number; strategy: string }>`
      select (select count(*)::int from pg_inherits where inhparent = 'parted_chunks'::regclass) as partitions,
        (select partstrat::text from pg_partitioned_table where partrelid = 'parted_chunks'::regclass) as strategy`.execute(t.db)
    expect(rows[0]).toEqual({ partitions: 4, strategy: 'h' })
    const { rows: spread } = await sql<{ tenant_id: string; parts: number }>`
      select tenant_id, count(distinct tableoid)::int as parts from parted_chunks group by 1`.execute(t.db)
    expect(spread.every((r) => r.parts === 1)).toBe(true)
    const stats = await parted.stats()
    expect(stats.rows).toBe(1500 + 1200 + 400)
    expect(stats.bytes.heap).toBeGreaterThan(0)
    expect(stats.bytes.indexes.parted_chunks_pkey).toBeGreaterThan(0)
  })

  it('answers search, exactSearch and hybridSearch exactly like the same data in one table', async () => {
    for (const tenant of ['large-a', 'small-3']) {
      const texts = queryTexts(spec, tenant, 3)
      for (const [i, q] of queryVectors(spec, tenant, 3).entries()) {
        expect(await parted.forTenant(tenant).exactSearch(q, { k: 10 })).toEqual(await single.forTenant(tenant).exactSearch(q, { k: 10 }))
        expect(await parted.forTenant(tenant).search(q, { k: 10 })).toEqual(await single.forTenant(tenant).search(q, { k: 10 }))
        const hybrid = { embedding: q, text: texts[i]!, k: 5 }
        expect(await parted.forTenant(tenant).hybridSearch(hybrid)).toEqual(await single.forTenant(tenant).hybridSearch(hybrid))
      }
    }
  })

  it('optimize builds each large tenant’s index on its own partition; its search plans only that partition and uses it', async () => {
    const report = await parted.optimize({ ownIndexAbove: 1000, targetRecall: null })
    expect(report.built.map((b) => b.tenantId).sort()).toEqual(['large-a', 'large-b'])
    for (const tenant of ['large-a', 'large-b']) {
      const index = tenantIndexName('parted_chunks', tenant)
      const { rows } = await sql<{
        part: string
      }>`select tableoid::regclass::text as part from parted_chunks where tenant_id = ${tenant} limit 1`.execute(t.db)
      expect(await partitionOf(index)).toBe(rows[0]!.part)
      const q = queryVectors(spec, tenant, 1)[0]!
      const plan = await explain(t.db, renderStatements(parted.config).search, [tenant, `[${Array.from(q).join(',')}]`, 10])
      expect(indexesUsed(plan)).toContain(index)
      const scanned = JSON.stringify(plan).match(/"Relation Name":"[^"]+"/g) ?? []
      expect(new Set(scanned)).toEqual(new Set([`"Relation Name":"${rows[0]!.part}"`]))
    }
    expect((await parted.stats()).bytes.indexes[tenantIndexName('parted_chunks', 'large-a')]).toBeGreaterThan(0)
  })

  it('replaceDocument and deleteDocument write the tenant’s partition, and answers still match the single table', async () => {
    for (const store of [parted, single]) {
      await store
        .forTenant('small-1')
        .replaceDocument('small-1/doc-0', [
          { content: 'rewritten', embedding: Array.from({ length: spec.dim }, (_, i) => (i === 0 ? 1 : 0)) },
        ])
      await store.forTenant('large-b').deleteDocument('large-b/doc-3')
    }
    const q = Array.from({ length: spec.dim }, (_, i) => (i === 0 ? 1 : 0.01))
    expect(await parted.forTenant('small-1').exactSearch(q, { k: 5 })).toEqual(await single.forTenant('small-1').exactSearch(q, { k: 5 }))
    const count = async (table: string) =>
      (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where tenant_id = 'large-b'`.execute(t.db)).rows[0]!.n
    expect(await count('parted_chunks')).toBe(await count('single_chunks'))
  })

  it("a 'rebuild' load drops and rebuilds the partitioned and per-partition indexes, all valid on every partition", async () => {
    await parted.createIndex()
    const before = await sql<{ name: string }>`
      select c.relname as name from pg_class c join pg_index x on x.indexrelid = c.oid
      where x.indrelid in (select relid from pg_partition_tree('parted_chunks')) order by 1`.execute(t.db)
    const more: CorpusSpec = { ...spec, seed: 'more', tenants: [{ id: 'late', chunks: 200 }] }
    const result = await parted.bulkIngest(generateCorpus(more), { indexStrategy: 'rebuild' })
    expect(result.rebuiltIndexes.length).toBeGreaterThanOrEqual(4) // shared, GIN, two tenant indexes
    const after = await sql<{ name: string; valid: boolean }>`
      select c.relname as name, x.indisvalid as valid from pg_class c join pg_index x on x.indexrelid = c.oid
      where x.indrelid in (select relid from pg_partition_tree('parted_chunks')) order by 1`.execute(t.db)
    expect(after.rows.length).toBe(before.rows.length)
    expect(after.rows.every((r) => r.valid)).toBe(true)
    expect(await partitionOf(tenantIndexName('parted_chunks', 'large-a'))).toMatch(/^parted_chunks_p\d$/)
  })

  it('two processes opening a new partitioned store at once: one table, every partition, both handles work', async () => {
    const open = () => PgVectorStore.open(t.db, { table: 'parted_twice', dimensions: spec.dim, partitions: 3 })
    const [a, b] = await Promise.all([open(), open()])
    const { rows } = await sql<{
      n: number
    }>`select count(*)::int as n from pg_inherits where inhparent = 'parted_twice'::regclass`.execute(t.db)
    expect(rows[0]!.n).toBe(3)
    await a.forTenant('x').replaceDocument('d', [{ content: 'a', embedding: new Array<number>(spec.dim).fill(0.5) }])
    expect(await b.forTenant('x').exactSearch(new Array<number>(spec.dim).fill(0.5), { k: 1 })).toHaveLength(1)
  })

  it("two 'rebuild' loads at once both land; one that fails after its drops leaves rows, indexes and pool as they were", async () => {
    const indexes = async () =>
      (
        await sql<{ name: string; valid: boolean }>`
          select c.relname as name, x.indisvalid as valid from pg_class c join pg_index x on x.indexrelid = c.oid
          where x.indrelid in (select relid from pg_partition_tree('parted_chunks')) order by 1`.execute(t.db)
      ).rows
    const count = async () => (await sql<{ n: number }>`select count(*)::int as n from parted_chunks`.execute(t.db)).rows[0]!.n
    const before = await indexes()
    const rowsBefore = await count()
    const load = (tenant: string) =>
      parted.bulkIngest(generateCorpus({ ...spec, seed: tenant, tenants: [{ id: tenant, chunks: 100 }] }), { indexStrategy: 'rebuild' })
    const [x, y] = await Promise.all([load('twin-1'), load('twin-2')])
    expect([x.rows, y.rows]).toEqual([100, 100])
    expect(await indexes()).toEqual(before)
    const bad = [...generateCorpus({ ...spec, seed: 'bad', tenants: [{ id: 'bad', chunks: 40 }] })]
    bad[20] = { ...bad[20]!, embedding: new Array<number>(spec.dim).fill(Number.NaN) }
    await expect(parted.bulkIngest(bad, { indexStrategy: 'rebuild' })).rejects.toThrow()
    expect(await indexes()).toEqual(before)
    expect(await count()).toBe(rowsBefore + 200)
    expect((await parted.bulkIngest(bad.slice(0, 20), { indexStrategy: 'rebuild' })).rows).toBe(20)
  })

  it('reopening with other partitions is a SchemaMismatchError; a bad count is refused before anything is created', async () => {
    await expect(PgVectorStore.open(t.db, { table: 'parted_chunks', dimensions: spec.dim, partitions: 8 })).rejects.toBeInstanceOf(
      SchemaMismatchError,
    )
    await expect(PgVectorStore.open(t.db, { table: 'parted_chunks', dimensions: spec.dim })).rejects.toThrow(
      /partitions is 4, configured 0/,
    )
    for (const partitions of [1, 1025, 2.5]) {
      await expect(PgVectorStore.open(t.db, { table: 'never_parted', dimensions: 4, partitions })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      )
    }
    const { rows } = await sql<{ present: boolean }>`select to_regclass('never_parted') is not null as present`.execute(t.db)
    expect(rows[0]!.present).toBe(false)
  })
})
