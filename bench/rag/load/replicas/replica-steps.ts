import type { ReplicaStats } from '../../../../src/index.js'
import { truthClock } from '../corpus-truth.js'
import type { LoadStep } from '../load-step.js'
import type { LagSeen, ReplicaControl } from './replica-control.js'

/** A fault the bench puts on standbys during a step's measured window (seconds from its start). */
export interface ReplicaFault {
  /** `pause`: replay paused (`pg_wal_replay_pause()`) and resumed — the standbys lag; `stop`: one standby stopped and restarted. */
  kind: 'pause' | 'stop'
  /** 0-based (replica `i + 1` in the report): every standby paused, or the one stopped. */
  replicas: number[]
  fromSecond: number
  toSecond: number
}

/** Where one step's reads went, summed over the client threads' replica sets, with what the bench saw of the standbys. */
export interface ReplicaStepReport {
  reads: { primary: number; replicas: number[] }
  /** Reads served by replicas / all routed reads. */
  replicaShare: number
  /** Reads that waited for a replica to replay the tenant's latest write, then ran there. */
  waitedForReplay: number
  /** Reads sent to the primary, by reason. */
  toPrimary: ReplicaStats['toPrimary']
  nodes: Array<{
    node: string
    reads: number
    waited: number
    /** Reads it failed (each retried elsewhere). */
    failures: number
    skippedLagging: number
    /** Sampled from the main thread every 100 ms over the measured window. */
    replayLagMsMax: number
    behindBytesMax: number
    unreachableSamples: number
  }>
  fault: ReplicaFault | null
  /**
   * A stopped standby: reads between its stop and its restart, and after; how long the restart took,
   * in how many attempts; when it was down (seconds into the measured window, which it may outlast).
   */
  stopped?: {
    whileDown: RoutedCounts
    afterRestart: RoutedCounts
    restartSeconds: number
    restartAttempts: number
    stoppedAtSecond: number
    restartedAtSecond: number
  }
}

/** Routed reads of a window: the primary's, each replica's, and each replica's failures. */
export interface RoutedCounts {
  primary: number
  replicas: number[]
  failures: number[]
}

/** A step with its routing (`replicas`), when its clients read through replica sets. */
export type RoutedStep = LoadStep & { replicas?: ReplicaStepReport }

/** Where to pause replay, where to stop a standby: both fractions of the measured window. */
export const PAUSE_WINDOW = { from: 0.2, to: 0.7 } as const
export const STOP_WINDOW = { from: 0.2, to: 0.5 } as const

/**
 * The fault of a fault step: replay paused on every one of `count` standbys (`pause`), or the
 * first standby stopped (`stop`), at {@link PAUSE_WINDOW} / {@link STOP_WINDOW} of the window.
 *
 * ### Examples
 * ```ts
 * faultOf('pause', 2, 20) // { kind: 'pause', replicas: [0, 1], fromSecond: 4, toSecond: 14 }
 * ```
 */
export function faultOf(kind: ReplicaFault['kind'], count: number, seconds: number): ReplicaFault {
  const w = kind === 'pause' ? PAUSE_WINDOW : STOP_WINDOW
  const replicas = kind === 'pause' ? Array.from({ length: count }, (_, i) => i) : [0]
  return { kind, replicas, fromSecond: seconds * w.from, toSecond: seconds * w.to }
}

/** What a routed step needs: the client threads' routing counts, and the bench's hands on the standbys. */
export interface ReplicaStepContext {
  routingStats(): Promise<Array<ReplicaStats | null>>
  control: ReplicaControl
  log: (line: string) => void
}

/**
 * Runs one step whose clients read through replica sets (`run`), and around it: the threads'
 * routing counts at the start and end of its measured window, the standbys' lag sampled through
 * it, and its `fault` (replay paused and resumed, or a standby stopped and restarted) at fixed
 * fractions of it.
 *
 * ### Examples
 * ```ts
 * const step = await routedStep(ctx, { clients: 4, seconds: 10, warmupSeconds: 2 }, null, () => runLoadStep(workers, observer, 4, 10, 2))
 * step.replicas.replicaShare
 * ```
 */
export async function routedStep(
  r: ReplicaStepContext,
  phase: { clients: number; seconds: number; warmupSeconds: number },
  fault: ReplicaFault | null,
  run: () => Promise<LoadStep>,
): Promise<RoutedStep> {
  // A checkpoint the standby makes its restartpoint, before the clock: under load it can take
  // longer than the window (one run's did), and the stop must fall inside it.
  if (fault?.kind === 'stop') await r.control.prepareStop(fault.replicas[0]!)
  const from = truthClock() + phase.warmupSeconds * 1000
  const to = from + phase.seconds * 1000
  // Settled at once: a fault or a reading that fails while the step runs is the step's error, never an unhandled rejection.
  const start = settle(at(from, () => r.routingStats()))
  const lag = settle(at(from, () => r.control.sampleLag(to)))
  const acting = settle(fault ? actOn(r, fault, from) : Promise.resolve(undefined))
  let step: LoadStep
  try {
    step = await run()
  } finally {
    await acting
  }
  const stop = unwrap(await acting)
  const end = await r.routingStats()
  const stopped = stop && {
    whileDown: countsOf(summarizeWindow(stop.before, stop.after)),
    afterRestart: countsOf(summarizeWindow(stop.after, end)),
    restartSeconds: stop.restartSeconds,
    restartAttempts: stop.restartAttempts,
    stoppedAtSecond: stop.stoppedAtSecond,
    restartedAtSecond: stop.restartedAtSecond,
  }
  const counts = summarizeWindow(unwrap(await start), end)
  return { ...step, replicas: stepReport(counts, unwrap(await lag), r.control.names, fault, stopped) }
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown }

function settle<T>(p: Promise<T>): Promise<Settled<T>> {
  return p.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  )
}

function unwrap<T>(s: Settled<T>): T {
  if (!s.ok) throw s.error
  return s.value
}

type Reading = Array<ReplicaStats | null>

/** Runs `fault` at its times; for a stop, the routing counts just before the stop and just after the restart. */
async function actOn(
  r: ReplicaStepContext,
  fault: ReplicaFault,
  from: number,
): Promise<
  | { before: Reading; after: Reading; restartSeconds: number; restartAttempts: number; stoppedAtSecond: number; restartedAtSecond: number }
  | undefined
> {
  const names = fault.replicas.map((i) => r.control.names[i]).join(', ')
  if (fault.kind === 'pause') {
    await at(from + fault.fromSecond * 1000, () => Promise.all(fault.replicas.map((i) => r.control.pause(i))))
    r.log(`  replay paused on ${names}`)
    await at(from + fault.toSecond * 1000, () => Promise.all(fault.replicas.map((i) => r.control.resume(i))))
    r.log(`  replay resumed on ${names}`)
    return undefined
  }
  const stopped = fault.replicas[0]!
  const before = await at(from + fault.fromSecond * 1000, () => r.routingStats())
  await r.control.stop(stopped)
  const stoppedAtSecond = (truthClock() - from) / 1000
  r.log(`  ${names} stopped`)
  const restarting = await at(from + fault.toSecond * 1000, () => performance.now())
  const restartAttempts = await r.control.restart(stopped, r.log)
  const restartSeconds = (performance.now() - restarting) / 1000
  const restartedAtSecond = (truthClock() - from) / 1000
  r.log(`  ${names} restarted (${restartSeconds.toFixed(1)} s)`)
  return { before, after: await r.routingStats(), restartSeconds, restartAttempts, stoppedAtSecond, restartedAtSecond }
}

/** Runs `fn` at `time` ({@link truthClock} ms), or now if that has passed. */
function at<T>(time: number, fn: () => Promise<T> | T): Promise<T> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, time - truthClock()))).then(fn)
}

/** The threads' counts summed, as the difference between two readings of each thread. */
export function summarizeWindow(before: ReadonlyArray<ReplicaStats | null>, after: ReadonlyArray<ReplicaStats | null>): ReplicaStats {
  const sum = (list: ReadonlyArray<ReplicaStats | null>) => list.filter((s): s is ReplicaStats => s !== null).reduce(addStats)
  return subtractStats(sum(after), sum(before))
}

function combine(a: ReplicaStats, b: ReplicaStats, sign: 1 | -1): ReplicaStats {
  const n = (x: number, y: number) => x + sign * y
  const keys = Object.keys(a.toPrimary) as Array<keyof ReplicaStats['toPrimary']>
  return {
    primaryReads: n(a.primaryReads, b.primaryReads),
    replicaReads: n(a.replicaReads, b.replicaReads),
    waitedForReplay: n(a.waitedForReplay, b.waitedForReplay),
    toPrimary: Object.fromEntries(keys.map((k) => [k, n(a.toPrimary[k], b.toPrimary[k])])) as ReplicaStats['toPrimary'],
    replicas: a.replicas.map((x, i) => {
      const y = b.replicas[i]!
      return {
        ...x,
        reads: n(x.reads, y.reads),
        waited: n(x.waited, y.waited),
        failures: n(x.failures, y.failures),
        skippedLagging: n(x.skippedLagging, y.skippedLagging),
        replayLagMsMax: Math.max(x.replayLagMsMax, y.replayLagMsMax),
      }
    }),
  }
}

/** Two threads' counts added. */
export const addStats = (a: ReplicaStats, b: ReplicaStats): ReplicaStats => combine(a, b, 1)
const subtractStats = (a: ReplicaStats, b: ReplicaStats): ReplicaStats => combine(a, b, -1)

function countsOf(s: ReplicaStats): RoutedCounts {
  return { primary: s.primaryReads, replicas: s.replicas.map((r) => r.reads), failures: s.replicas.map((r) => r.failures) }
}

function stepReport(
  s: ReplicaStats,
  lag: readonly LagSeen[],
  names: readonly string[],
  fault: ReplicaFault | null,
  stopped: ReplicaStepReport['stopped'],
): ReplicaStepReport {
  const routed = s.primaryReads + s.replicaReads
  return {
    reads: { primary: s.primaryReads, replicas: s.replicas.map((r) => r.reads) },
    replicaShare: routed > 0 ? s.replicaReads / routed : 0,
    waitedForReplay: s.waitedForReplay,
    toPrimary: s.toPrimary,
    nodes: s.replicas.map((r, i) => ({
      node: names[i] ?? r.node,
      reads: r.reads,
      waited: r.waited,
      failures: r.failures,
      skippedLagging: r.skippedLagging,
      replayLagMsMax: lag[i]?.msMax ?? 0,
      behindBytesMax: lag[i]?.bytesMax ?? 0,
      unreachableSamples: lag[i]?.unreachable ?? 0,
    })),
    fault,
    ...(stopped ? { stopped } : {}),
  }
}
