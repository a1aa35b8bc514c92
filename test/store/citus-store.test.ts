import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  citusTasks,
  DatabaseError,
  expectPlan,
  explain,
  indexesUsed,
  InvalidArgumentError,
  PgVectorStore,
  provision,
  type ProvisionedDatabase,
} from '../../src/index.js'
import { findLocalBinaries, renderStatements, tenantIndexName, toVectorLiteral } from '../../src/bench-kit.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../support/test-database.js'
import { CITUS_OPT_IN, describeUnless } from '../support/skip.js'

/**
 * The store distributed on Citus (opt-in: PGSCALE_TEST_CITUS_WORKERS=N with Citus installed; CI has
 * no Citus). Without Citus, `distributed: true` is a typed error — checked on every run.
 */
const t = useTestDatabase()
const found = findLocalBinaries()
const workers = Number(process.env.PGSCALE_TEST_CITUS_WORKERS ?? 0)
const citusRun = found.ok && found.binaries.citusVersion !== undefined && workers > 0
const spec: CorpusSpec = {
  seed: 'citus',
  dim: 16,
  tenants: [
    { id: 'acme', chunks: 600 },
    { id: 'globex', chunks: 300 },
  ],
}

describe('distributed: true', () => {
  it('without Citus on the server: an InvalidArgumentError that says why', async () => {
    const hasCitus = await t.db.hasCitus()
    if (hasCitus) return
    await expect(PgVectorStore.open(t.db, { table: 'not_distributed', dimensions: 4, distributed: true })).rejects.toThrow(
      /only be distributed on a Citus coordinator/,
    )
    await expect(PgVectorStore.open(t.db, { table: 'x', dimensions: 4, distributed: true, partitions: 4 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
  })
})

describeUnless(!citusRun && CITUS_OPT_IN)('the store on a Citus coordinator (opt-in)', () => {
  let p: ProvisionedDatabase
  let store: PgVectorStore
  beforeAll(async () => {
    p = await provision({ provider: 'local', citus: { workers } })
    store = await PgVectorStore.open(p.db, { table: 'dist_chunks', dimensions: spec.dim, distributed: { shardCount: 8 } })
    await store.bulkIngest(generateCorpus(spec))
  }, 120_000)
  afterAll(() => p?.stop())

  it('distributes the table, its tuning, query sample and recall monitor tables by tenant_id, colocated; opening again changes nothing', async () => {
    const { rows } = await sql<{ rel: string; col: number }>`
      select logicalrelid::text as rel, colocationid as col from pg_dist_partition order by 1`.execute(p.db)
    expect(rows.map((r) => r.rel)).toEqual([
      'dist_chunks',
      'dist_chunks_query_sample',
      'dist_chunks_recall_monitor',
      'dist_chunks_tenant_tuning',
    ])
    expect(new Set(rows.map((r) => r.col)).size).toBe(1)
    await PgVectorStore.open(p.db, { table: 'dist_chunks', dimensions: spec.dim, distributed: { shardCount: 8 } })
    const stats = await store.stats()
    expect(stats.rows).toBe(900)
    expect(stats.bytes.heap).toBeGreaterThan(0)
  })

  it('two openers distributing one new store at once: distributed once, both handles work', async () => {
    const open = () => PgVectorStore.open(p.db, { table: 'dist_twice', dimensions: spec.dim, distributed: true })
    const [a, b] = await Promise.all([open(), open()])
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_dist_partition where logicalrelid in ('dist_twice'::regclass, 'dist_twice_tenant_tuning'::regclass)`.execute(
      p.db,
    )
    expect(rows[0]!.n).toBe(2)
    await a.forTenant('x').replaceDocument('d', [{ content: 'a', embedding: new Array<number>(spec.dim).fill(0.5) }])
    expect(await b.forTenant('x').exactSearch(new Array<number>(spec.dim).fill(0.5), { k: 1 })).toHaveLength(1)
  })

  it('search, exactSearch, replaceDocument and deleteDocument answer per tenant, routed to one shard', async () => {
    const acme = store.forTenant('acme')
    for (const q of queryVectors(spec, 'acme', 3)) {
      const exact = await acme.exactSearch(q, { k: 10 })
      expect(exact).toHaveLength(10)
      expect((await acme.search(q, { k: 10 }))[0]!.distance).toBeCloseTo(exact[0]!.distance, 6)
    }
    await acme.replaceDocument('acme/doc-0', [
      { content: 'rewritten', embedding: Array.from({ length: spec.dim }, (_, i) => (i === 1 ? 1 : 0)) },
    ])
    expect(await acme.deleteDocument('acme/doc-1')).toBeGreaterThan(0)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from dist_chunks where tenant_id = 'acme'`.execute(p.db)
    expect(rows[0]!.n).toBe(600 - 20 - 20 + 1)
    const plan = await sql<{ 'QUERY PLAN': string }>`explain ${sql.raw(
      renderStatements(store.config)
        .search.replace('$1', `'acme'`)
        .replace(/\$2/g, `'${toVectorLiteral(queryVectors(spec, 'acme', 1)[0]!)}'`)
        .replace(/\$3/g, '10'),
    )}`.execute(p.db)
    expect(plan.rows.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/Task Count: 1\b/)
    // explain() looks inside the distributed plan: the worker's index scan, named as on the coordinator.
    await store.createTenantIndex('acme')
    const routed = await explain(p.db, renderStatements(store.config).search, [
      'acme',
      toVectorLiteral(queryVectors(spec, 'acme', 1)[0]!),
      10,
    ])
    // (600 chunks: the planner may prefer the primary key and a sort to the tenant's own index.)
    const used = indexesUsed(routed)
    expect(used.some((name) => [tenantIndexName('dist_chunks', 'acme'), 'dist_chunks_pkey'].includes(name))).toBe(true)
    expectPlan(routed).not.toUse('dist_chunks_embedding_hnsw')
    const globex = await store.forTenant('globex').exactSearch(queryVectors(spec, 'acme', 1)[0]!, { k: 50 })
    expect(globex.every((r) => r.documentId.startsWith('globex/'))).toBe(true)
    expect(citusTasks(routed)?.taskCount).toBe(1)
  })

  it('a store distributed halfway (its table, not yet its tuning table) is finished by the next open, and auto leaves a table with rows alone', async () => {
    // As if the opener died between its two create_distributed_table calls.
    await PgVectorStore.open(p.db, { table: 'half_done', dimensions: spec.dim, distributed: false })
    await sql`select create_distributed_table('half_done', 'tenant_id')`.execute(p.db)
    await PgVectorStore.open(p.db, { table: 'half_done', dimensions: spec.dim })
    const { rows } = await sql<{ rel: string; col: number }>`
      select logicalrelid::text as rel, colocationid as col from pg_dist_partition
      where logicalrelid in ('half_done'::regclass, 'half_done_tenant_tuning'::regclass) order by 1`.execute(p.db)
    expect(rows.map((r) => r.rel)).toEqual(['half_done', 'half_done_tenant_tuning'])
    expect(new Set(rows.map((r) => r.col)).size).toBe(1)
    // 'auto' distributes only an empty table: a local table with rows stays local (true would move it).
    const local = await PgVectorStore.open(p.db, { table: 'kept_local', dimensions: spec.dim, distributed: false })
    await local.forTenant('x').replaceDocument('d', [{ content: 'a', embedding: new Array<number>(spec.dim).fill(0.5) }])
    await PgVectorStore.open(p.db, { table: 'kept_local', dimensions: spec.dim })
    const { rows: kept } = await sql<{ n: number }>`
      select count(*)::int as n from pg_dist_partition where logicalrelid = 'kept_local'::regclass`.execute(p.db)
    expect(kept[0]!.n).toBe(0)
  })

  it('a setting the server refuses fails the search with a DatabaseError; the pool serves the next one', async () => {
    const acme = store.forTenant('acme')
    const q = queryVectors(spec, 'acme', 1)[0]!
    // The SET travels in its own message on Citus: the refusal comes between BEGIN and the query.
    await expect(
      p.db.queryWithSettings('select count(*) from dist_chunks where tenant_id = $1', ['acme'], { 'hnsw.ef_search': 5000 }),
    ).rejects.toBeInstanceOf(DatabaseError)
    const results = await Promise.all(Array.from({ length: 12 }, () => acme.search(q, { k: 5 })))
    expect(results.every((r) => r.length === 5)).toBe(true)
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`.execute(
      p.db,
    )
    expect(rows[0]!.n).toBe(0)
  })

  it("a search's settings reach the shard: a routed query reads them on its worker, and they end with it", async () => {
    const { rows: nodes } = await sql<{ port: number; worker: boolean }>`
      select nodeport as port, groupid <> 0 as worker from pg_dist_node`.execute(p.db)
    const workerPorts = nodes.filter((n) => n.worker).map((n) => String(n.port))
    const onShard = `select current_setting('hnsw.ef_search') as ef, current_setting('port') as port from dist_chunks where tenant_id = $1 limit 1`
    const [row] = await p.db.queryWithSettings<{ ef: string; port: string }>(onShard, ['acme'], { 'hnsw.ef_search': 77 })
    expect(workerPorts).toContain(row!.port)
    expect(row!.ef).toBe('77')
    // The next statement on the shard, without settings, sees the default again.
    const { rows: after } = await sql<{ ef: string; port: string }>`
      select current_setting('hnsw.ef_search') as ef, current_setting('port') as port from dist_chunks where tenant_id = 'acme' limit 1`.execute(
      p.db,
    )
    expect(after[0]).toEqual({ ef: '40', port: row!.port })
  })
})
