import { median, percentile } from '../report/stats.js'
import { renderTable } from '../report/table.js'

/**
 * The regression gate's arithmetic, apart from any timing so it can be tested on given numbers:
 * one block is a base run and a head run of the same scenario back to back (which goes first
 * alternates), its ratio head ÷ base (CPU µs per call); a scenario's figure is the median of its
 * block ratios, and it fails when that median exceeds the bound.
 */

/** One interleaved block: CPU µs per call of the base and of the head, measured back to back. */
export interface GateBlock {
  base: number
  head: number
}

/** A scenario's verdict over its blocks. */
export interface GateSummary {
  scenario: string
  blocks: number
  /** Median CPU µs per call over the blocks. */
  baseMicros: number
  headMicros: number
  /** Median of the per-block ratios head ÷ base. */
  ratio: number
  /** The 25th and 75th percentiles of the block ratios: how much one block moves. */
  ratioP25: number
  ratioP75: number
  /** The bound the median ratio was held to. */
  bound: number
  pass: boolean
}

/** The default bound: a median ratio head ÷ base above it fails (docs/performance.md, "The regression gate"). */
export const DEFAULT_GATE_BOUND = 1.1

/**
 * The ratio of each block, head ÷ base; a block with a non-positive or non-finite figure is dropped
 * (a CPU clock that did not move says nothing).
 *
 * ### Examples
 * ```ts
 * blockRatios([{ base: 100, head: 110 }, { base: 0, head: 5 }]) // [1.1]
 * ```
 */
export function blockRatios(blocks: readonly GateBlock[]): number[] {
  return blocks.filter((b) => Number.isFinite(b.base) && Number.isFinite(b.head) && b.base > 0 && b.head > 0).map((b) => b.head / b.base)
}

/**
 * A scenario's summary: medians of both sides, the median block ratio, its quartiles, and whether
 * the median ratio stays within `bound`. No usable block: not a pass (`ratio` NaN).
 *
 * ### Examples
 * ```ts
 * summarizeScenario('search', [{ base: 100, head: 104 }, { base: 100, head: 130 }, { base: 100, head: 101 }], 1.1).pass // true (median 1.04)
 * ```
 */
export function summarizeScenario(scenario: string, blocks: readonly GateBlock[], bound = DEFAULT_GATE_BOUND): GateSummary {
  if (!(bound > 1)) throw new RangeError(`the gate's bound must be a ratio above 1, got ${bound}`)
  const ratios = blockRatios(blocks)
  const ratio = median(ratios)
  return {
    scenario,
    blocks: ratios.length,
    baseMicros: median(blocks.map((b) => b.base)),
    headMicros: median(blocks.map((b) => b.head)),
    ratio,
    ratioP25: percentile(ratios, 25),
    ratioP75: percentile(ratios, 75),
    bound,
    pass: ratios.length > 0 && ratio <= bound,
  }
}

/** The gate's exit status: 0 when every scenario passed, 1 when one failed (or none was measured). */
export function gateExitCode(summaries: readonly GateSummary[]): 0 | 1 {
  return summaries.length > 0 && summaries.every((s) => s.pass) ? 0 : 1
}

/** The scenarios that failed, each as one line naming its ratio and bound. */
export function failures(summaries: readonly GateSummary[]): string[] {
  return summaries
    .filter((s) => !s.pass)
    .map((s) =>
      Number.isNaN(s.ratio)
        ? `${s.scenario}: no usable block`
        : `${s.scenario}: head costs ${s.ratio.toFixed(3)}× the base's CPU per call (median of ${s.blocks} blocks), over the bound ${s.bound.toFixed(2)}`,
    )
}

const µs = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '—')
const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(3)}×` : '—')

/**
 * The table printed to the CI log: per scenario the base's and the head's CPU µs per call, the
 * median ratio, its interquartile range, the blocks and the verdict.
 *
 * ### Examples
 * ```ts
 * console.log(renderGate(summaries))
 * ```
 */
export function renderGate(summaries: readonly GateSummary[]): string {
  return renderTable(
    ['scenario', 'base µs/call', 'head µs/call', 'head/base (median)', 'p25-p75', 'blocks', 'bound', 'verdict'],
    summaries.map((s) => [
      s.scenario,
      µs(s.baseMicros),
      µs(s.headMicros),
      x(s.ratio),
      `${s.ratioP25.toFixed(3)}-${s.ratioP75.toFixed(3)}`,
      String(s.blocks),
      s.bound.toFixed(2),
      s.pass ? 'ok' : 'FAIL',
    ]),
  )
}

/**
 * The order of one round's blocks: per scenario of `names`, which side runs first; `all` is every
 * scenario of the gate (a second pass measures some of them again, each keeping its place).
 * `done` is how many blocks that scenario has so far (a second pass continues from the first's
 * count): the first side alternates from one round to the next and is shifted between scenarios,
 * so each side runs first in half of a scenario's blocks — the side measured right after another
 * scenario's blocks pays for the caches and JIT state that scenario left (a gate that kept one
 * order per scenario measured identical trees 0.74× and 1.39× apart).
 *
 * ### Examples
 * ```ts
 * roundOrder(['search', 'route'], () => 0) // [['search', ['base', 'head']], ['route', ['head', 'base']]]
 * roundOrder(['route'], () => 3, ['search', 'route']) // [['route', ['base', 'head']]]
 * ```
 */
export function roundOrder(
  names: readonly string[],
  done: (scenario: string) => number,
  all: readonly string[] = names,
): Array<[string, readonly ['base', 'head'] | readonly ['head', 'base']]> {
  return names.map((name) => [
    name,
    (done(name) + Math.max(0, all.indexOf(name))) % 2 === 0 ? (['base', 'head'] as const) : (['head', 'base'] as const),
  ])
}

/**
 * Calls per block so a block takes about `blockMs` of wall time, from a warm-up's wall time per
 * call, within [min, max].
 *
 * ### Examples
 * ```ts
 * callsPerBlock(1.5, 60) // 40
 * ```
 */
export function callsPerBlock(wallMsPerCall: number, blockMs: number, min = 5, max = 5000): number {
  if (!(wallMsPerCall > 0)) return max
  return Math.min(max, Math.max(min, Math.round(blockMs / wallMsPerCall)))
}
