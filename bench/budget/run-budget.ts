import { readFileSync, existsSync, writeFileSync } from 'node:fs'
import { median } from '../report/stats.js'
import { machineInfo } from '../report/machine.js'
import type { BudgetScenario } from './budget-scenarios.js'

/** CPU cost per call of one scenario, pgscale vs raw, and their ratio. */
export interface BudgetMeasurement {
  pgscaleMicros: number
  rawMicros: number
  /** Median of per-block ratios (pgscale CPU / raw CPU). */
  ratio: number
  blocks: number
}

/** One platform's recorded ratios. */
export interface BaselineEntry {
  ratios: Record<string, number>
  recordedAt: string
  machine: string
}

/** `bench/baseline.json`: one entry per platform. */
export type Baseline = Record<string, BaselineEntry>

/** How much a ratio may grow over the baseline before the budget fails. */
export const BUDGET_TOLERANCE = 0.2

/** The platform key of this machine: `linux-x64`, `darwin-arm64`, ... */
export function platformKey(): string {
  return `${process.platform}-${process.arch}`
}

function cpuMicros(): number {
  const u = process.cpuUsage()
  return u.user + u.system
}

/**
 * Measures a scenario's client-side CPU per call: pgscale and raw run in alternating short blocks
 * (which goes first alternates too), so drift and noise hit both; the ratio is the median of the
 * per-block ratios. CPU time, not wall time: what the library adds, not what the server does.
 */
export async function measureScenario(s: BudgetScenario, blocks = 12): Promise<BudgetMeasurement> {
  const ratios: number[] = []
  const own: number[] = []
  const raw: number[] = []
  const block = async (fn: (i: number) => Promise<void>) => {
    const start = cpuMicros()
    for (let i = 0; i < s.callsPerBlock; i++) await fn(i)
    return (cpuMicros() - start) / s.callsPerBlock
  }
  await block(s.pgscale) // warm-up
  await block(s.raw)
  for (let b = 0; b < blocks; b++) {
    let p: number
    let r: number
    if (b % 2 === 0) {
      p = await block(s.pgscale)
      r = await block(s.raw)
    } else {
      r = await block(s.raw)
      p = await block(s.pgscale)
    }
    own.push(p)
    raw.push(r)
    ratios.push(p / r)
  }
  return { pgscaleMicros: median(own), rawMicros: median(raw), ratio: median(ratios), blocks }
}

/**
 * Measures every scenario `repeats` times, one round of all scenarios after another, and keeps
 * each scenario's median ratio: on a noisy machine one measurement of a ratio can be 20% off.
 */
export async function measureAll(
  scenarios: readonly BudgetScenario[],
  repeats = 3,
  blocks = 12,
  log: (line: string) => void = () => {},
): Promise<Record<string, BudgetMeasurement>> {
  const runs: Record<string, BudgetMeasurement[]> = {}
  for (let r = 0; r < repeats; r++) {
    for (const s of scenarios) {
      log(`${s.name} (${r + 1}/${repeats})`)
      ;(runs[s.name] ??= []).push(await measureScenario(s, blocks))
    }
  }
  return Object.fromEntries(
    Object.entries(runs).map(([name, list]) => {
      const sorted = [...list].sort((a, b) => a.ratio - b.ratio)
      return [name, sorted[Math.floor(sorted.length / 2)]!]
    }),
  )
}

/** Reads a baseline file (missing → empty). */
export function readBaseline(file: string): Baseline {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Baseline) : {}
}

/** Writes this platform's ratios into a baseline file, keeping the other platforms. */
export function writeBaseline(file: string, ratios: Record<string, number>): void {
  const baseline = readBaseline(file)
  const m = machineInfo()
  baseline[platformKey()] = { ratios, recordedAt: new Date().toISOString(), machine: `${m.cpu}, ${m.cores} cores, Node ${m.node}` }
  writeFileSync(file, JSON.stringify(baseline, null, 2) + '\n')
}

/**
 * The budgeted ratios that grew more than {@link BUDGET_TOLERANCE} over the baseline.
 *
 * ### Examples
 * ```ts
 * overBudget({ search: 1.5 }, { search: 1.1 }) // ['search: 1.50 is 36% over the baseline 1.10 (budget +20%)']
 * ```
 */
export function overBudget(ratios: Record<string, number>, baseline: Record<string, number>): string[] {
  return Object.entries(ratios)
    .filter(([name, ratio]) => baseline[name] !== undefined && ratio > baseline[name]! * (1 + BUDGET_TOLERANCE))
    .map(
      ([name, ratio]) =>
        `${name}: ${ratio.toFixed(2)} is ${Math.round((ratio / baseline[name]! - 1) * 100)}% over the baseline ${baseline[name]!.toFixed(2)} (budget +${BUDGET_TOLERANCE * 100}%)`,
    )
}
