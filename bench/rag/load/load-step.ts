import type { ChunkInput, Database, Embedding, PgVectorStore } from '../../../src/index.js'
import { percentile } from '../../report/stats.js'
import { generatorCalls } from '../../synthetic/corpus.js'
import { threadCpuSeconds } from '../../workers/thread-cpu.js'
import { truthClock, type CorpusTruth, type WrongRow } from './corpus-truth.js'
import { classifyFailure, LOAD_OPERATIONS, pickOperation, type LoadOperation, type OperationStats } from './ladder-analysis.js'
import { databaseCounters, flushStatistics, sampleWaits, type DatabaseCounters } from './server-statistics.js'

/** What one thread's clients draw from: the store, the truth, the mix, and pre-made inputs. */
export interface LoadContext {
  store: PgVectorStore
  /** The pool the store was opened on, and its size (a step makes each connection publish its statistics). */
  pool: { db: Database; connections: number }
  truth: CorpusTruth
  mix: Record<LoadOperation, number>
  random: () => number
  /** A tenant drawn with the corpus's skew (bigger tenants get more traffic). */
  pickTenant(): string
  /** A query vector and text of the tenant (made before the first step: no generation inside the clock). */
  query(tenantId: string): { embedding: Embedding; text: string }
  /** Chunks for a replacement of one document of `tenantId` (pre-made vectors; its ACL group kept; `version` in `metadata.v`). */
  replacement(tenantId: string, documentId: string, version: number): ChunkInput[]
  /** An ACL filter of the caller's groups (`{ acl: { $in: [...] } }`) and the groups it allows. */
  aclFilter(): { filter: { acl: { $in: string[] } }; groups: ReadonlySet<string> }
  /** With read replicas (`--replicas`): how reads carry the load's writes to the replicas; absent otherwise. */
  consistency?: LoadConsistency
}

/**
 * Read-your-writes across the load's threads, as an app carries it across processes: a write
 * publishes its WAL position for its tenant before the truth counts it done, and a read of the
 * tenant carries the latest published position as its `consistencyToken`.
 */
export interface LoadConsistency {
  /** What a read of `tenantId` carries (`{ consistencyToken }`), taken after the read's truth stamp. */
  readOptions(tenantId: string): { consistencyToken?: string }
  /** After a write of `tenantId` committed, before the truth counts it done: publishes its position. */
  wrote(tenantId: string): Promise<void>
}

/** What one step of the ladder measured. */
export interface LoadStep {
  clients: number
  seconds: number
  operations: Record<LoadOperation, OperationStats>
  throughput: number
  readP95Ms: number
  errorRate: number
  rejections: number
  rowsChecked: number
  wrongRows: number
  /** The first ten wrong rows. */
  wrongSample: WrongRow[]
  /** The first few failures' messages, by kind. */
  failures: { errors: string[]; rejections: string[] }
  database: { commits: number; commitsPerSecond: number; bufferHitRatio: number; waits: Record<string, number>; samples: number }
  /** CPU of the busiest thread that ran clients, as a fraction of one core (≥ 0.9: the client is the limit). */
  clientCpu: number
  /** CPU of each thread that ran clients in this step, as fractions of one core. */
  threadCpu: number[]
  /** How `threadCpu` was read: `thread` (Linux: each thread's own) or `process` (the whole process per thread). */
  cpuSource: 'thread' | 'process'
  /** CPU of the whole bench process (every thread, the collector's too) over the step, in cores. */
  processCpu: number
  /** Inputs generated while the step ran, in every thread (the generator's calls): 0, or the bench measured itself. */
  generated: number
}

/** What one thread's clients did in a step's window. */
export interface ClientsResult {
  tally: Tally
  /** CPU seconds the thread used inside the window, and how it was read. */
  cpuSeconds: number
  cpuSource: 'thread' | 'process'
  /** Generator calls in the thread while its clients ran. */
  generated: number
}

/** Runs a step's clients: in this thread ({@link inThisThread}) or spread over worker threads. */
export interface ClientRunner {
  /**
   * Runs `clients` clients until `measureTo`, measuring from `measureFrom` ({@link truthClock} ms);
   * one result per thread. `mix`, when given, replaces the context's mix for this step.
   */
  run(clients: number, measureFrom: number, measureTo: number, mix?: Record<LoadOperation, number>): Promise<ClientsResult[]>
}

const OPS = LOAD_OPERATIONS

/**
 * Runs `clients` clients through `runner` for `warmupSeconds` (not counted) and then `seconds`
 * (measured), each looping over operations drawn from the mix against tenants drawn with the
 * corpus's skew; every search answer is checked against the truth. The server's statistics
 * (`pg_stat_database`, after every client connection published its own; waits sampled from
 * `pg_stat_activity` every 200 ms) are read through `observer` beside it.
 *
 * ### Examples
 * ```ts
 * const step = await runLoadStep(workers, observer, 8, 15, 3)
 * step.operations.search.p95Ms
 * ```
 */
export async function runLoadStep(
  runner: ClientRunner,
  observer: Database,
  clients: number,
  seconds: number,
  warmupSeconds: number,
): Promise<LoadStep> {
  const measureFrom = truthClock() + warmupSeconds * 1000
  const measureTo = measureFrom + seconds * 1000
  const local = (t: number) => t - performance.timeOrigin
  let before: DatabaseCounters | undefined
  let cpuBefore: NodeJS.CpuUsage | undefined
  const sampler = sampleWaits(observer, local(measureFrom), local(measureTo))
  const warm = new Promise<void>((resolve, reject) =>
    setTimeout(
      () =>
        void databaseCounters(observer).then((counters) => {
          before = counters
          cpuBefore = process.cpuUsage()
          resolve()
        }, reject),
      Math.max(0, measureFrom - truthClock()),
    ),
  )
  const [results] = await Promise.all([runner.run(clients, measureFrom, measureTo), warm])
  const cpu = process.cpuUsage(cpuBefore)
  const after = await databaseCounters(observer)
  const waits = await sampler
  return summarizeStep(clients, seconds, results, before!, after, waits, (cpu.user + cpu.system) / 1e6 / seconds)
}

/**
 * Runs the clients in the calling thread, on `ctx`'s store and pool.
 *
 * ### Examples
 * ```ts
 * const step = await runLoadStep(inThisThread(ctx), observer, 2, 5, 1)
 * ```
 */
export function inThisThread(ctx: LoadContext): ClientRunner {
  return { run: async (clients, from, to, mix) => [await runClients(mix ? { ...ctx, mix } : ctx, clients, from, to)] }
}

/**
 * Runs `clients` concurrent clients on `ctx` in this thread until `measureTo`, then makes every
 * connection of its pool publish its statistics. What a worker thread runs for its share of a step.
 *
 * ### Examples
 * ```ts
 * const result = await runClients(ctx, 4, truthClock() + 1000, truthClock() + 11_000)
 * ```
 */
export async function runClients(ctx: LoadContext, clients: number, measureFrom: number, measureTo: number): Promise<ClientsResult> {
  const tally = newTally()
  const generatedBefore = generatorCalls()
  let cpuBefore = threadCpuSeconds()
  const cpuStart = setTimeout(() => (cpuBefore = threadCpuSeconds()), Math.max(0, measureFrom - truthClock()))
  await Promise.all(Array.from({ length: clients }, () => runClient(ctx, measureFrom, measureTo, tally)))
  clearTimeout(cpuStart)
  const cpuAfter = threadCpuSeconds()
  await flushStatistics(ctx.pool.db, ctx.pool.connections)
  return {
    tally,
    cpuSeconds: cpuAfter.seconds - cpuBefore.seconds,
    cpuSource: cpuAfter.source,
    generated: generatorCalls() - generatedBefore,
  }
}

/** What a thread's clients counted (plain data: it travels from worker threads). */
export interface Tally {
  ms: Record<LoadOperation, number[]>
  errors: Record<LoadOperation, number>
  rejections: Record<LoadOperation, number>
  rowsChecked: number
  wrongCount: number
  /** The first ten wrong rows. */
  wrong: WrongRow[]
  failures: { errors: string[]; rejections: string[] }
}

function newTally(): Tally {
  const zero = () => ({ search: 0, filtered: 0, hybrid: 0, replace: 0, delete: 0 })
  return {
    ms: { search: [], filtered: [], hybrid: [], replace: [], delete: [] },
    errors: zero(),
    rejections: zero(),
    rowsChecked: 0,
    wrongCount: 0,
    wrong: [],
    failures: { errors: [], rejections: [] },
  }
}

/**
 * The threads' tallies of one step as one. Latencies are concatenated, not spread into `push`: a
 * long step or a soak holds hundreds of thousands, past what a call's arguments may be.
 *
 * ### Examples
 * ```ts
 * mergeTallies(results.map((r) => r.tally)).ms.search.length
 * ```
 */
export function mergeTallies(tallies: readonly Tally[]): Tally {
  const all = newTally()
  for (const t of tallies) {
    for (const op of OPS) {
      all.ms[op] = all.ms[op].concat(t.ms[op])
      all.errors[op] += t.errors[op]
      all.rejections[op] += t.rejections[op]
    }
    all.rowsChecked += t.rowsChecked
    all.wrongCount += t.wrongCount
    all.wrong.push(...t.wrong.slice(0, Math.max(0, 10 - all.wrong.length)))
    all.failures.errors.push(...t.failures.errors.slice(0, Math.max(0, 5 - all.failures.errors.length)))
    all.failures.rejections.push(...t.failures.rejections.slice(0, Math.max(0, 5 - all.failures.rejections.length)))
  }
  return all
}

async function runClient(ctx: LoadContext, measureFrom: number, measureTo: number, tally: Tally): Promise<void> {
  while (truthClock() < measureTo) {
    const op = pickOperation(ctx.mix, ctx.random)
    const tenantId = ctx.pickTenant()
    const t0 = truthClock()
    try {
      await runOperation(ctx, op, tenantId, tally)
      const t1 = truthClock()
      if (t0 >= measureFrom && t1 <= measureTo) tally.ms[op].push(t1 - t0)
    } catch (err) {
      if (t0 < measureFrom) continue
      const kind = classifyFailure(err)
      const message = err instanceof Error ? err.message : String(err)
      if (kind === 'rejection') tally.rejections[op]++
      else tally.errors[op]++
      const list = kind === 'rejection' ? tally.failures.rejections : tally.failures.errors
      if (list.length < 5) list.push(`${op}: ${message}`)
    }
  }
}

/**
 * One operation. A read takes its truth stamp first, then its routing options (the tenant's latest
 * published write), and its rows are checked against what had ended before the stamp. A write
 * publishes its position (with replicas) before the truth counts it done.
 */
async function runOperation(ctx: LoadContext, op: LoadOperation, tenantId: string, tally: Tally): Promise<void> {
  const tenant = ctx.store.forTenant(tenantId)
  if (op === 'search' || op === 'filtered' || op === 'hybrid') {
    const startedAt = ctx.truth.now()
    const routing = ctx.consistency?.readOptions(tenantId)
    const q = ctx.query(tenantId)
    const acl = op === 'filtered' ? ctx.aclFilter() : undefined
    const rows =
      op === 'hybrid'
        ? await tenant.hybridSearch({ embedding: q.embedding, text: q.text, k: 10, ...routing })
        : await tenant.search(q.embedding, { k: 10, filter: acl?.filter, ...routing })
    tally.rowsChecked += rows.length
    const wrong = ctx.truth.check(tenantId, rows, startedAt, acl?.groups)
    tally.wrongCount += wrong.length
    tally.wrong.push(...wrong.slice(0, Math.max(0, 10 - tally.wrong.length)))
    return
  }
  const ids = ctx.truth.documentIds(tenantId)
  const documentId = ids[Math.floor(ctx.random() * ids.length)]!
  const ticket = ctx.truth.begin(tenantId, documentId)
  let ok = false
  try {
    if (op === 'replace') await tenant.replaceDocument(documentId, ctx.replacement(tenantId, documentId, ticket.version))
    else await tenant.deleteDocument(documentId)
    await ctx.consistency?.wrote(tenantId)
    ok = true
  } finally {
    ctx.truth.end(tenantId, documentId, op, ok, ticket)
  }
}

function summarizeStep(
  clients: number,
  seconds: number,
  results: readonly ClientsResult[],
  before: DatabaseCounters,
  after: DatabaseCounters,
  sampled: { waits: Record<string, number>; samples: number },
  processCpu: number,
): LoadStep {
  const tally = mergeTallies(results.map((r) => r.tally))
  const operations = Object.fromEntries(
    OPS.map((op) => {
      const ms = tally.ms[op]
      return [
        op,
        {
          count: ms.length,
          perSecond: ms.length / seconds,
          p50Ms: ms.length ? percentile(ms, 50) : 0,
          p95Ms: ms.length ? percentile(ms, 95) : 0,
          p99Ms: ms.length ? percentile(ms, 99) : 0,
          errors: tally.errors[op],
          rejections: tally.rejections[op],
        },
      ]
    }),
  ) as Record<LoadOperation, OperationStats>
  const done = OPS.reduce((s, op) => s + operations[op].count, 0)
  const errors = OPS.reduce((s, op) => s + operations[op].errors, 0)
  const rejections = OPS.reduce((s, op) => s + operations[op].rejections, 0)
  const reads = [...tally.ms.search, ...tally.ms.filtered, ...tally.ms.hybrid]
  const hits = after.hits - before.hits
  const blockReads = after.reads - before.reads
  const threadCpu = results.map((r) => r.cpuSeconds / seconds)
  return {
    clients,
    seconds,
    operations,
    throughput: done / seconds,
    readP95Ms: reads.length ? percentile(reads, 95) : 0,
    errorRate: errors / Math.max(1, done + errors + rejections),
    rejections,
    rowsChecked: tally.rowsChecked,
    wrongRows: tally.wrongCount,
    wrongSample: tally.wrong,
    failures: tally.failures,
    database: {
      commits: after.commits - before.commits,
      commitsPerSecond: (after.commits - before.commits) / seconds,
      bufferHitRatio: hits + blockReads > 0 ? hits / (hits + blockReads) : 1,
      waits: sampled.waits,
      samples: sampled.samples,
    },
    clientCpu: Math.max(0, ...threadCpu),
    threadCpu,
    cpuSource: results.every((r) => r.cpuSource === 'thread') ? 'thread' : 'process',
    processCpu,
    generated: results.reduce((n, r) => n + r.generated, 0),
  }
}
