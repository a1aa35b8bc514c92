import { readFileSync } from 'node:fs'
import { Command, InvalidArgumentError as CommanderInvalidArgument } from 'commander'
import { compareReports, renderComparison, ReportMismatchError } from '../bench/report/compare-reports.js'
import { runCli, writeJson } from './common.js'

interface CompareCliOptions {
  maxRatio: number
  minMs: number
  json?: string
}

function positiveNumber(name: string, min: number) {
  return (value: string): number => {
    const n = Number(value)
    if (!Number.isFinite(n) || n < min) throw new CommanderInvalidArgument(`${name} must be a number ≥ ${min}`)
    return n
  }
}

/** Builds `<bench> compare` (commander wiring only; the work is in bench/report/compare-reports.ts). */
export function compareCommand(bench: string): Command {
  return new Command(`${bench} compare`)
    .description(
      `Compares two ${bench} JSON reports (the base commit's and HEAD's, run on the same runner): a table of every latency and rate with its ratio; exits 1 when a p50/p95/p99 grew past --max-ratio or a rate fell below 1/--max-ratio, 2 when the reports are of different benches or sizes. Works on rag-bench, rag-bench load, rag-bench filters, rollup-bench and budget reports.`,
    )
    .argument('<base>', 'the base report (JSON)')
    .argument('<head>', 'the report to check (JSON)')
    .option('--max-ratio <x>', 'a latency may grow, or a rate fall, by at most this factor', positiveNumber('--max-ratio', 1), 2)
    .option('--min-ms <ms>', 'latencies under this on both sides are noise, not compared', positiveNumber('--min-ms', 0), 1)
    .option('--json <file>', 'also write the comparison as JSON ("-" for stdout)')
}

function readReport(path: string): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ReportMismatchError(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`)
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new ReportMismatchError(`${path} is not JSON (a report written with --json FILE)`)
  }
}

/**
 * Runs `<bench> compare BASE HEAD`; resolves to the exit code (0 no regression, 1 regressed, 2 not comparable).
 *
 * ### Examples
 * ```ts
 * await compare('rag-bench', ['base.json', 'head.json', '--max-ratio', '2'])
 * ```
 */
export async function compare(bench: string, argv: readonly string[]): Promise<number> {
  const program = compareCommand(bench)
  return runCli(program, argv, async () => {
    const o = program.opts<CompareCliOptions>()
    const [basePath, headPath] = program.args as [string, string]
    const comparison = compareReports(readReport(basePath), readReport(headPath), { maxRatio: o.maxRatio, minMs: o.minMs })
    if (o.json !== '-') console.log(renderComparison(comparison))
    writeJson(o.json, comparison)
    return comparison.regressions.length > 0 ? 1 : 0
  })
}
