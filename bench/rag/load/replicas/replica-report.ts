import type { ReplicaOptions } from '../../../../src/index.js'
import type { LoadStep } from '../load-step.js'
import type { ReplicaStepReport, RoutedStep } from './replica-steps.js'
import type { RoutingCost } from './routing-cost.js'

/** What a step of the replica run was: a rung of the ladder (no fault), the lagging case, the stopped standby, searches only. */
export type ReplicaStepKind = 'ladder' | 'lagging' | 'stopped' | 'read-only'

/** One step of the replica run: on which arm (0: the primary only; k: through k standbys), what kind, what it measured. */
export interface ReplicaStepRun {
  replicas: number
  kind: ReplicaStepKind
  step: RoutedStep
}

/** One step of one arm, as the side-by-side table shows it. */
export interface ArmRow {
  /** 0: the primary only (no ReplicaSet); k: reads through k standbys. */
  replicas: number
  kind: ReplicaStepKind
  clients: number
  /** Completed operations per second, all kinds. */
  throughput: number
  searchP50Ms: number
  searchP95Ms: number
  /** p95 of search + hybrid. */
  readP95Ms: number
  /** replaceDocument p50 (NaN in a read-only step). */
  replaceP50Ms: number
  /** Reads served by replicas / routed reads (null on the primary-only arm). */
  replicaShare: number | null
  reads: ReplicaStepReport['reads'] | null
  waitedForReplay: number
  toPrimary: ReplicaStepReport['toPrimary'] | null
  wrongRows: number
  failedCalls: number
}

/** One target of the replica run, as measured. */
export interface ReplicaTarget {
  target: string
  measured: string
  met: boolean
}

/** What `rag-bench load --replicas N` adds to the report (`replicas`). */
export interface ReplicaBenchReport {
  count: number
  nodes: string[]
  options: ReplicaOptions
  tokens: boolean
  pauseReplay: boolean
  stopReplica: boolean
  /** The machine's load average (1, 5, 15 min) when the replica run started and ended: other work on the machine. */
  loadAverage: { start: number[]; end: number[] }
  /** How long the standbys took to replay the seeded corpus before the first step. */
  catchUpSeconds: number
  routingCost: RoutingCost
  /** The ladder, each step on the primary only and through 1 … N standbys, side by side (no fault in these steps). */
  comparison: ArmRow[]
  /** Searches only, no write in flight, per arm. */
  readOnly: ArmRow[]
  /** Replay paused on every standby mid-step (through all N): where the reads went, and that they stayed right. */
  lagging: {
    clients: number
    seconds: number
    /** 1-based. */
    pausedReplicas: number[]
    pausedFromSecond: number
    pausedToSecond: number
    row: ArmRow
    /** The largest replay lag (ms) and WAL distance (bytes) seen on each standby from outside the routing. */
    replayLagMsMax: number[]
    behindBytesMax: number[]
    skippedLagging: number
  } | null
  /** Every answer of every step through standbys checked against the truth (a stale read is a wrong row). */
  readYourWrites: {
    operations: number
    reads: number
    writes: number
    rowsChecked: number
    wrongRows: number
    /** Steps in which replay was paused and resumed. */
    pausedSteps: number
    waitedForReplay: number
    toPrimary: ReplicaStepReport['toPrimary']
    /** Tenants whose writes were carried as tokens to other threads' reads. */
    tenantsWithTokens: number
  }
  stoppedReplica: {
    clients: number
    replica: number
    /** Errors and rejections of the step's operations. */
    failedCalls: number
    /** Reads the stopped standby failed (each retried elsewhere). */
    nodeFailures: number
    whileDown: NonNullable<ReplicaStepReport['stopped']>['whileDown']
    afterRestart: NonNullable<ReplicaStepReport['stopped']>['afterRestart']
    restartSeconds: number
    restartAttempts: number
    /** Seconds into the measured window: when it was stopped and when it answered again. */
    stoppedAtSecond: number
    restartedAtSecond: number
    windowSeconds: number
  } | null
  /** The largest replay lag seen on each standby over the whole run (ms, sampled every 100 ms). */
  routingLagMsMax: number[]
  targets: ReplicaTarget[]
  /** Every step of the run, in order, in full. */
  runs: ReplicaStepRun[]
}

/** What {@link summarizeReplicaRun} is given. */
export interface ReplicaRunFacts {
  config: { count: number; pauseReplay: boolean; stopReplica: boolean; tokens: boolean; options: ReplicaOptions }
  names: string[]
  loadAverage: { start: number[]; end: number[] }
  catchUpSeconds: number
  routingCost: RoutingCost
  runs: ReplicaStepRun[]
  routingLagMsMax: number[]
  positions: number
}

/** The fewest verified operations the read-your-writes target asks for. */
export const MIN_VERIFIED_OPERATIONS = 100_000
/** The share of searches replicas must serve with no write in flight. */
export const MIN_REPLICA_SHARE = 0.95

const READS = ['search', 'filtered', 'hybrid'] as const
const count = (s: LoadStep, ops: readonly string[]) => ops.reduce((n, op) => n + s.operations[op as keyof LoadStep['operations']].count, 0)
const failed = (s: LoadStep) => Object.values(s.operations).reduce((n, o) => n + o.errors, 0) + s.rejections
const NO_PRIMARY = () => ({ asked: 0, behindWrite: 0, lagging: 0, down: 0, sticky: 0, pending: 0 })

function armRow(r: ReplicaStepRun): ArmRow {
  const s = r.step
  const x = s.replicas
  return {
    replicas: r.replicas,
    kind: r.kind,
    clients: s.clients,
    throughput: s.throughput,
    searchP50Ms: s.operations.search.p50Ms,
    searchP95Ms: s.operations.search.p95Ms,
    readP95Ms: s.readP95Ms,
    replaceP50Ms: s.operations.replace.count > 0 ? s.operations.replace.p50Ms : Number.NaN,
    replicaShare: x ? x.replicaShare : null,
    reads: x ? x.reads : null,
    waitedForReplay: x?.waitedForReplay ?? 0,
    toPrimary: x ? x.toPrimary : null,
    wrongRows: s.wrongRows,
    failedCalls: failed(s),
  }
}

/**
 * The report's `replicas`: the arms side by side, the lagging case, the stopped standby,
 * read-your-writes over every step through standbys, and the four targets with what was measured.
 *
 * ### Examples
 * ```ts
 * const replicas = summarizeReplicaRun(facts)
 * replicas.targets.every((t) => t.met)
 * ```
 */
export function summarizeReplicaRun(f: ReplicaRunFacts): ReplicaBenchReport {
  const routed = f.runs.filter((r) => r.replicas > 0).map((r) => r.step)
  const toPrimary = NO_PRIMARY()
  for (const s of routed)
    for (const k of Object.keys(toPrimary) as Array<keyof typeof toPrimary>) toPrimary[k] += s.replicas?.toPrimary[k] ?? 0
  const reads = routed.reduce((n, s) => n + count(s, READS), 0)
  const writes = routed.reduce((n, s) => n + count(s, ['replace', 'delete']), 0)
  const readYourWrites = {
    operations: reads + writes,
    reads,
    writes,
    rowsChecked: routed.reduce((n, s) => n + s.rowsChecked, 0),
    wrongRows: routed.reduce((n, s) => n + s.wrongRows, 0),
    pausedSteps: routed.filter((s) => s.replicas?.fault?.kind === 'pause').length,
    waitedForReplay: routed.reduce((n, s) => n + (s.replicas?.waitedForReplay ?? 0), 0),
    toPrimary,
    tenantsWithTokens: f.positions,
  }
  const comparison = f.runs
    .filter((r) => r.kind === 'ladder')
    .map(armRow)
    .sort((a, b) => a.clients - b.clients || a.replicas - b.replicas)
  const readOnly = f.runs.filter((r) => r.kind === 'read-only').map(armRow)
  const lagging = laggingOutcome(f.runs.find((r) => r.kind === 'lagging'))
  const stoppedReplica = stoppedOutcome(f.runs.find((r) => r.kind === 'stopped'))
  return {
    count: f.config.count,
    nodes: f.names,
    options: f.config.options,
    tokens: f.config.tokens,
    pauseReplay: f.config.pauseReplay,
    stopReplica: f.config.stopReplica,
    loadAverage: f.loadAverage,
    catchUpSeconds: f.catchUpSeconds,
    routingCost: f.routingCost,
    comparison,
    readOnly,
    lagging,
    readYourWrites,
    stoppedReplica,
    routingLagMsMax: f.routingLagMsMax,
    targets: targetsOf(
      readYourWrites,
      readOnly.find((r) => r.replicas === f.config.count),
      f.routingCost,
      stoppedReplica,
    ),
    runs: f.runs,
  }
}

function laggingOutcome(r: ReplicaStepRun | undefined): ReplicaBenchReport['lagging'] {
  const x = r?.step.replicas
  if (!r || !x?.fault) return null
  return {
    clients: r.step.clients,
    seconds: r.step.seconds,
    pausedReplicas: x.fault.replicas.map((i) => i + 1),
    pausedFromSecond: x.fault.fromSecond,
    pausedToSecond: x.fault.toSecond,
    row: armRow(r),
    replayLagMsMax: x.nodes.map((n) => n.replayLagMsMax),
    behindBytesMax: x.nodes.map((n) => n.behindBytesMax),
    skippedLagging: x.nodes.reduce((n, node) => n + node.skippedLagging, 0),
  }
}

function stoppedOutcome(r: ReplicaStepRun | undefined): ReplicaBenchReport['stoppedReplica'] {
  const x = r?.step.replicas
  if (!r || !x?.fault || !x.stopped) return null
  const replica = x.fault.replicas[0]!
  return {
    clients: r.step.clients,
    replica: replica + 1,
    failedCalls: failed(r.step),
    nodeFailures: x.nodes[replica]?.failures ?? 0,
    whileDown: x.stopped.whileDown,
    afterRestart: x.stopped.afterRestart,
    restartSeconds: x.stopped.restartSeconds,
    restartAttempts: x.stopped.restartAttempts,
    stoppedAtSecond: x.stopped.stoppedAtSecond,
    restartedAtSecond: x.stopped.restartedAtSecond,
    windowSeconds: r.step.seconds,
  }
}

function targetsOf(
  ryw: ReplicaBenchReport['readYourWrites'],
  readOnly: ArmRow | undefined,
  cost: RoutingCost,
  stopped: ReplicaBenchReport['stoppedReplica'],
): ReplicaTarget[] {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`
  const share = readOnly?.replicaShare ?? 0
  const searches = readOnly?.reads ? readOnly.reads.primary + readOnly.reads.replicas.reduce((a, b) => a + b, 0) : 0
  const targets: ReplicaTarget[] = [
    {
      target: `0 stale reads in ≥ ${MIN_VERIFIED_OPERATIONS.toLocaleString('en-US')} verified operations, replay paused and resumed during the run`,
      measured: `${ryw.wrongRows} wrong rows in ${ryw.operations.toLocaleString('en-US')} operations through standbys (${ryw.reads.toLocaleString('en-US')} reads, ${ryw.rowsChecked.toLocaleString('en-US')} rows checked); replay paused in ${ryw.pausedSteps} step(s)`,
      met: ryw.wrongRows === 0 && ryw.operations >= MIN_VERIFIED_OPERATIONS && ryw.pausedSteps > 0,
    },
    {
      target: `with no write in flight, ≥ ${pct(MIN_REPLICA_SHARE)} of searches served by replicas`,
      measured: readOnly ? `${pct(share)} of ${searches.toLocaleString('en-US')} routed searches` : 'not run',
      met: share >= MIN_REPLICA_SHARE,
    },
    {
      target: `routing adds ≤ ${cost.targetAddedP50Ms} ms to a search's p50 over the same search straight on a replica`,
      measured: `${cost.addedP50Ms.toFixed(3)} ms (${cost.straight.p50Ms.toFixed(3)} → ${cost.routed.p50Ms.toFixed(3)} ms over ${cost.searches} interleaved pairs; pair median ${cost.addedPairMedianMs.toFixed(3)} ms)`,
      met: cost.met,
    },
  ]
  if (stopped) {
    const readsWhileDown = stopped.whileDown.primary + stopped.whileDown.replicas.reduce((a, b) => a + b, 0)
    targets.push({
      target: 'a stopped replica costs no failed call (its reads retried elsewhere; used again once restarted)',
      measured: `${stopped.failedCalls} failed call(s); replica ${stopped.replica} failed ${stopped.nodeFailures} read(s); ${readsWhileDown} reads served while it was down; ${stopped.afterRestart.replicas[stopped.replica - 1] ?? 0} served by it after its restart`,
      met: stopped.failedCalls === 0 && readsWhileDown > 0,
    })
  }
  return targets
}

/**
 * The replica lines of the human report: the arms side by side, the routing of every step through
 * standbys, then the run's summary and its targets.
 *
 * ### Examples
 * ```ts
 * lines.push(...replicaLines(report.replicas))
 * ```
 */
export function replicaLines(r: ReplicaBenchReport): string[] {
  const lines = ['', `replicas:  ${r.count} (${r.nodes.join(', ')}), tokens ${r.tokens ? 'carried across threads' : 'NOT carried'}`]
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-')
  lines.push(
    '  side by side   clients  reads via       ops/s  search p50  search p95  read p95  replace p50  on replicas  waited  to primary  wrong',
  )
  for (const a of [...r.comparison, ...r.readOnly])
    lines.push(
      [
        `  ${a.kind.padEnd(12)}`,
        String(a.clients).padStart(8),
        `  ${(a.replicas === 0 ? 'primary only' : `${a.replicas} replica(s)`).padEnd(12)}`,
        f(a.throughput, 0).padStart(8),
        f(a.searchP50Ms).padStart(11),
        f(a.searchP95Ms).padStart(11),
        f(a.readP95Ms).padStart(9),
        f(a.replaceP50Ms).padStart(12),
        (a.replicaShare === null ? '-' : `${(a.replicaShare * 100).toFixed(1)}%`).padStart(12),
        String(a.waitedForReplay).padStart(7),
        String(a.toPrimary ? a.toPrimary.behindWrite + a.toPrimary.lagging + a.toPrimary.down : '-').padStart(11),
        String(a.wrongRows).padStart(6),
      ].join(' '),
    )
  lines.push(
    '  routed step      replicas  clients  fault                reads primary / replicas  waited  to primary (behind/lagging/down)  lag ms max  failures',
  )
  for (const run of r.runs) {
    const x = run.step.replicas
    if (!x) continue
    const fault = x.fault
      ? `${x.fault.kind} r${x.fault.replicas.map((i) => i + 1).join('+')} ${x.fault.fromSecond.toFixed(0)}-${x.fault.toSecond.toFixed(0)} s`
      : '-'
    const tp = x.toPrimary
    lines.push(
      [
        `  ${run.kind.padEnd(15)}`,
        String(run.replicas).padStart(8),
        String(run.step.clients).padStart(8),
        `  ${fault.padEnd(19)}`,
        `${x.reads.primary} / ${x.reads.replicas.join(' / ')}`.padStart(25),
        String(x.waitedForReplay).padStart(7),
        `${tp.behindWrite}/${tp.lagging}/${tp.down}`.padStart(33),
        x.nodes
          .map((n) => n.replayLagMsMax.toFixed(0))
          .join('/')
          .padStart(11),
        x.nodes
          .map((n) => n.failures)
          .join('/')
          .padStart(9),
      ].join(' '),
    )
  }
  lines.push(...summaryLines(r))
  return lines
}

function summaryLines(r: ReplicaBenchReport): string[] {
  const c = r.routingCost
  const lines = [
    `  routing cost: straight on a replica p50 ${c.straight.p50Ms.toFixed(3)} ms, through the ReplicaSet ${c.routed.p50Ms.toFixed(3)} ms (+${c.addedP50Ms.toFixed(3)} ms; ${c.searches} interleaved pairs); the WAL check alone p50 ${c.positionCheck.p50Ms.toFixed(3)} ms, p95 ${c.positionCheck.p95Ms.toFixed(3)} ms`,
    `  read-your-writes: ${r.readYourWrites.wrongRows} wrong of ${r.readYourWrites.rowsChecked.toLocaleString('en-US')} rows in ${r.readYourWrites.operations.toLocaleString('en-US')} operations through standbys; ${r.readYourWrites.waitedForReplay} reads waited for replay; to the primary: ${r.readYourWrites.toPrimary.behindWrite} behind a write, ${r.readYourWrites.toPrimary.lagging} lagging, ${r.readYourWrites.toPrimary.down} down`,
  ]
  if (r.lagging) {
    const l = r.lagging
    lines.push(
      `  lagging: replay paused on replica ${l.pausedReplicas.join(' and ')} from ${l.pausedFromSecond.toFixed(0)} to ${l.pausedToSecond.toFixed(0)} s of ${l.seconds} s, ${l.clients} client(s): reads ${l.row.reads?.primary ?? 0} primary / ${l.row.reads?.replicas.join(' / ') ?? '-'}, ${l.row.waitedForReplay} waited, lag up to ${l.replayLagMsMax.map((x) => x.toFixed(0)).join('/')} ms; ${l.row.wrongRows} wrong, ${l.row.failedCalls} failed`,
    )
  }
  if (r.stoppedReplica) {
    const s = r.stoppedReplica
    lines.push(
      `  stopped replica ${s.replica}, ${s.clients} client(s), down from ${s.stoppedAtSecond.toFixed(1)} to ${s.restartedAtSecond.toFixed(1)} s of ${s.windowSeconds} s: ${s.failedCalls} failed calls, ${s.nodeFailures} reads it failed retried elsewhere; while down ${s.whileDown.primary} / ${s.whileDown.replicas.join(' / ')}, after restart ${s.afterRestart.primary} / ${s.afterRestart.replicas.join(' / ')}`,
    )
  }
  lines.push(
    `  load average ${r.loadAverage.start.map((x) => x.toFixed(2)).join(' ')} → ${r.loadAverage.end.map((x) => x.toFixed(2)).join(' ')}`,
  )
  for (const t of r.targets) lines.push(`  target ${t.met ? 'MET   ' : 'MISSED'} ${t.target}: ${t.measured}`)
  return lines
}
