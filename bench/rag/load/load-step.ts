import type { ChunkInput, Database, Embedding, PgVectorStore } from '../../../src/index.js'
import { percentile } from '../../report/stats.js'
import type { CorpusTruth, WrongRow } from './corpus-truth.js'
import { databaseCounters, flushStatistics, sampleWaits, type DatabaseCounters } from './server-statistics.js'
import { classifyFailure, LOAD_OPERATIONS, pickOperation, type LoadOperation, type OperationStats } from './ladder-analysis.js'

/** What a step's clients draw from: the store, the truth, the mix, and pre-made inputs. */
export interface LoadContext {
  store: PgVectorStore
  /** The clients' pool the store was opened on, and its size (the step makes each connection publish its statistics). */
  pool: { db: Database; connections: number }
  /** A second handle for the bench's own reads of the server's statistics (not the clients' pool). */
  observer: Database
  truth: CorpusTruth
  mix: Record<LoadOperation, number>
  random: () => number
  /** A tenant drawn with the corpus's skew (bigger tenants get more traffic). */
  pickTenant(): string
  /** A query vector and text of the tenant (made before the first step: no generation inside the clock). */
  query(tenantId: string): { embedding: Embedding; text: string }
  /** Chunks for a replacement of one document of `tenantId` (pre-made vectors; its ACL group kept). */
  replacement(tenantId: string, documentId: string): ChunkInput[]
  /** An ACL filter of the caller's groups (`{ acl: { $in: [...] } }`) and the groups it allows. */
  aclFilter(): { filter: { acl: { $in: string[] } }; groups: ReadonlySet<string> }
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
  /** CPU the bench process used, as a fraction of one core (≥ 0.9: the client is the limit). */
  clientCpu: number
}

const OPS = LOAD_OPERATIONS

/**
 * Runs `clients` concurrent clients for `warmupSeconds` (not counted) and then `seconds`
 * (measured), each looping over operations drawn from the mix against tenants drawn with the
 * corpus's skew; every search answer is checked against the truth. The server's statistics
 * (`pg_stat_database`, waits sampled from `pg_stat_activity` every 200 ms) are read beside it.
 *
 * ### Examples
 * ```ts
 * const step = await runLoadStep(context, 8, 15, 3)
 * step.operations.search.p95Ms
 * ```
 */
export async function runLoadStep(ctx: LoadContext, clients: number, seconds: number, warmupSeconds: number): Promise<LoadStep> {
  const started = performance.now()
  const measureFrom = started + warmupSeconds * 1000
  const measureTo = measureFrom + seconds * 1000
  const tally = newTally()
  let before: DatabaseCounters | undefined
  let cpuBefore: NodeJS.CpuUsage | undefined
  const sampler = sampleWaits(ctx.observer, measureFrom, measureTo)
  const warm = new Promise<void>((resolve) =>
    setTimeout(
      async () => {
        before = await databaseCounters(ctx.observer)
        cpuBefore = process.cpuUsage()
        resolve()
      },
      Math.max(0, measureFrom - performance.now()),
    ),
  )
  await Promise.all([...Array.from({ length: clients }, () => runClient(ctx, measureFrom, measureTo, tally)), warm])
  const cpu = process.cpuUsage(cpuBefore)
  await flushStatistics(ctx.pool.db, ctx.pool.connections)
  const after = await databaseCounters(ctx.observer)
  const waits = await sampler
  return summarizeStep(clients, seconds, tally, before!, after, waits, (cpu.user + cpu.system) / 1e6 / seconds)
}

interface Tally {
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

async function runClient(ctx: LoadContext, measureFrom: number, measureTo: number, tally: Tally): Promise<void> {
  while (performance.now() < measureTo) {
    const op = pickOperation(ctx.mix, ctx.random)
    const tenantId = ctx.pickTenant()
    const t0 = performance.now()
    try {
      await runOperation(ctx, op, tenantId, t0, tally)
      const t1 = performance.now()
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

async function runOperation(ctx: LoadContext, op: LoadOperation, tenantId: string, startedAt: number, tally: Tally): Promise<void> {
  const tenant = ctx.store.forTenant(tenantId)
  if (op === 'search' || op === 'filtered' || op === 'hybrid') {
    const q = ctx.query(tenantId)
    const acl = op === 'filtered' ? ctx.aclFilter() : undefined
    const rows =
      op === 'hybrid'
        ? await tenant.hybridSearch({ embedding: q.embedding, text: q.text, k: 10 })
        : await tenant.search(q.embedding, { k: 10, filter: acl?.filter })
    tally.rowsChecked += rows.length
    const wrong = ctx.truth.check(tenantId, rows, startedAt, acl?.groups)
    tally.wrongCount += wrong.length
    tally.wrong.push(...wrong.slice(0, Math.max(0, 10 - tally.wrong.length)))
    return
  }
  const ids = ctx.truth.documentIds(tenantId)
  const documentId = ids[Math.floor(ctx.random() * ids.length)]!
  ctx.truth.begin(tenantId, documentId)
  let ok = false
  try {
    if (op === 'replace') await tenant.replaceDocument(documentId, ctx.replacement(tenantId, documentId))
    else await tenant.deleteDocument(documentId)
    ok = true
  } finally {
    ctx.truth.end(tenantId, documentId, op, ok)
  }
}

function summarizeStep(
  clients: number,
  seconds: number,
  tally: Tally,
  before: DatabaseCounters,
  after: DatabaseCounters,
  sampled: { waits: Record<string, number>; samples: number },
  clientCpu: number,
): LoadStep {
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
  const reads_ = after.reads - before.reads
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
      bufferHitRatio: hits + reads_ > 0 ? hits / (hits + reads_) : 1,
      waits: sampled.waits,
      samples: sampled.samples,
    },
    clientCpu,
  }
}
