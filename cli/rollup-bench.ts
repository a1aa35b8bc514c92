#!/usr/bin/env node
import { writeFileSync } from 'node:fs'
import { compare } from './compare.js'
import { Command } from 'commander'
import { chartLibrary, renderChart } from '../bench/report/charts.js'
import { speedupChart } from '../bench/rollup/speedup-chart.js'
import { renderRollupReport } from '../bench/rollup/render-rollup-report.js'
import { runRollupBench, type RollupBenchOptions } from '../bench/rollup/run-rollup-bench.js'
import { assertTimeZone } from '../src/bench-kit.js'
import { addCommonOptions, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'
import { biggerRunCommand, renderWhatNext } from '../bench/report/what-next.js'

/** The parsed options: the bench's parameters plus the common ones. */
type RollupBenchCli = CommonOptions &
  Omit<RollupBenchOptions, 'keep' | 'showProgress' | 'track'> & {
    plot?: string
    track?: boolean
    across?: boolean
    trackRows: number
    trackRounds: number
    trackSeconds: number
    trackWritesPerSecond: number
  }

/** Builds the `rollup-bench` command (commander wiring only; the work is in bench/rollup). */
export function rollupBenchCommand(): Command {
  return addCommonOptions(
    new Command('rollup-bench')
      .description('Seed a skewed expenses table and measure a MonthlyRollup against the source: dashboard reads, refresh, rebuild, sizes.')
      .option('--rows <n>', 'expense rows in all', positiveInt('--rows', 100_000_000), 3_000_000)
      .option('--months <n>', 'months of history', positiveInt('--months', 1200), 36)
      .option('--tenants <n>', 'tenants (tenant 1 is the big one)', positiveInt('--tenants', 10_000_000), 1000)
      .option('--big-tenant-rows <n>', "the big tenant's rows", positiveInt('--big-tenant-rows', 100_000_000), 990_000)
      .option('--zone <iana>', 'time zone of the local months', 'America/Mexico_City')
      .option('--reps <n>', 'repetitions per measurement', positiveInt('--reps', 10_000), 30)
      .option('--seed <s>', 'data seed: same seed, same rows', '42')
      .option(
        '--track',
        "also measure the rollup's tracking: write overhead (beside pg_ivm when the server has it), drain rate, staleness, fresh reads, approxCountDistinct error",
      )
      .option(
        '--across',
        'also measure admin views across tenants: the dashboard of the whole fleet and the top 20 tenants, source vs rollup (readAcross), and fleet-wide distinct counts (hll)',
      )
      .option('--track-rows <n>', 'rows of each bulk write of --track', positiveInt('--track-rows', 10_000_000), 40_000)
      .option('--track-rounds <n>', 'rounds of the --track write overhead', positiveInt('--track-rounds', 1000), 5)
      .option('--track-seconds <n>', 'seconds of the --track staleness load', positiveInt('--track-seconds', 3600), 20)
      .option(
        '--track-writes-per-second <n>',
        'write transactions per second of the staleness load',
        positiveInt('--track-writes-per-second', 100_000),
        100,
      )
      .option('--plot <file>', 'write the dashboard queries, source vs rollup, as SVG (Vega-Lite: npm install vega vega-lite)'),
  )
}

/**
 * Runs `rollup-bench` with `argv` (without `node` and the script); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await rollupBench(['--rows', '100000', '--json', 'out.json'])
 * ```
 */
export async function rollupBench(argv: readonly string[]): Promise<number> {
  if (argv[0] === 'compare') return compare('rollup-bench', argv.slice(1))
  const program = rollupBenchCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<RollupBenchCli>()
    assertTimeZone(o.zone)
    if (o.bigTenantRows > o.rows) throw new Error(`--big-tenant-rows (${o.bigTenantRows}) is more than --rows (${o.rows})`)
    if (o.plot) await chartLibrary()
    const quiet = o.json === '-'
    const log = (line: string) => process.stderr.write(`[rollup-bench] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    onInterrupt(() => provisioned.stop())
    try {
      if (provisioned.info.provider === 'embedded' && o.rows > 500_000)
        log('note: PGlite keeps the data in memory and runs about 3-4× slower than native PostgreSQL; consider --rows 300000 or --db local')
      const report = await runRollupBench(
        provisioned,
        {
          ...o,
          keep: Boolean(o.keep),
          showProgress: Boolean(process.stderr.isTTY) && !quiet,
          across: o.across === true,
          track: o.track
            ? { rows: o.trackRows, rounds: o.trackRounds, seconds: o.trackSeconds, writesPerSecond: o.trackWritesPerSecond }
            : undefined,
        },
        log,
      )
      if (!quiet) console.log(renderRollupReport(report))
      writeJson(o.json, report)
      const next = renderWhatNext({
        biggerRun: biggerRunCommand('rollup-bench', '--rows', report.seeding.rows, report.server.provider, [
          ...['--tenants', String(report.parameters.tenants)],
        ]),
        reportPath: o.json,
        glossary: 'docs/rollup.md#measured-rollup-bench',
      })
      if (quiet) process.stderr.write(`${next}\n`)
      else console.log(next)
      if (o.plot) writeFileSync(o.plot, await renderChart(speedupChart(report)))
    } finally {
      await provisioned.stop()
    }
  })
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/rollup-bench')) {
  process.exitCode = await rollupBench(process.argv.slice(2))
}
