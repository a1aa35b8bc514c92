/**
 * The performance budget as a command: measures pgscale's CPU per call against raw `pg` on the
 * same SQL, prints µs and ratios, and compares them with bench/baseline.json.
 *
 *   npm run bench:budget                                        # measure and compare
 *   npm run bench:budget -- --write-baseline bench/baseline.json  # re-record this platform
 *   npm run bench:budget -- --pg URL --json out.json
 */
import { writeFileSync } from 'node:fs'
import { Command } from 'commander'
import { provision } from '../../src/index.js'
import { renderTable } from '../report/table.js'
import { fmt } from '../report/stats.js'
import { prepareScenarios } from './budget-scenarios.js'
import { measureAll, overBudget, platformKey, readBaseline, writeBaseline } from './run-budget.js'

const o = new Command('bench:budget')
  .option('--pg <url>', 'PostgreSQL URL (default: a throwaway local cluster)')
  .option('--baseline <file>', 'baseline to compare with', 'bench/baseline.json')
  .option('--write-baseline <file>', "record this platform's ratios into FILE")
  .option('--blocks <n>', 'blocks per measurement', '12')
  .option('--repeats <n>', 'measurements per scenario (the median is kept)', '3')
  .option('--json <file>', 'write the measurements as JSON')
  .parse()
  .opts<{ pg?: string; baseline: string; writeBaseline?: string; blocks: string; repeats: string; json?: string }>()

const p = await provision({ provider: o.pg ? 'url' : 'local', url: o.pg })
try {
  if (!p.url) throw new Error('the budget needs a server URL for the raw pg client')
  const { scenarios, close } = await prepareScenarios(p.db, p.url)
  const results = await measureAll(scenarios, Number(o.repeats), Number(o.blocks), (line) => process.stderr.write(`[budget] ${line}\n`))
  await close()
  const ratios = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.ratio]))
  console.log(`performance budget — ${platformKey()}, ${p.info.provider} PostgreSQL ${p.info.serverVersion}; client CPU per call; ${o.repeats} measurements of ${o.blocks} interleaved blocks each, the median ratio kept`)
  console.log(renderTable(['path', 'pgscale µs', 'raw pg µs', 'ratio'], Object.entries(results).map(([k, v]) => [k, fmt(v.pgscaleMicros), fmt(v.rawMicros), `${fmt(v.ratio)}×`])))
  if (o.json) writeFileSync(o.json, JSON.stringify({ platform: platformKey(), server: p.info, results }, null, 2) + '\n')
  if (o.writeBaseline) {
    writeBaseline(o.writeBaseline, ratios)
    console.log(`recorded ${platformKey()} in ${o.writeBaseline}`)
  } else {
    const entry = readBaseline(o.baseline)[platformKey()]
    if (!entry) console.log(`no baseline for ${platformKey()} in ${o.baseline}: record one with npm run bench:budget -- --write-baseline ${o.baseline}`)
    else {
      const over = overBudget(ratios, entry.ratios)
      console.log(over.length ? `OVER BUDGET:\n  ${over.join('\n  ')}` : `within budget (+${20}% over ${o.baseline})`)
      if (over.length) process.exitCode = 1
    }
  }
} finally {
  await p.stop()
}
