import { loadavg } from 'node:os'
import type { Database, Embedding, ProvisionedDatabase, ReplicaOptions, ReplicaStats } from '../../../../src/index.js'
import type { LoadOperation } from '../ladder-analysis.js'
import { runLoadStep, type ClientRunner, type LoadStep } from '../load-step.js'
import { ReplicaControl } from './replica-control.js'
import { faultOf, routedStep, type ReplicaFault, type RoutedStep } from './replica-steps.js'
import { ROUTING_TARGET_MS, routingCost, type RoutingCost } from './routing-cost.js'
import { summarizeReplicaRun, type ReplicaBenchReport, type ReplicaStepKind, type ReplicaStepRun } from './replica-report.js'
import { SharedPositions } from './shared-positions.js'
import type { WorkerReplicas } from './worker-store.js'

/** `rag-bench load --replicas N`: how the load reads from N standbys of the primary. */
export interface ReplicaBenchConfig {
  count: number
  /** A step with replay paused on every standby (the lagging case). */
  pauseReplay: boolean
  /** A step with one standby stopped and restarted. */
  stopReplica: boolean
  /** Carry every write's WAL position to every thread's reads of its tenant (false: each thread knows only its own). */
  tokens: boolean
  /** The routing options of every thread's ReplicaSet. */
  options: ReplicaOptions
}

/** The load's worker threads as the replica run drives them: steps (with a mix), routing counts, close. */
export type ReplicaRunner = ClientRunner & { routingStats(): Promise<Array<ReplicaStats | null>>; close(): Promise<void> }

/** What {@link ReplicaRun.start} needs: the provisioned primary and its standbys, the load's table, and the searches of the routing probe. */
export interface ReplicaRunSetup {
  provisioned: ProvisionedDatabase
  config: ReplicaBenchConfig
  tenantIds: readonly string[]
  table: string
  dimensions: number
  partitions: number
  /** A pool on the primary (the probe's routed store opens on it). */
  primary: Database
  /** Where the steps read the server's statistics. */
  observer: Database
  draws: ReadonlyArray<{ tenantId: string; embedding: Embedding }>
  /** Starts the load's client threads: on the primary alone (`undefined`), or reading through these standbys. */
  startWorkers(replicas: WorkerReplicas | undefined): Promise<ReplicaRunner>
  log: (line: string) => void
}

/** The ladder and the steps after it, as `rag-bench load` configures them. */
export interface ReplicaRunPlan {
  clients: readonly number[]
  seconds: number
  warmupSeconds: number
}

/** One arm of the comparison: the same clients reading through `replicas` standbys (0: the primary only). */
interface Arm {
  replicas: number
  workers: ReplicaRunner
}

const SEARCH_ONLY: Record<LoadOperation, number> = { search: 1, filtered: 0, hybrid: 0, replace: 0, delete: 0 }
/** The read-only steps are this long at most (searches only, one per arm). */
const READ_ONLY_SECONDS = 10

/**
 * One run of the load with replicas. Before the load: the standbys replay the seeded corpus, the
 * routing probe. Then the ladder with the arms side by side — for each `--clients` step, the same
 * step on the primary alone and through 1 … N standbys, one after the other (the order rotating
 * from step to step), each arm its own client threads; no fault in these steps. Then at the most
 * clients a step of searches only per arm (no write in flight); then through all N standbys the
 * lagging case (replay paused on every standby) and the stopped standby (last: a restarted
 * standby is left alone for `retryDownMs` after its failures). Every answer of
 * every step is checked against the truth, the caller's latest writes included.
 *
 * ### Examples
 * ```ts
 * const run = await ReplicaRun.start({ provisioned, config: c.replicas, tenantIds, table, dimensions, partitions, primary: pool, observer, draws, startWorkers, log })
 * const { steps, report } = await run.run({ clients: [1, 2, 4], seconds: 10, warmupSeconds: 2 })
 * ```
 */
export class ReplicaRun {
  readonly #positions: SharedPositions
  readonly #loadStart = loadavg()

  private constructor(
    readonly setup: ReplicaRunSetup,
    readonly control: ReplicaControl,
    readonly catchUpSeconds: number,
    readonly routing: RoutingCost,
  ) {
    this.#positions = new SharedPositions(setup.tenantIds)
  }

  static async start(setup: ReplicaRunSetup): Promise<ReplicaRun> {
    const standbys = setup.provisioned.standbys ?? []
    if (standbys.length < setup.config.count)
      throw new Error(`rag-bench load --replicas ${setup.config.count}: the database came with ${standbys.length} standby(s)`)
    const control = await ReplicaControl.open(setup.provisioned.db, standbys.slice(0, setup.config.count))
    try {
      setup.log(`replicas: ${control.names.join(', ')}; waiting for them to replay the seeded corpus`)
      const catchUp = await control.catchUp(600_000)
      setup.log(
        `  caught up in ${catchUp.toFixed(1)} s; routing probe: ${setup.draws.length} searches straight on replica 1 and through a ReplicaSet, interleaved`,
      )
      const routing = await routingCost({ ...setup, standbyUrl: standbys[0]!.url, warmup: Math.min(100, setup.draws.length >> 2) })
      setup.log(
        `  straight p50 ${routing.straight.p50Ms.toFixed(3)} ms, routed p50 ${routing.routed.p50Ms.toFixed(3)} ms: routing adds ${routing.addedP50Ms.toFixed(3)} ms (target ≤ ${ROUTING_TARGET_MS}); the WAL check alone p50 ${routing.positionCheck.p50Ms.toFixed(3)} ms`,
      )
      return new ReplicaRun(setup, control, catchUp, routing)
    } catch (err) {
      await control.close()
      throw err
    }
  }

  /** What a worker thread reading through the first `count` standbys gets (`LoadWorkerData.replicas`). */
  workerReplicas(count: number): WorkerReplicas {
    return {
      urls: this.control.standbys.slice(0, count).map((s) => s.url),
      options: this.setup.config.options,
      positions: this.#positions.share(),
      tokens: this.setup.config.tokens,
    }
  }

  /**
   * The arms side by side on the ladder, the read-only steps, the fault steps; stops at the first
   * step with a wrong row. `steps`: the ladder of the arm with every standby (the report's steps).
   */
  async run(plan: ReplicaRunPlan): Promise<{ steps: RoutedStep[]; report: ReplicaBenchReport }> {
    const { count, pauseReplay, stopReplica } = this.setup.config
    const arms: Arm[] = []
    const runs: ReplicaStepRun[] = []
    try {
      for (let k = 0; k <= count; k++)
        arms.push({ replicas: k, workers: await this.setup.startWorkers(k ? this.workerReplicas(k) : undefined) })
      const most = Math.max(...plan.clients)
      const step = async (arm: Arm, kind: ReplicaStepKind, clients: number, seconds: number, fault: ReplicaFault | null) => {
        const s = await this.#step(arm, kind, { clients, seconds, warmupSeconds: plan.warmupSeconds }, fault)
        runs.push({ replicas: arm.replicas, kind, step: s })
        return s.wrongRows === 0
      }
      const all = arms[count]!
      let right = true
      for (const [i, clients] of plan.clients.entries())
        for (let j = 0; j < arms.length && right; j++)
          right = await step(arms[(i + j) % arms.length]!, 'ladder', clients, plan.seconds, null)
      const readOnlySeconds = Math.min(plan.seconds, READ_ONLY_SECONDS)
      for (let j = 0; j < arms.length && right; j++) right = await step(arms[j]!, 'read-only', most, readOnlySeconds, null)
      if (right && pauseReplay) right = await step(all, 'lagging', most, plan.seconds, faultOf('pause', count, plan.seconds))
      if (right && stopReplica) right = await step(all, 'stopped', most, plan.seconds, faultOf('stop', count, plan.seconds))
    } finally {
      await Promise.all(arms.map((a) => a.workers.close()))
    }
    const routingLagMsMax = this.control.names.map((_, i) =>
      Math.max(0, ...runs.flatMap((r) => (r.step.replicas?.nodes[i] ? [r.step.replicas.nodes[i].replayLagMsMax] : []))),
    )
    const report = summarizeReplicaRun({
      config: this.setup.config,
      names: this.control.names,
      loadAverage: { start: this.#loadStart, end: loadavg() },
      catchUpSeconds: this.catchUpSeconds,
      routingCost: this.routing,
      runs,
      routingLagMsMax,
      positions: this.#positions.summary().tenants,
    })
    const steps = runs.filter((r) => r.kind === 'ladder' && r.replicas === count).map((r) => r.step)
    return { steps, report }
  }

  /** One step on `arm`'s threads; through standbys: after they replayed everything before it, with its routing and `fault`. */
  async #step(
    arm: Arm,
    kind: ReplicaStepKind,
    phase: { clients: number; seconds: number; warmupSeconds: number },
    fault: ReplicaFault | null,
  ): Promise<RoutedStep> {
    const { clients, seconds, warmupSeconds } = phase
    const label = arm.replicas === 0 ? 'primary only' : `${arm.replicas} replica(s)`
    this.setup.log(`${kind} ${clients} client(s), ${label}: ${warmupSeconds} s warm-up + ${seconds} s`)
    const runner: ClientRunner = kind === 'read-only' ? { run: (n, from, to) => arm.workers.run(n, from, to, SEARCH_ONLY) } : arm.workers
    const measure = (): Promise<LoadStep> => runLoadStep(runner, this.setup.observer, clients, seconds, warmupSeconds)
    if (arm.replicas === 0) return measure()
    // What the steps before wrote is replayed: each arm starts from standbys in step with the primary.
    await this.control.catchUp(120_000)
    return routedStep({ routingStats: () => arm.workers.routingStats(), control: this.control, log: this.setup.log }, phase, fault, measure)
  }

  close(): Promise<void> {
    return this.control.close()
  }
}
