#!/usr/bin/env node
import { Command } from 'commander'
import { dropBudgetData, prepareScenarios } from '../bench/budget/budget-scenarios.js'
import { renderBudget } from '../bench/budget/render-budget.js'
import { BUDGET_TOLERANCE, measureAll, overBudget, platformKey, readBaseline, writeBaseline } from '../bench/budget/run-budget.js'
import { InvalidArgumentError } from '../src/index.js'
import { addCommonOptions, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'

/** The parsed options. */
interface BudgetCli extends CommonOptions {
  baseline: string
  writeBaseline?: string
  blocks: number
  repeats: number
}

/** Builds the `bench:budget` command (commander wiring only; the work is in bench/budget). */
export function budgetCommand(): Command {
  return addCommonOptions(
    new Command('bench:budget')
      .description(
        "The performance budget: pgscale's client CPU per call against raw pg on the same SQL, compared with a recorded baseline.",
      )
      .option('--baseline <file>', 'baseline to compare with', 'bench/baseline.json')
      .option('--write-baseline <file>', "record this platform's ratios into FILE")
      .option('--blocks <n>', 'blocks per measurement', positiveInt('--blocks', 1000), 12)
      .option('--repeats <n>', 'measurements per scenario (the median is kept)', positiveInt('--repeats', 100), 3),
    'local',
  )
}

/**
 * Runs the budget with `argv`; resolves to 0 within budget (or after recording), 1 over it.
 *
 * ### Examples
 * ```ts
 * await budget(['--write-baseline', 'bench/baseline.json'])
 * ```
 */
export async function budget(argv: readonly string[]): Promise<number> {
  const program = budgetCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<BudgetCli>()
    const log = (line: string) => process.stderr.write(`[budget] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    // Interrupted (SIGINT, SIGTERM): its schema goes, unless --keep.
    onInterrupt(async () => {
      if (!o.keep && provisioned.url) await dropBudgetData(provisioned.db).catch(() => {})
      await provisioned.stop()
    })
    try {
      if (!provisioned.url)
        throw new InvalidArgumentError(
          'the budget compares with a raw pg client: it needs a server (--db local, --db container or --pg URL)',
        )
      const { scenarios, close } = await prepareScenarios(provisioned.db, provisioned.url, {}, { keep: Boolean(o.keep) })
      const results = await measureAll(scenarios, o.repeats, o.blocks, log).finally(close)
      const ratios = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.ratio]))
      const report = { platform: platformKey(), server: provisioned.info, repeats: o.repeats, blocks: o.blocks, results }
      if (o.json !== '-') console.log(renderBudget(report))
      writeJson(o.json, report)
      if (o.writeBaseline) {
        writeBaseline(o.writeBaseline, ratios)
        log(`recorded ${platformKey()} in ${o.writeBaseline}`)
        return 0
      }
      const entry = readBaseline(o.baseline)[platformKey()]
      if (!entry) {
        log(`no baseline for ${platformKey()} in ${o.baseline}: record one with npm run bench:budget -- --write-baseline ${o.baseline}`)
        return 0
      }
      const over = overBudget(ratios, entry.ratios)
      log(over.length ? `OVER BUDGET:\n  ${over.join('\n  ')}` : `within budget (+${BUDGET_TOLERANCE * 100}% over ${o.baseline})`)
      return over.length ? 1 : 0
    } finally {
      await provisioned.stop()
    }
  })
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/budget')) {
  process.exitCode = await budget(process.argv.slice(2))
}
