/** One operation a load client runs. */
export type LoadOperation = 'search' | 'filtered' | 'hybrid' | 'replace' | 'delete'

/** Every operation, in the order reports list them. */
export const LOAD_OPERATIONS: readonly LoadOperation[] = ['search', 'filtered', 'hybrid', 'replace', 'delete']

/** What one step measured for one operation. */
export interface OperationStats {
  count: number
  perSecond: number
  p50Ms: number
  p95Ms: number
  p99Ms: number
  errors: number
  rejections: number
}

/** The part of a step the ladder's findings read. */
export interface StepOutcome {
  clients: number
  /** Completed operations per second, all kinds. */
  throughput: number
  /** p95 of the reads (search + hybrid) in ms: the latency users wait for while documents change. */
  readP95Ms: number
  /** Errors / attempted operations (rejections are not errors). */
  errorRate: number
}

/**
 * The first step that breaks: its read p95 passes `maxP95Ms`, or more than `maxErrorRate` of its
 * operations failed. `undefined` when every step held.
 *
 * ### Examples
 * ```ts
 * findBreak([{ clients: 1, throughput: 100, readP95Ms: 3, errorRate: 0 }, { clients: 2, throughput: 150, readP95Ms: 70, errorRate: 0 }], 50) // clients 2
 * ```
 */
export function findBreak(
  steps: readonly StepOutcome[],
  maxP95Ms: number,
  maxErrorRate = 0.01,
): (StepOutcome & { why: string }) | undefined {
  for (const step of steps) {
    if (step.readP95Ms > maxP95Ms) return { ...step, why: `read p95 ${step.readP95Ms.toFixed(1)} ms > ${maxP95Ms} ms` }
    if (step.errorRate > maxErrorRate) return { ...step, why: `error rate ${(step.errorRate * 100).toFixed(2)}% > ${maxErrorRate * 100}%` }
  }
  return undefined
}

/** The ladder's verdict as the JSON report states it: always present, so a gate never reads a missing key. */
export interface LadderVerdict {
  /** `held`: no step broke; `broke`: see `breaks`; `not-run`: no step ran (the smoke check failed). */
  verdict: 'held' | 'broke' | 'not-run'
  /** The first step that broke, or `null` when none did. */
  breaks: { clients: number; why: string } | null
  /** The most clients of a step that held before any break; `null` when the first step broke or none ran. */
  heldUpTo: number | null
}

/**
 * {@link findBreak} stated for a report: the verdict, the break (or `null`) and the largest step
 * that held.
 *
 * ### Examples
 * ```ts
 * ladderVerdict([{ clients: 1, throughput: 100, readP95Ms: 3, errorRate: 0 }], 50) // { verdict: 'held', breaks: null, heldUpTo: 1 }
 * ```
 */
export function ladderVerdict(steps: readonly StepOutcome[], maxP95Ms: number, maxErrorRate = 0.01): LadderVerdict {
  if (steps.length === 0) return { verdict: 'not-run', breaks: null, heldUpTo: null }
  const broke = findBreak(steps, maxP95Ms, maxErrorRate)
  const held = broke
    ? steps.slice(
        0,
        steps.findIndex((s) => s.clients === broke.clients),
      )
    : steps
  return {
    verdict: broke ? 'broke' : 'held',
    breaks: broke ? { clients: broke.clients, why: broke.why } : null,
    heldUpTo: held.length > 0 ? Math.max(...held.map((s) => s.clients)) : null,
  }
}

/**
 * Where more clients stop buying throughput: the first step after which the next bought less than
 * `minGain` (default 10%) more. That step's clients and throughput are what to size a pool or
 * replicas from. `undefined` when throughput still grew at the last step.
 *
 * ### Examples
 * ```ts
 * findSaturation([{ clients: 1, throughput: 100 }, { clients: 2, throughput: 180 }, { clients: 4, throughput: 190 }]) // clients 2
 * ```
 */
export function findSaturation<S extends Pick<StepOutcome, 'clients' | 'throughput'>>(steps: readonly S[], minGain = 0.1): S | undefined {
  for (let i = 0; i + 1 < steps.length; i++) {
    if (steps[i + 1]!.throughput < steps[i]!.throughput * (1 + minGain) - 1e-9) return steps[i]
  }
  return undefined
}

/**
 * A failed operation is a **rejection** when the system turned the work away instead of doing it
 * wrong: no pool connection within the timeout, `too many connections` (53300), a lock timeout
 * (55P03), the server shutting down or refusing connections (57P03, 53000). Everything else is an
 * **error**.
 *
 * ### Examples
 * ```ts
 * classifyFailure(Object.assign(new Error('x'), { sqlState: '55P03' })) // 'rejection'
 * ```
 */
export function classifyFailure(err: unknown): 'rejection' | 'error' {
  const state = sqlStateOf(err)
  if (state && REJECTION_STATES.has(state)) return 'rejection'
  const message = err instanceof Error ? err.message : String(err)
  return /timeout exceeded when trying to connect|too many clients|too many connections|remaining connection slots/i.test(message)
    ? 'rejection'
    : 'error'
}

const REJECTION_STATES = new Set(['53300', '55P03', '57P03', '53000'])

function sqlStateOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { sqlState?: unknown; code?: unknown }
    if (typeof x.sqlState === 'string') return x.sqlState
    if (typeof x.code === 'string' && /^[0-9A-Z]{5}$/.test(x.code)) return x.code
  }
  return undefined
}

/**
 * Parses `search=70,filtered=10,hybrid=10,replace=8,delete=2` into weights (`filtered`: a search under
 * an ACL filter); unknown operations, negative or all-zero weights are refused.
 *
 * ### Examples
 * ```ts
 * parseMix('search=90,replace=10') // { search: 90, filtered: 0, hybrid: 0, replace: 10, delete: 0 }
 * ```
 */
export function parseMix(text: string): Record<LoadOperation, number> {
  const mix: Record<LoadOperation, number> = { search: 0, filtered: 0, hybrid: 0, replace: 0, delete: 0 }
  for (const part of text.split(',')) {
    const match = /^\s*(search|filtered|hybrid|replace|delete)\s*=\s*(\d+(?:\.\d+)?)\s*$/.exec(part)
    if (!match) throw new RangeError(`--mix: "${part}" is not OP=WEIGHT with OP one of ${LOAD_OPERATIONS.join(', ')}`)
    mix[match[1] as LoadOperation] = Number(match[2])
  }
  if (Object.values(mix).every((w) => w === 0)) throw new RangeError('--mix: every weight is 0')
  return mix
}

/**
 * Draws an operation from the mix's weights with `random()` in [0, 1).
 *
 * ### Examples
 * ```ts
 * pickOperation({ search: 1, filtered: 0, hybrid: 0, replace: 0, delete: 0 }, Math.random) // 'search'
 * ```
 */
export function pickOperation(mix: Record<LoadOperation, number>, random: () => number): LoadOperation {
  const total = LOAD_OPERATIONS.reduce((s, op) => s + mix[op], 0)
  let r = random() * total
  for (const op of LOAD_OPERATIONS) {
    if (r < mix[op]) return op
    r -= mix[op]
  }
  return 'search'
}
