import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { connect, DatabaseError, IndexBuildError, PgVectorStore } from '../../../src/index.js'
import { capBuildMemory, explainBuildFailure } from '../../../src/bench-kit.js'
import { generateCorpus, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { itUnless, NEEDS_SERVER } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'

const t = useTestDatabase()
const spec: CorpusSpec = {
  seed: 'lifecycle',
  dim: 64,
  tenants: [
    { id: 'a', chunks: 3000 },
    { id: 'b', chunks: 1000 },
  ],
}
let store: PgVectorStore

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'life_chunks', dimensions: spec.dim })
  await store.bulkIngest(generateCorpus(spec))
})

async function hnswIndexes(): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
    where x.indrelid = 'life_chunks'::regclass and am.amname = 'hnsw' order by 1`.execute(t.db)
  return rows.map((r) => r.name)
}

describe('index lifecycle', () => {
  it('warns with the number to raise maintenance_work_mem to when the graph did not fit', async () => {
    const result = await store.createIndex({ maintenanceWorkMem: '1MB', parallelWorkers: 0 })
    expect(result.built).toBe(true)
    expect(result.bytes).toBeGreaterThan(1024 * 1024)
    expect(result.warnings.join(' ')).toMatch(/maintenance_work_mem \(1MB\).*Set maintenanceWorkMem to at least \d+MB/)
    const { rows } = await sql<{ v: string }>`select current_setting('maintenance_work_mem') as v`.execute(t.db)
    expect(rows[0]?.v).not.toBe('1MB')
  })

  it("caps a build's maintenance_work_mem where the database keeps large builds' memory (PGlite), and only there", async () => {
    const cap = t.db.capabilities.maxBuildMemoryMb
    const asked = await capBuildMemory(t.db, { maintenance_work_mem: '1GB', max_parallel_maintenance_workers: 0 })
    const byDefault = await capBuildMemory(t.db, {})
    if (cap === undefined) {
      expect(asked).toEqual({ settings: { maintenance_work_mem: '1GB', max_parallel_maintenance_workers: 0 } })
      expect(byDefault).toEqual({ settings: {} })
    } else {
      expect(asked.settings).toEqual({ maintenance_work_mem: `${cap}MB`, max_parallel_maintenance_workers: 0 })
      expect(asked.warning).toMatch(/1GB was lowered to \d+MB/)
      // PGlite's default (64MB) is already past the cap: lowered without a warning.
      expect(byDefault).toEqual({ settings: { maintenance_work_mem: `${cap}MB` } })
      const built = await store.createTenantIndex('b', { maintenanceWorkMem: '1GB' })
      expect(built.built).toBe(true)
      expect(built.warnings.join(' ')).toMatch(/lowered to/)
      await sql.raw(`drop index ${built.index}`).execute(t.db)
    }
    const small = await capBuildMemory(t.db, { maintenance_work_mem: '16MB' })
    expect(small).toEqual({ settings: { maintenance_work_mem: '16MB' } })
  })

  it('createIndex on an existing index builds nothing', async () => {
    const again = await store.createIndex()
    expect(again).toMatchObject({ built: false, seconds: 0 })
  })

  it("bulkIngest with indexStrategy 'rebuild' drops the HNSW and full-text GIN indexes, loads, and rebuilds them in one transaction", async () => {
    await store.createTenantIndex('a')
    const before = await hnswIndexes()
    expect(before).toHaveLength(2)
    const more: CorpusSpec = { ...spec, seed: 'more', tenants: [{ id: 'c', chunks: 500 }] }
    const result = await store.bulkIngest(generateCorpus(more), { indexStrategy: 'rebuild' })
    expect(result.rows).toBe(500)
    expect(result.rebuiltIndexes.sort()).toEqual([...before, 'life_chunks_search_text_gin'].sort())
    expect(await hnswIndexes()).toEqual(before)
    const gin = await sql<{
      n: number
    }>`select count(*)::int as n from pg_indexes where tablename = 'life_chunks' and indexdef like '%USING gin%'`.execute(t.db)
    expect(gin.rows[0]?.n).toBe(1)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from life_chunks where tenant_id = 'c'`.execute(t.db)
    expect(rows[0]?.n).toBe(500)
  })

  it("two 'rebuild' loads at once both land, and the HNSW and GIN indexes are all there after", async () => {
    const before = await hnswIndexes()
    const load = (tenant: string) =>
      store.bulkIngest(generateCorpus({ ...spec, seed: `twin-${tenant}`, tenants: [{ id: tenant, chunks: 200 }] }), {
        indexStrategy: 'rebuild',
      })
    const [x, y] = await Promise.all([load('twin-1'), load('twin-2')])
    expect([x.rows, y.rows]).toEqual([200, 200])
    expect(await hnswIndexes()).toEqual(before)
    const { rows } = await sql<{ n: number; gin: number }>`
      select (select count(*)::int from life_chunks where tenant_id in ('twin-1', 'twin-2')) as n,
        (select count(*)::int from pg_indexes where tablename = 'life_chunks' and indexdef like '%USING gin%') as gin`.execute(t.db)
    expect(rows[0]).toEqual({ n: 400, gin: 1 })
  })

  it("a 'rebuild' load that fails after its indexes were dropped leaves the table, its indexes and the pool as they were", async () => {
    const before = await hnswIndexes()
    const { rows: count } = await sql<{ n: number }>`select count(*)::int as n from life_chunks`.execute(t.db)
    const rows = [...generateCorpus({ ...spec, seed: 'fails', tenants: [{ id: 'fails', chunks: 50 }] })]
    rows[30] = { ...rows[30]!, embedding: new Array<number>(spec.dim).fill(Number.NaN) }
    await expect(store.bulkIngest(rows, { indexStrategy: 'rebuild' })).rejects.toThrow()
    expect(await hnswIndexes()).toEqual(before)
    const { rows: after } = await sql<{ n: number; gin: number }>`
      select (select count(*)::int from life_chunks) as n,
        (select count(*)::int from pg_indexes where tablename = 'life_chunks' and indexdef like '%USING gin%') as gin`.execute(t.db)
    expect(after[0]).toEqual({ n: count[0]!.n, gin: 1 })
    // The pool's connections are usable: a load right after works.
    expect((await store.bulkIngest(rows.slice(0, 30), { indexStrategy: 'rebuild' })).rows).toBe(30)
  })

  it("indexStrategy 'auto' keeps the indexes for a small load", async () => {
    const more: CorpusSpec = { ...spec, seed: 'auto', tenants: [{ id: 'd', chunks: 100 }] }
    const result = await store.bulkIngest(generateCorpus(more), { expectedRows: 100 })
    expect(result.rebuiltIndexes).toEqual([])
  })

  it('a concurrent build works on every provider, its session settings are reset, and an INVALID leftover is rebuilt', async () => {
    const result = await store.createTenantIndex('b', { concurrently: true, maintenanceWorkMem: '77MB' })
    expect(result.built).toBe(true)
    const { rows } = await sql<{ v: string }>`select current_setting('maintenance_work_mem') as v`.execute(t.db)
    expect(rows[0]?.v).not.toBe('77MB')
    // What a concurrent build killed halfway leaves behind: an INVALID index of that name.
    await sql`update pg_index set indisvalid = false where indexrelid = ${result.index}::regclass`.execute(t.db)
    const rebuilt = await store.createTenantIndex('b', { concurrently: true })
    expect(rebuilt.built).toBe(true)
    const { rows: valid } = await sql<{
      valid: boolean
    }>`select indisvalid as valid from pg_index where indexrelid = ${result.index}::regclass`.execute(t.db)
    expect(valid[0]?.valid).toBe(true)
  })

  it('turns a shared-memory failure of a parallel build into an IndexBuildError that names the fix', () => {
    const serverError = new DatabaseError({
      message: 'could not resize shared memory segment "/PostgreSQL.1" to 1048576 bytes: No space left on device',
      code: '53100',
    })
    const mapped = explainBuildFailure(serverError, { maintenance_work_mem: '2GB', max_parallel_maintenance_workers: 2 })
    expect(mapped).toBeInstanceOf(IndexBuildError)
    expect((mapped as Error).message).toMatch(/shm_size: 1gb.*parallelWorkers: 0.*2GB/s)
    expect((mapped as Error).cause).toBe(serverError)
    const other = new DatabaseError({ message: 'x', code: '42P01' })
    expect(explainBuildFailure(other, {})).toBe(other)
  })
})

describe('the table maintenance lock of concurrent builds', () => {
  itUnless(
    !t.target.url
      ? NEEDS_SERVER
      : t.target.pooler && 'sets lock_timeout for its session at connect (a startup option), which a transaction pooler does not pass on',
  )(
    'a concurrent build that fails (lock_timeout) releases it: the next concurrent build on the table proceeds, no INVALID index, the pool healthy',
    async () => {
      const timed = await connect({ connectionString: t.url!, options: '-c lock_timeout=200' }, { maxConnections: 2 })
      const holder = await connect(t.url!, { maxConnections: 1 })
      try {
        const timedStore = await PgVectorStore.open(timed, { table: 'life_chunks', dimensions: spec.dim })
        // Another session's SHARE UPDATE EXCLUSIVE lock: the concurrent build cannot take its own.
        let release!: () => void
        const released = new Promise<void>((resolve) => (release = resolve))
        const held = holder.transaction(async (trx) => {
          await sql`lock table life_chunks in share update exclusive mode`.execute(trx)
          await released
        })
        await new Promise((resolve) => setTimeout(resolve, 100))
        const err = await timedStore.createTenantIndex('c', { concurrently: true }).catch((e: unknown) => e)
        release()
        await held
        expect(err).toMatchObject({ sqlState: '55P03' })
        // Had the failed build kept the table's maintenance lock, this one would wait for it forever.
        const next = await timedStore.createTenantIndex('c', { concurrently: true })
        expect(next.built).toBe(true)
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from pg_index where indrelid = 'life_chunks'::regclass and not indisvalid`.execute(t.db)
        expect(rows[0]!.n).toBe(0)
        expect((await timedStore.forTenant('a').search(new Array<number>(spec.dim).fill(0.1), { k: 3 })).length).toBe(3)
      } finally {
        await holder.close()
        await timed.close()
      }
    },
  )
})
