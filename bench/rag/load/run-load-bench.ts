import { sql } from 'kysely'
import { connect, PgVectorStore, type Database, type IngestRow, type ProvisionedDatabase, type ServerInfo } from '../../../src/index.js'
import { countRecall, recallOf } from '../../../src/bench-kit.js'
import { machineInfo, type MachineInfo } from '../../report/machine.js'
import { generateCorpus, type CorpusSpec, type TenantSize } from '../../synthetic/corpus.js'
import { aclGroup, CorpusTruth } from './corpus-truth.js'
import { findSaturation, ladderVerdict, type LadderVerdict, type LoadOperation } from './ladder-analysis.js'
import { loadContext, makeLoadInputs, type LoadInputs } from './load-inputs.js'
import { plainSearchBaseline, type PlainBaseline } from './plain-baseline.js'
import { LOAD_SHAPES, spikeOutcome, type LoadPhase, type LoadShapeName, type ShapeSettings, type SpikeOutcome } from './load-shapes.js'
import { runLoadStep, type ClientRunner, type LoadContext, type LoadStep } from './load-step.js'
import { clientsPerWorker, LoadWorkers } from './load-workers.js'
import { runSoak, type SoakReport } from './soak.js'
import { ReplicaRun, type ReplicaBenchConfig } from './replicas/replica-run.js'
import type { ReplicaBenchReport } from './replicas/replica-report.js'
import { PAUSE_WINDOW, STOP_WINDOW, type ReplicaStepReport } from './replicas/replica-steps.js'
import type { WorkerReplicas } from './replicas/worker-store.js'
import { dropBenchSchema } from '../../report/bench-cleanup.js'

/** Parameters of `rag-bench load`. */
export interface LoadBenchConfig {
  tenants: TenantSize[]
  mixLabel: string
  chunks: number
  dim: number
  chunksPerDoc: number
  /** Hash partitions of the load's table by tenant (0: one table). */
  partitions: number
  /** The shape to run (default `load`, the ladder). */
  shape: LoadShapeName
  clients: number[]
  seconds: number
  warmupSeconds: number
  /** Worker threads the clients run on (a step of N clients uses min(N, workers)). */
  workers: number
  mix: Record<LoadOperation, number>
  maxP95Ms: number
  seed: string
  spikeFactor: number
  spikeSeconds: number
  breakpointMaxClients: number
  soakMinutes?: number
  soakClients: number
  /** RSS growth per hour (MB) the soak fails above. */
  soakMaxGrowthMbPerHour: number
  keep: boolean
  /** `--replicas N`: the searches spread over N standbys of the primary (the local provider's). */
  replicas?: ReplicaBenchConfig
}

/** A step as the report lists it: which phase of the shape it was (and with replicas, where its reads went). */
export type ShapedStep = LoadStep & { phase: LoadPhase['phase']; replicas?: ReplicaStepReport }

/** What `rag-bench load --json` writes. */
export interface LoadBenchReport {
  machine: MachineInfo
  server: ServerInfo
  config: Omit<LoadBenchConfig, 'tenants'> & { tenantCount: number; largestTenant: number }
  method: string
  seeding: { chunks: number; seconds: number; indexes: number }
  smoke: { queries: number; recallAt10: number; wrongRows: number; passed: boolean }
  /** A plain loop of store.search (one client, no harness) on the same corpus and queries, before the shape. */
  baseline: PlainBaseline | null
  shape: LoadShapeName
  steps: ShapedStep[]
  /** `held`, `broke` or `not-run`: always written, with `breaks` and `heldUpTo` (`null` when they do not apply). */
  verdict: LadderVerdict['verdict']
  breaks: LadderVerdict['breaks']
  heldUpTo: LadderVerdict['heldUpTo']
  /** Where throughput stopped growing, or `null` when it still grew at the last step. */
  saturates: { clients: number; throughput: number } | null
  /** The spike's phases side by side (`--shape spike`), else `null`. */
  spike: SpikeOutcome | null
  isolation: { rowsChecked: number; wrongRows: number }
  warnings: string[]
  soak?: SoakReport
  /** With `--replicas`: routing per step is in `steps[].replicas`; the run's probe, read-only step, stopped replica and targets here. */
  replicas?: ReplicaBenchReport
  process: { peakRssMB: number }
}

/** What the load after the smoke check produced. */
interface LoadRun {
  baseline: PlainBaseline | null
  steps: ShapedStep[]
  soak?: SoakReport
  replicas?: ReplicaBenchReport
}

export const LOAD_SCHEMA = 'pgscale_rag_load'

/**
 * `rag-bench load`: seeds a corpus (bulkIngest, a shared HNSW index, `optimize()`), checks a smoke
 * sample's answers against `exactSearch`, then runs the shape (`LOAD_SHAPES`: by default the ladder
 * of concurrent clients) on worker threads with every search answer verified against what each
 * tenant holds, and optionally soaks one step after it.
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
  const url = provisioned.url
  const pool = await connect({ connectionString: url, max: 4, connectionTimeoutMillis: 10_000 })
  try {
    const { store, truth, seeding } = await seedLoadCorpus(provisioned.db, pool, c, log)
    const inputs = makeLoadInputs({ ...corpusSpec(c), chunksPerDoc: c.chunksPerDoc })
    const ctx = loadContext({ store, pool: { db: pool, connections: 4 }, truth, inputs, mix: c.mix, seed: `${c.seed}:load` })
    const smoke = await smokeCheck(store, truth, ctx, log)
    const run: LoadRun = smoke.passed
      ? await runLoad(provisioned, { pool, store, truth, inputs, ctx }, c, log)
      : { baseline: null, steps: [] }
    const report = buildReport(provisioned.info, c, seeding, smoke, run)
    if (!c.keep) await dropBenchSchema(provisioned.db, LOAD_SCHEMA)
    return report
  } finally {
    await pool.close()
  }
}

/**
 * After the smoke check: the baseline, then the shape on the worker threads — or with `--replicas`
 * the replica run (its probe, the arms side by side on the ladder, the fault and read-only steps).
 */
async function runLoad(
  provisioned: ProvisionedDatabase,
  seeded: { pool: Database; store: PgVectorStore; truth: CorpusTruth; inputs: LoadInputs; ctx: LoadContext },
  c: LoadBenchConfig,
  log: (line: string) => void,
): Promise<LoadRun> {
  const baseline = await plainSearchBaseline(seeded.ctx, 1000)
  log(
    `baseline: a plain loop of store.search: p50 ${baseline.p50Ms.toFixed(2)} ms, p95 ${baseline.p95Ms.toFixed(2)} ms (${baseline.searches} searches)`,
  )
  const start = (replicas?: WorkerReplicas) =>
    startLoadWorkers(provisioned.url!, seeded.store, seeded.truth, seeded.inputs, c, log, replicas)
  if (c.replicas) {
    const replicaRun = await startReplicaRun(provisioned, seeded, c, c.replicas, start, log)
    try {
      const { steps, report } = await replicaRun.run({ clients: c.clients, seconds: c.seconds, warmupSeconds: c.warmupSeconds })
      return { baseline, steps: steps.map((s) => ({ ...s, phase: 'step' as const })), replicas: report }
    } finally {
      await replicaRun.close()
    }
  }
  const workers = await start()
  try {
    return { baseline, ...(await runShape(workers, provisioned.db, c, log)) }
  } finally {
    await workers.close()
  }
}

/** The replica run of `--replicas`: its standbys, its routing probe on 1,000 of the load's own searches (after 100 untimed). */
function startReplicaRun(
  provisioned: ProvisionedDatabase,
  seeded: { pool: Database; inputs: LoadInputs; ctx: LoadContext },
  c: LoadBenchConfig,
  replicas: ReplicaBenchConfig,
  startWorkers: (replicas?: WorkerReplicas) => Promise<LoadWorkers>,
  log: (line: string) => void,
): Promise<ReplicaRun> {
  const draws = Array.from({ length: 1100 }, () => {
    const tenantId = seeded.ctx.pickTenant()
    return { tenantId, embedding: seeded.ctx.query(tenantId).embedding }
  })
  return ReplicaRun.start({
    provisioned,
    config: replicas,
    tenantIds: seeded.inputs.tenants.map((t) => t.id),
    table: `${LOAD_SCHEMA}.chunks`,
    dimensions: c.dim,
    partitions: c.partitions,
    primary: seeded.pool,
    observer: provisioned.db,
    draws,
    startWorkers,
    log,
  })
}

/** The settings every shape is built from. */
function shapeSettings(c: LoadBenchConfig): ShapeSettings {
  return {
    clients: c.clients,
    seconds: c.seconds,
    warmupSeconds: c.warmupSeconds,
    spikeFactor: c.spikeFactor,
    spikeSeconds: c.spikeSeconds,
    breakpointMaxClients: c.breakpointMaxClients,
    maxP95Ms: c.maxP95Ms,
    soakClients: c.soakClients,
    soakMinutes: c.soakMinutes,
  }
}

/** The most clients any step of the run has: the shape's, or the soak's after it. */
function mostClients(c: LoadBenchConfig): number {
  const settings = shapeSettings(c)
  return Math.max(LOAD_SHAPES[c.shape].maxClients(settings), c.soakMinutes ? c.soakClients : 1)
}

async function startLoadWorkers(
  url: string,
  store: PgVectorStore,
  truth: CorpusTruth,
  inputs: LoadInputs,
  c: LoadBenchConfig,
  log: (line: string) => void,
  replicas?: WorkerReplicas,
): Promise<LoadWorkers> {
  const most = mostClients(c)
  const count = Math.min(c.workers, most)
  const connections = clientsPerWorker(most, count)[0]!
  log(`starting ${count} client thread(s), a pool of up to ${connections} connection(s) each`)
  const shared = truth.share()
  return LoadWorkers.start(count, (i) => ({
    url,
    table: `${LOAD_SCHEMA}.chunks`,
    dimensions: c.dim,
    partitions: c.partitions,
    truth: shared,
    inputs,
    mix: c.mix,
    seed: `${c.seed}:load:w${i}`,
    connections,
    connectionTimeoutMillis: 10_000,
    ...(replicas ? { replicas } : {}),
  }))
}

/**
 * Runs the shape's phases on `runner` (each phase's step goes back to the shape, which may stop:
 * `breakpoint`), then the soak when asked; a step with a wrong row ends the run.
 *
 * ### Examples
 * ```ts
 * const { steps } = await runShape(workers, observer, { ...config, shape: 'spike' }, console.error)
 * ```
 */
export async function runShape(
  runner: ClientRunner,
  observer: Database,
  c: LoadBenchConfig,
  log: (line: string) => void,
): Promise<{ steps: ShapedStep[]; soak?: SoakReport }> {
  const steps: ShapedStep[] = []
  const settings = shapeSettings(c)
  const phases = LOAD_SHAPES[c.shape].phases(settings)
  let soak: SoakReport | undefined
  const measure = async (p: LoadPhase): Promise<LoadStep> => {
    if (p.phase === 'soak') {
      const soaked = await runSoak(
        runner,
        observer,
        { clients: p.clients, minutes: p.seconds / 60, warmupSeconds: p.warmupSeconds },
        c.soakMaxGrowthMbPerHour,
        log,
      )
      soak = soaked.soak
      return soaked.step
    }
    log(`${p.phase} ${p.clients} client(s): ${p.warmupSeconds} s warm-up + ${p.seconds} s`)
    return runLoadStep(runner, observer, p.clients, p.seconds, p.warmupSeconds)
  }
  const runPhase = async (p: LoadPhase): Promise<ShapedStep> => ({ ...(await measure(p)), phase: p.phase })
  for (let next = phases.next(); !next.done;) {
    const step = await runPhase(next.value)
    steps.push(step)
    log(
      `  ${step.throughput.toFixed(0)} ops/s, read p95 ${step.readP95Ms.toFixed(1)} ms, ${step.rejections} rejected, ` +
        `${(step.errorRate * 100).toFixed(2)}% errors, ${step.wrongRows} wrong of ${step.rowsChecked} rows, ` +
        `client threads at ${step.threadCpu.map((x) => `${(x * 100).toFixed(0)}%`).join('/')} of a core`,
    )
    if (step.wrongRows > 0) return { steps, soak }
    next = phases.next(step)
  }
  if (c.soakMinutes && c.shape !== 'soak')
    steps.push(await runPhase({ phase: 'soak', clients: c.soakClients, seconds: c.soakMinutes * 60, warmupSeconds: 0 }))
  return { steps, soak }
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
  await dropBenchSchema(observer, LOAD_SCHEMA)
  await sql.raw(`create schema ${LOAD_SCHEMA}`).execute(observer)
  const store = await PgVectorStore.open(pool, {
    table: `${LOAD_SCHEMA}.chunks`,
    dimensions: c.dim,
    ...(c.partitions ? { partitions: c.partitions } : {}),
  })
  // The ACL filters of the mix's `filtered` searches use it (before the load: it is built through it).
  await store.createMetadataIndex('acl', 'string')
  const truth = new CorpusTruth()
  const spec = corpusSpec(c)
  function* owned(): Generator<IngestRow> {
    for (const row of generateCorpus(spec)) {
      truth.seed(row.tenantId, row.documentId)
      yield { ...row, metadata: { ...row.metadata, owner: row.tenantId, acl: aclGroup(row.documentId), v: 0 } }
    }
  }
  log(`seeding ${c.chunks.toLocaleString('en-US')} chunks (${c.tenants.length} tenants, ${c.mixLabel}, dim ${c.dim})`)
  const ingested = await store.bulkIngest(owned())
  log(`  ${ingested.rows.toLocaleString('en-US')} chunks in ${ingested.seconds.toFixed(1)} s; building the shared HNSW index`)
  await store.createIndex({ maintenanceWorkMem: buildMemory(c) })
  log('  optimize(): tenant tiers')
  const optimized = await store.optimize()
  await sql.raw(`analyze ${LOAD_SCHEMA}.chunks`).execute(observer)
  const seconds = (performance.now() - started) / 1000
  log(`  seeded in ${seconds.toFixed(0)} s (${optimized.built.length} tenant index(es))`)
  return { store, truth, seeding: { chunks: ingested.rows, seconds, indexes: 1 + optimized.built.length } }
}

/** The synthetic corpus of a load config (shared topics, 5% duplicates). */
export function corpusSpec(c: LoadBenchConfig): CorpusSpec {
  return { seed: c.seed, dim: c.dim, tenants: c.tenants, chunksPerDoc: c.chunksPerDoc, topics: 'shared', duplicates: 0.05 }
}

/**
 * `maintenance_work_mem` for the shared index build: the graph of every chunk (vectors and links,
 * with a fifth more), at least 1 GB and at most 8 GB — a graph past it builds many times slower.
 */
function buildMemory(c: LoadBenchConfig): string {
  const perPartition = c.chunks / Math.max(1, c.partitions)
  const mb = Math.ceil((perPartition * (c.dim * 4 + 320) * 1.2) / 1024 ** 2)
  return `${Math.min(8192, Math.max(1024, mb))}MB`
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
    const startedAt = truth.now()
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
  run: LoadRun,
): LoadBenchReport {
  const { baseline, steps, soak } = run
  const { tenants, ...rest } = c
  // Throughput against clients means something only where the clients only grow.
  const saturated = c.shape === 'load' || c.shape === 'breakpoint' ? findSaturation(steps.filter((s) => s.phase !== 'soak')) : undefined
  const warnings = steps.flatMap((s) =>
    s.threadCpu
      .map((cpu, i) => ({ cpu, i }))
      .filter(({ cpu }) => cpu >= 0.9)
      .map(
        ({ cpu, i }) =>
          `${s.phase} ${s.clients}: client thread ${i + 1} used ${(cpu * 100).toFixed(0)}% of a core — its numbers are the client's limit, not the server's (raise --workers)`,
      ),
  )
  for (const s of steps)
    if (s.generated > 0)
      warnings.push(`${s.phase} ${s.clients}: ${s.generated} input(s) were generated inside the step — the bench measured itself`)
  if (!smoke.passed) warnings.unshift('the smoke check failed: no load was run')
  const verdictSteps = steps.filter((s) => s.phase !== 'soak')
  return {
    machine: machineInfo(),
    server,
    config: { ...rest, tenantCount: tenants.length, largestTenant: Math.max(...tenants.map((t) => t.chunks)) },
    method: `${c.shape}: ${LOAD_SHAPES[c.shape].describe}. The clients run on min(N, ${c.workers}) worker threads of one Node process, each thread with its own pg pool and store (a step of N clients: ${clientsPerWorker(8, c.workers).join('/')} for 8), all inputs made before the first step and shared; each client loops: an operation drawn from the mix, a tenant with probability ∝ its chunks; search/hybrid k=10 through the store (tuned per tenant by optimize()), filtered = search k=10 under an ACL filter { acl: { $in: [2 of 8 groups] } } (metadata index on acl; every row also checked to be in the groups), replace = replaceDocument of ${c.chunksPerDoc} pre-made chunks, delete = deleteDocument of a random document of the tenant (replaced again later); latencies of operations that started after the warm-up and ended inside the step; every returned row checked against a truth the threads share: metadata.owner is the caller, the document is one the caller holds (or held while the search ran), and the row is no older than its document's last write that ended before the read started (metadata.v, the write's version: a stale read is a wrong row); CPU per client thread from /proc/thread-self/stat; database view: pg_stat_database deltas over the step (each client connection publishes its counters first), wait events of active client backends sampled every 200 ms${c.replicas ? `. ${replicaMethod(c.replicas)}` : ''}`,
    seeding,
    smoke,
    baseline,
    shape: c.shape,
    steps,
    ...ladderVerdict(verdictSteps, c.maxP95Ms),
    saturates: saturated ? { clients: saturated.clients, throughput: saturated.throughput } : null,
    spike: c.shape === 'spike' ? spikeOutcome(steps) : null,
    // With replicas: every step of every arm (the primary-only arm's too), the fault and read-only steps.
    isolation: isolationOf(run.replicas ? run.replicas.runs.map((r) => r.step) : steps),
    warnings,
    soak,
    ...(run.replicas ? { replicas: run.replicas } : {}),
    process: { peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024) },
  }
}

function isolationOf(steps: ReadonlyArray<{ rowsChecked: number; wrongRows: number }>): LoadBenchReport['isolation'] {
  return { rowsChecked: steps.reduce((s, x) => s + x.rowsChecked, 0), wrongRows: steps.reduce((s, x) => s + x.wrongRows, 0) }
}

/** How the load reads from replicas, for the report's `method`. */
function replicaMethod(r: ReplicaBenchConfig): string {
  const o = r.options
  const arms = Array.from({ length: r.count + 1 }, (_, k) => (k === 0 ? 'the primary only' : `${k} standby(s)`)).join(', ')
  return (
    `Replicas: ${r.count} streaming standby(s) of the primary (pg_basebackup -R, hot standby, on the same machine). ` +
    `The ladder runs side by side on ${r.count + 1} arms — ${arms} — each arm its own client threads (same count, same mix, same inputs), each --clients step run on every arm one after the other (the order rotating from step to step), no fault in these steps; ` +
    'before each step through standbys they replay everything the primary has (a step starts from standbys in step with the primary). ' +
    `A thread reading through k standbys has a pool on each and a ReplicaSet over them (waitMs ${o.waitMs ?? 200}, maxLagMs ${o.maxLagMs ?? 10_000}, library defaults otherwise) handed to its store: its searches, filtered searches and hybrid searches go to a replica that has replayed the tenant's writes, else wait, else the primary; ` +
    (r.tokens
      ? "after each write its thread publishes the store's consistency token (the WAL position noted after the commit) in a per-tenant slot every thread shares (largest kept), before the truth counts the write done; every read takes its truth stamp, then carries the tenant's latest position as consistencyToken — so the truth check is read-your-writes across threads; "
      : "tokens NOT carried across threads (each thread's set knows only its own writes): what the verifier catches is what the tokens prevent; ") +
    'after the ladder, at the most clients: per arm a step of searches only (no write in flight); then through all the standbys ' +
    `${r.pauseReplay ? `the lagging case (replay paused on every standby from ${PAUSE_WINDOW.from * 100}% to ${PAUSE_WINDOW.to * 100}% of the measured window, then resumed); ` : ''}` +
    `${r.stopReplica ? `a stopped standby (replica 1 stopped at ${STOP_WINDOW.from * 100}% of the window, restarted at ${STOP_WINDOW.to * 100}%). ` : ''}` +
    "Per routed step the threads' routing counts (read at the start and end of the measured window) and each standby's replay lag sampled every 100 ms from the main thread; " +
    'before the ladder a routing probe: the same searches straight on replica 1 and through a ReplicaSet over it, interleaved, and the WAL check alone. ' +
    "The standbys run on the same machine as the primary and the clients, sharing its cores: a search on a standby takes CPU the primary would have used, so they add no throughput here; the run measures correctness and the routing's cost"
  )
}
