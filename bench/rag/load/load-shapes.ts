import { findBreak, type StepOutcome } from './ladder-analysis.js'

/** The load shapes `rag-bench load --shape` runs. */
export type LoadShapeName = 'smoke' | 'load' | 'spike' | 'soak' | 'breakpoint'

/** Every shape, as `--shape` lists them. */
export const LOAD_SHAPE_NAMES: readonly LoadShapeName[] = ['smoke', 'load', 'spike', 'soak', 'breakpoint']

/** One measured phase of a shape: a step of `clients` clients. */
export interface LoadPhase {
  /** `smoke`, `step` (a ladder rung), `base` / `burst` / `recovery` (a spike), `ramp` (breakpoint), `soak`. */
  phase: 'smoke' | 'step' | 'base' | 'burst' | 'recovery' | 'ramp' | 'soak'
  clients: number
  seconds: number
  warmupSeconds: number
}

/** What the shapes are made from (the CLI's options). */
export interface ShapeSettings {
  /** The ladder's steps (`load`); the smallest is the base of `spike` and the start of `breakpoint`. */
  clients: readonly number[]
  seconds: number
  warmupSeconds: number
  /** A spike's burst: this many times the base clients … */
  spikeFactor: number
  /** … for this many seconds, with no warm-up. */
  spikeSeconds: number
  /** `breakpoint` doubles the clients until a step breaks or it would pass this. */
  breakpointMaxClients: number
  /** The read p95 and error rate a step breaks at (`breakpoint` stops there). */
  maxP95Ms: number
  soakClients: number
  /** Minutes of the soak phase (`soak`, or after any other shape when set). */
  soakMinutes?: number
}

/** A shape: what it is for, the most clients it can run, and its phases (the next one may depend on the last step). */
export interface LoadShape {
  describe: string
  maxClients(s: ShapeSettings): number
  phases(s: ShapeSettings): Generator<LoadPhase, void, StepOutcome | undefined>
}

/**
 * The five shapes of a load test, from one definition each; the bench runs any of them the same way
 * (every answer verified, rejections apart from errors) and stops a shape at its first wrong row.
 *
 * ### Examples
 * ```ts
 * const phases = [...LOAD_SHAPES.spike.phases(settings)] // base, burst, recovery
 * ```
 */
export const LOAD_SHAPES: Record<LoadShapeName, LoadShape> = {
  smoke: {
    describe: 'one client for one step: the system answers, and answers right, under the lightest load',
    maxClients: () => 1,
    *phases(s) {
      yield { phase: 'smoke', clients: 1, seconds: s.seconds, warmupSeconds: s.warmupSeconds }
    },
  },
  load: {
    describe: 'the ladder: a step per --clients value, to find where it breaks and where throughput stops growing',
    maxClients: (s) => Math.max(...s.clients),
    *phases(s) {
      for (const clients of s.clients) yield { phase: 'step', clients, seconds: s.seconds, warmupSeconds: s.warmupSeconds }
    },
  },
  spike: {
    describe: 'a burst of --spike-factor times the base clients for --spike-seconds, then back, to see whether it recovers',
    maxClients: (s) => spikeBase(s) * s.spikeFactor,
    *phases(s) {
      const base = spikeBase(s)
      yield { phase: 'base', clients: base, seconds: s.seconds, warmupSeconds: s.warmupSeconds }
      yield { phase: 'burst', clients: base * s.spikeFactor, seconds: s.spikeSeconds, warmupSeconds: 0 }
      yield { phase: 'recovery', clients: base, seconds: s.seconds, warmupSeconds: 0 }
    },
  },
  soak: {
    describe: 'one step held for --soak minutes, the client checked for memory growth',
    maxClients: (s) => s.soakClients,
    *phases(s) {
      yield { phase: 'soak', clients: s.soakClients, seconds: (s.soakMinutes ?? 10) * 60, warmupSeconds: s.warmupSeconds }
    },
  },
  breakpoint: {
    describe: 'double the clients from the smallest --clients value until a step breaks (or --breakpoint-max-clients)',
    maxClients: (s) => s.breakpointMaxClients,
    *phases(s) {
      for (let clients = Math.min(...s.clients); clients <= s.breakpointMaxClients; clients *= 2) {
        const outcome = yield { phase: 'ramp', clients, seconds: s.seconds, warmupSeconds: s.warmupSeconds }
        if (outcome && findBreak([outcome], s.maxP95Ms)) return
      }
    },
  },
}

function spikeBase(s: ShapeSettings): number {
  return Math.min(...s.clients)
}

/** How a spike went: each phase's read p95 and failures, and whether the recovery came back. */
export interface SpikeOutcome {
  baseReadP95Ms: number
  burstReadP95Ms: number
  recoveryReadP95Ms: number
  burstErrors: number
  burstRejections: number
  /** The recovery's read p95 is within 1.5× (+1 ms) of the base's and its error rate ≤ 1%. */
  recovered: boolean
}

/**
 * The spike's outcome from its three steps (`base`, `burst`, `recovery`); `null` when one is missing.
 *
 * ### Examples
 * ```ts
 * spikeOutcome(report.steps)?.recovered
 * ```
 */
export function spikeOutcome(
  steps: ReadonlyArray<StepOutcome & { phase: string; rejections: number; operations: Record<string, { errors: number }> }>,
): SpikeOutcome | null {
  const [base, burst, recovery] = ['base', 'burst', 'recovery'].map((p) => steps.find((s) => s.phase === p))
  if (!base || !burst || !recovery) return null
  return {
    baseReadP95Ms: base.readP95Ms,
    burstReadP95Ms: burst.readP95Ms,
    recoveryReadP95Ms: recovery.readP95Ms,
    burstErrors: Object.values(burst.operations).reduce((n, o) => n + o.errors, 0),
    burstRejections: burst.rejections,
    recovered: recovery.readP95Ms <= base.readP95Ms * 1.5 + 1 && recovery.errorRate <= 0.01,
  }
}
