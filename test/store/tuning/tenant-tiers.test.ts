import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  countRecall,
  explain,
  indexesUsed,
  PgVectorStore,
  recallOf,
  type OptimizeResult,
  type RecallCount,
  type SearchOptions,
} from '../../../src/index.js'
import { renderStatements } from '../../../src/bench-kit.js'
import { tenantIndexName } from '../../../src/bench-kit.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * Tenant tiers on shared-topic data (every tenant draws from the same topics, the case where a
 * filtered walk of one shared HNSW graph loses recall): after optimize(), every tenant class
 * reaches recall@10 >= 0.98 with default settings, and the plans say why.
 */
const t = useTestDatabase()
const spec: CorpusSpec = {
  seed: 'tiers',
  dim: 128,
  topics: 'shared',
  sharedTopics: 8,
  tenants: [
    { id: 'large-a', chunks: 7000 },
    { id: 'large-b', chunks: 6000 },
    { id: 'mid-a', chunks: 1500 },
    { id: 'mid-b', chunks: 1200 },
    ...Array.from({ length: 120 }, (_, i) => ({ id: `small-${i}`, chunks: 30 })),
  ],
}
const classes = {
  large: ['large-a', 'large-b'],
  mid: ['mid-a', 'mid-b'],
  small: ['small-0', 'small-17', 'small-59', 'small-119'],
}
let store: PgVectorStore
let report: OptimizeResult
const progress: string[] = []
const sharedOnly: Record<string, number> = {}

/** Tie-aware recall@10 (a returned row within the exact 10th distance + ε is a hit). */
async function recallAt10(tenant: string, options: SearchOptions = {}, queries = 50): Promise<number> {
  const handle = store.forTenant(tenant)
  const counts: RecallCount[] = []
  for (const q of queryVectors(spec, tenant, queries)) {
    counts.push(countRecall(await handle.exactSearch(q, { k: 10 }), await handle.search(q, { k: 10, ...options })))
  }
  return recallOf(counts).recall
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'tier_chunks', dimensions: spec.dim })
  await store.bulkIngest(generateCorpus(spec))
  await store.createIndex({ onProgress: (p) => progress.push(p.phase) })
  await sql`analyze tier_chunks`.execute(t.db)
  // What a shared index gives with pgvector's defaults (ef_search 40, no iterative scan).
  for (const tenant of [...classes.large, ...classes.mid])
    sharedOnly[tenant] = await recallAt10(tenant, { efSearch: 40, iterativeScan: 'off', exactFallback: false })
  report = await store.optimize()
}, 300_000)

describe('tenant tiers', () => {
  it('optimize gives each tenant above the threshold, or planned on the shared index, its own index', () => {
    console.log('[tiers] optimize:', JSON.stringify({ built: report.built.map((b) => [b.tenantId, b.reason]), shared: report.sharedIndex }))
    expect(report.ownIndexAbove).toBe(5000)
    const bySize = report.built
      .filter((b) => b.reason === 'size')
      .map((b) => b.tenantId)
      .sort()
    expect(bySize).toEqual(['large-a', 'large-b'])
    // Whatever the planner still sent to the shared index got its own: the shared index serves no one.
    expect(report.built.filter((b) => b.reason === 'planner').every((b) => b.rows >= 1000 && b.rows <= 5000)).toBe(true)
    expect(report.sharedIndex).toMatchObject({ servesAnyone: false, dropped: false })
    expect(report.tenants.total).toBe(124)
    expect(report.tenants.withOwnIndex).toBe(report.built.length)
    expect(report.notes.join(' ')).toMatch(/serves no tenant/)
  })

  it('recall@10 against exactSearch, default settings: mean >= 0.98 over the tenant classes, each >= 0.9', async () => {
    const recalls: Record<string, number> = {}
    for (const [cls, tenants] of Object.entries(classes)) {
      for (const tenant of tenants) recalls[`${cls}:${tenant}`] = await recallAt10(tenant)
    }
    console.log(
      '[tiers] recall@10 on the shared index, ef_search 40, no iterative scan:',
      JSON.stringify(sharedOnly),
      JSON.stringify(report.sharedIndex),
    )
    console.log('[tiers] recall@10 after optimize:', JSON.stringify(recalls))
    // HNSW graphs are built with random levels, so one tenant's recall on 50 queries varies from
    // build to build: over 16 runs of this file on the project's machine, every tenant's recall was
    // 1.000 in most runs and the lowest single figure was 0.954 (large-a once, mid-a once; a clean
    // clone's CI once saw mid-a at 0.974). Hence a per-tenant floor with a margin below that spread,
    // and the 0.98 target on the mean over the classes (lowest mean seen: 0.994). The exact targets
    // are the benches' (rag-bench), not this test's.
    for (const [key, recall] of Object.entries(recalls)) expect(recall, key).toBeGreaterThanOrEqual(0.9)
    const mean = Object.values(recalls).reduce((a, b) => a + b, 0) / Object.values(recalls).length
    expect(mean, 'mean recall@10 over the tenant classes').toBeGreaterThanOrEqual(0.98)
    // The data is hard enough to matter: with pgvector's defaults, a filtered walk of the shared graph lost results.
    // On Citus each shard's graph holds only its shard's tenants (1/32 of the rows), and the walk
    // lost less (0.992 for the worst tenant): there the premise does not hold and is not asserted.
    if (!(await t.db.hasCitus())) expect(Math.min(...Object.values(sharedOnly))).toBeLessThan(0.98)
  })

  it('plans: a large tenant uses its own partial index; a small one the primary key; delete the primary key', async () => {
    const statements = renderStatements(store.config)
    const q = `[${Array.from(queryVectors(spec, 'large-a', 1)[0]!).join(',')}]`
    const settings = { 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' }
    const large = await explain(t.db, statements.search, ['large-a', q, 10], { settings })
    expect(indexesUsed(large)).toEqual([tenantIndexName('tier_chunks', 'large-a')])
    const small = await explain(t.db, statements.search, ['small-17', q, 10], { settings })
    expect(indexesUsed(small)).toEqual(['tier_chunks_pkey'])
    const del = await explain(t.db, statements.deleteDocument, ['small-17', 'small-17/doc-0'])
    expect(indexesUsed(del)).toEqual(['tier_chunks_pkey'])
    const exact = await explain(t.db, statements.exactSearch, ['large-a', q, 10])
    expect(indexesUsed(exact).some((name) => name.includes('hnsw') || name.includes('tenant_'))).toBe(false)
  })

  it('createIndex reported progress and finished with "done"', () => {
    expect(progress.at(-1)).toBe('done')
    // On a server the build is polled from another connection; PGlite has only one. On Citus the
    // workers are polled for the shards' builds.
    if (t.target.url) expect(progress.some((phase) => phase.startsWith('building index'))).toBe(true)
  })

  it('a second optimize builds nothing and says the large tenants already have their index', async () => {
    const again = await store.optimize()
    expect(again.built).toEqual([])
    expect(again.alreadyIndexed.sort()).toEqual(['large-a', 'large-b'])
  })
})
