import { sql } from 'kysely'
import {
  connect,
  PgVectorStore,
  type ChunkInput,
  type Database,
  type Embedding,
  type IngestRow,
  type ProvisionedDatabase,
  type ServerInfo,
} from '../../../src/index.js'
import { countRecall, recallOf, seededRandom } from '../../../src/bench-kit.js'
import { machineInfo, type MachineInfo } from '../../report/machine.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec, type TenantSize } from '../../synthetic/corpus.js'
import { ACL_GROUPS, aclGroup, CorpusTruth } from './corpus-truth.js'
import { findSaturation, ladderVerdict, type LadderVerdict, type LoadOperation } from './ladder-analysis.js'
import { runLoadStep, type LoadContext, type LoadStep } from './load-step.js'
import { runSoak, type SoakReport } from './soak.js'

/** Parameters of `rag-bench load`. */
export interface LoadBenchConfig {
  tenants: TenantSize[]
  mixLabel: string
  chunks: number
  dim: number
  chunksPerDoc: number
  clients: number[]
  seconds: number
  warmupSeconds: number
  mix: Record<LoadOperation, number>
  maxP95Ms: number
  seed: string
  soakMinutes?: number
  soakClients?: number
  /** RSS growth per hour (MB) the soak fails above. */
  soakMaxGrowthMbPerHour: number
  keep: boolean
}

/** What `rag-bench load --json` writes. */
export interface LoadBenchReport {
  machine: MachineInfo
  server: ServerInfo
  config: Omit<LoadBenchConfig, 'tenants'> & { tenantCount: number; largestTenant: number }
  method: string
  seeding: { chunks: number; seconds: number; indexes: number }
  smoke: { queries: number; recallAt10: number; wrongRows: number; passed: boolean }
  steps: LoadStep[]
  /** `held`, `broke` or `not-run`: always written, with `breaks` and `heldUpTo` (`null` when they do not apply). */
  verdict: LadderVerdict['verdict']
  breaks: LadderVerdict['breaks']
  heldUpTo: LadderVerdict['heldUpTo']
  /** Where throughput stopped growing, or `null` when it still grew at the last step. */
  saturates: { clients: number; throughput: number } | null
  isolation: { rowsChecked: number; wrongRows: number }
  warnings: string[]
  soak?: SoakReport
  process: { peakRssMB: number }
}

export const LOAD_SCHEMA = 'pgscale_rag_load'

/**
 * `rag-bench load`: seeds a corpus (bulkIngest, a shared HNSW index, `optimize()`), checks a smoke
 * step's answers against `exactSearch`, then climbs the ladder of concurrent clients with every
 * search answer verified against what each tenant holds, and optionally soaks one step.
 *
 * ### Examples
 * ```ts
 * const report = await runLoadBench(provisioned, config, console.error)
 * report.saturates?.clients
 * ```
 */
export async function runLoadBench(
  provisioned: ProvisionedDatabase,
  c: LoadBenchConfig,
  log: (line: string) => void,
): Promise<LoadBenchReport> {
  if (!provisioned.url)
    throw new RangeError('rag-bench load needs a server with concurrent connections (--db local, --db container or --pg URL)')
  const connections = Math.max(...c.clients, c.soakClients ?? 1) + 1
  const pool = await connect({
    connectionString: provisioned.url,
    max: connections,
    connectionTimeoutMillis: 10_000,
  })
  try {
    const { store, truth, seeding } = await seedLoadCorpus(provisioned.db, pool, c, log)
    const ctx = loadContext(store, { db: pool, connections }, provisioned.db, truth, c)
    const smoke = await smokeCheck(store, truth, ctx, log)
    const steps: LoadStep[] = []
    if (smoke.passed) {
      for (const clients of c.clients) {
        log(`step ${clients} client(s): ${c.warmupSeconds} s warm-up + ${c.seconds} s`)
        const step = await runLoadStep(ctx, clients, c.seconds, c.warmupSeconds)
        steps.push(step)
        log(
          `  ${step.throughput.toFixed(0)} ops/s, read p95 ${step.readP95Ms.toFixed(1)} ms, ${step.rejections} rejected, ` +
            `${(step.errorRate * 100).toFixed(2)}% errors, ${step.wrongRows} wrong of ${step.rowsChecked} rows`,
        )
        if (step.wrongRows > 0) break
      }
    }
    const soak =
      c.soakMinutes && smoke.passed ? await runSoak(ctx, c.soakClients ?? 8, c.soakMinutes, c.soakMaxGrowthMbPerHour, log) : undefined
    const report = buildReport(provisioned.info, c, seeding, smoke, steps, soak)
    if (!c.keep) await sql.raw(`drop schema if exists ${LOAD_SCHEMA} cascade`).execute(provisioned.db)
    return report
  } finally {
    await pool.close()
  }
}

/**
 * Seeds the load corpus in {@link LOAD_SCHEMA} through `pool`: every row carries `metadata.owner`,
 * and the truth records every document. Then a shared HNSW index and `optimize()`.
 *
 * ### Examples
 * ```ts
 * const { store, truth } = await seedLoadCorpus(db, pool, config, console.error)
 * ```
 */
export async function seedLoadCorpus(observer: Database, pool: Database, c: LoadBenchConfig, log: (line: string) => void) {
  const started = performance.now()
  await sql.raw(`drop schema if exists ${LOAD_SCHEMA} cascade; create schema ${LOAD_SCHEMA}`).execute(observer)
  const store = await PgVectorStore.open(pool, { table: `${LOAD_SCHEMA}.chunks`, dimensions: c.dim })
  // The ACL filters of the mix's `filtered` searches use it (before the load: it is built through it).
  await store.createMetadataIndex('acl', 'string')
  const truth = new CorpusTruth()
  const spec = corpusSpec(c)
  function* owned(): Generator<IngestRow> {
    for (const row of generateCorpus(spec)) {
      truth.seed(row.tenantId, row.documentId)
      yield { ...row, metadata: { ...row.metadata, owner: row.tenantId, acl: aclGroup(row.documentId) } }
    }
  }
  log(`seeding ${c.chunks.toLocaleString('en-US')} chunks (${c.tenants.length} tenants, ${c.mixLabel}, dim ${c.dim})`)
  const ingested = await store.bulkIngest(owned())
  log(`  ${ingested.rows.toLocaleString('en-US')} chunks in ${ingested.seconds.toFixed(1)} s; building the shared HNSW index`)
  await store.createIndex()
  log('  optimize(): tenant tiers')
  const optimized = await store.optimize()
  await sql.raw(`analyze ${LOAD_SCHEMA}.chunks`).execute(observer)
  const seconds = (performance.now() - started) / 1000
  log(`  seeded in ${seconds.toFixed(0)} s (${optimized.built.length} tenant index(es))`)
  return { store, truth, seeding: { chunks: ingested.rows, seconds, indexes: 1 + optimized.built.length } }
}

function corpusSpec(c: LoadBenchConfig): CorpusSpec {
  return { seed: c.seed, dim: c.dim, tenants: c.tenants, chunksPerDoc: c.chunksPerDoc, topics: 'shared', duplicates: 0.05 }
}

/**
 * What the clients draw from: tenants by size, the queries of every tenant (eight each; four past
 * 1,000 tenants) and replacement vectors, all made here, before the first step — nothing generated
 * inside the clock (the generator counts its calls, `generatorCalls()`, and a test holds a step to zero).
 *
 * ### Examples
 * ```ts
 * const step = await runLoadStep(loadContext(store, { db: pool, connections: 5 }, db, truth, config), 4, 15, 3)
 * ```
 */
export function loadContext(
  store: PgVectorStore,
  pool: LoadContext['pool'],
  observer: Database,
  truth: CorpusTruth,
  c: LoadBenchConfig,
): LoadContext {
  const random = seededRandom(`${c.seed}:load`)
  const spec = corpusSpec(c)
  const cumulative: number[] = []
  let total = 0
  for (const t of c.tenants) cumulative.push((total += t.chunks))
  const perTenant = c.tenants.length > 1000 ? 4 : 8
  const queries = new Map<string, Array<{ embedding: Embedding; text: string }>>()
  for (const { id } of c.tenants) {
    const texts = queryTexts(spec, id, perTenant)
    queries.set(
      id,
      queryVectors(spec, id, perTenant).map((embedding, i) => ({ embedding, text: texts[i]! })),
    )
  }
  const replacementVectors = [
    ...generateCorpus({ ...spec, seed: `${c.seed}:replacements`, tenants: [{ id: 'r', chunks: 64 * c.chunksPerDoc }] }),
  ].map((r) => r.embedding)
  let next = 0
  return {
    store,
    pool,
    observer,
    truth,
    mix: c.mix,
    random: () => random.next(),
    pickTenant() {
      const r = random.next() * total
      let lo = 0
      let hi = cumulative.length - 1
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (cumulative[mid]! > r) hi = mid
        else lo = mid + 1
      }
      return c.tenants[lo]!.id
    },
    query(tenantId) {
      const list = queries.get(tenantId)
      if (!list) throw new Error(`rag-bench load: ${tenantId} is not a tenant of the corpus`)
      return list[Math.floor(random.next() * list.length)]!
    },
    replacement(tenantId, documentId): ChunkInput[] {
      const first = (next++ % 64) * c.chunksPerDoc
      return replacementVectors.slice(first, first + c.chunksPerDoc).map((embedding, i) => ({
        content: `replacement ${i} for ${tenantId}`,
        embedding,
        metadata: { owner: tenantId, kind: 'replacement', acl: aclGroup(documentId) },
      }))
    },
    aclFilter() {
      // A user in two of the eight groups: about a quarter of a tenant's documents.
      const a = Math.floor(random.next() * ACL_GROUPS)
      const b = (a + 1 + Math.floor(random.next() * (ACL_GROUPS - 1))) % ACL_GROUPS
      const groups = [`g${a}`, `g${b}`]
      return { filter: { acl: { $in: groups } }, groups: new Set(groups) }
    },
  }
}

/** The smallest mean recall@10 the smoke sample may show; below it the answers are wrong, not approximate. */
export const SMOKE_MIN_RECALL = 0.9

/**
 * The smoke check before the ladder: one client, a sample of searches (tenants drawn with the skew)
 * each compared with `exactSearch` and the truth. A wrong row, or a mean tie-aware recall@10 below
 * {@link SMOKE_MIN_RECALL}, stops the bench before any load.
 */
async function smokeCheck(store: PgVectorStore, truth: CorpusTruth, ctx: LoadContext, log: (line: string) => void) {
  const counts = []
  let wrongRows = 0
  const queries = 50
  for (let i = 0; i < queries; i++) {
    const tenantId = ctx.pickTenant()
    const { embedding } = ctx.query(tenantId)
    const tenant = store.forTenant(tenantId)
    const startedAt = performance.now()
    const got = await tenant.search(embedding, { k: 10 })
    const exact = await tenant.exactSearch(embedding, { k: 10 })
    wrongRows += truth.check(tenantId, got, startedAt).length
    counts.push(countRecall(exact, got))
  }
  const { recall } = recallOf(counts)
  const passed = wrongRows === 0 && recall >= SMOKE_MIN_RECALL
  log(
    `smoke: ${queries} searches against exactSearch: recall@10 ${recall.toFixed(3)}, ${wrongRows} wrong row(s) — ${passed ? 'passed' : 'FAILED, no load run'}`,
  )
  return { queries, recallAt10: recall, wrongRows, passed }
}

function buildReport(
  server: ServerInfo,
  c: LoadBenchConfig,
  seeding: LoadBenchReport['seeding'],
  smoke: LoadBenchReport['smoke'],
  steps: LoadStep[],
  soak: SoakReport | undefined,
): LoadBenchReport {
  const { tenants, ...rest } = c
  const saturated = findSaturation(steps)
  const warnings = steps
    .filter((s) => s.clientCpu >= 0.9)
    .map(
      (s) =>
        `step ${s.clients}: the bench process used ${(s.clientCpu * 100).toFixed(0)}% of a core — its numbers are the client's limit, not the server's`,
    )
  if (!smoke.passed) warnings.unshift('the smoke check failed: no load was run')
  return {
    machine: machineInfo(),
    server,
    config: { ...rest, tenantCount: tenants.length, largestTenant: Math.max(...tenants.map((t) => t.chunks)) },
    method:
      'one Node process, N clients as concurrent async loops on one pg pool of max(N)+1 connections; each draws an operation from the mix and a tenant with probability ∝ its chunks; search/hybrid k=10 through the store (tuned per tenant by optimize()), filtered = search k=10 under an ACL filter { acl: { $in: [2 of 8 groups] } } (metadata index on acl; every row also checked to be in the groups), replace = replaceDocument of 20 pre-made chunks, delete = deleteDocument of a random document of the tenant (replaced again later); latencies of operations that started after the warm-up and ended inside the step; every returned row checked: metadata.owner is the caller, the document is one the caller holds (or held while the search ran); database view: pg_stat_database deltas over the step, wait events of active client backends sampled every 200 ms',
    seeding,
    smoke,
    steps,
    ...ladderVerdict(steps, c.maxP95Ms),
    saturates: saturated ? { clients: saturated.clients, throughput: saturated.throughput } : null,
    isolation: {
      rowsChecked: steps.reduce((s, x) => s + x.rowsChecked, 0) + (soak?.rowsChecked ?? 0),
      wrongRows: steps.reduce((s, x) => s + x.wrongRows, 0) + (soak?.wrongRows ?? 0),
    },
    warnings,
    soak,
    process: { peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024) },
  }
}
