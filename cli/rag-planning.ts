import { writeFileSync } from 'node:fs'
import { Command } from 'commander'
import { planningChart } from '../bench/rag/planning/planning-chart.js'
import { chartLibrary, renderChart } from '../bench/report/charts.js'
import { measurePlanningCost } from '../bench/rag/planning/planning-cost.js'
import { renderPlanningReport } from '../bench/rag/planning/render-planning-report.js'
import { machineInfo } from '../bench/report/machine.js'
import { addConnectionOptions, ascendingIntList, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'

interface PlanningCliOptions extends CommonOptions {
  indexes: number[]
  rowsPerTenant: number
  dim: number
  partitions: number
  samples: number
  plot?: string
}

/** Builds the `rag-bench planning` command (commander wiring only; the work is in bench/rag/planning). */
export function ragPlanningCommand(): Command {
  return addConnectionOptions(
    new Command('rag-bench planning')
      .description(
        'The planning cost of per-tenant partial HNSW indexes: planning time (warm and fresh connection) and search p50 for a tenant with and without its own index, at each index count, in one table and in a table hash-partitioned by tenant.',
      )
      .option('--indexes <list>', 'partial index counts to measure at, ascending', ascendingIntList('--indexes', 100_000), [10, 100, 1000])
      .option('--rows-per-tenant <n>', 'chunks per tenant', positiveInt('--rows-per-tenant', 100_000), 20)
      .option('--dim <n>', 'dimensions', positiveInt('--dim', 2000), 8)
      .option(
        '--partitions <n>',
        'hash partitions of the partitioned layout (0: one table only)',
        (v) => (v === '0' ? 0 : positiveInt('--partitions', 4096)(v)),
        64,
      )
      .option('--samples <n>', 'statements per median', positiveInt('--samples', 10_000), 50)
      .option('--plot <file>', 'write the planning-time curve as SVG (Vega-Lite: npm install vega vega-lite)'),
    'local',
  )
}

/**
 * Runs `rag-bench planning` with `argv` (after `planning`); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await ragPlanning(['--indexes', '10,100', '--json', '-'])
 * ```
 */
export async function ragPlanning(argv: readonly string[]): Promise<number> {
  const program = ragPlanningCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<PlanningCliOptions>()
    if (o.plot) await chartLibrary()
    const log = (line: string) => process.stderr.write(`[rag-bench planning] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    onInterrupt(() => provisioned.stop())
    try {
      if (!provisioned.url)
        throw new RangeError('rag-bench planning opens fresh connections: it needs a server (--db local, --db container or --pg URL)')
      const points = await measurePlanningCost(
        provisioned.db,
        provisioned.url,
        { counts: o.indexes, rowsPerTenant: o.rowsPerTenant, dim: o.dim, partitions: o.partitions, samples: o.samples },
        log,
      )
      const report = {
        machine: machineInfo(),
        server: provisioned.info,
        method: `tenants of ${o.rowsPerTenant} chunks × ${o.dim} dims, one partial HNSW index (WHERE tenant_id = '…') per tenant added up to each count; EXPLAIN (SUMMARY) planning time of a k=10 search with the tenant inlined, median of ${o.samples} on a warm connection and of 10 first statements on fresh connections; search: the same statement, median of ${o.samples}; "own index": a tenant with its own index, "no index": one without; partitioned: ${o.partitions} hash partitions by tenant_id, each index on its tenant's partition`,
        points,
      }
      if (o.json !== '-') console.log(renderPlanningReport(report))
      writeJson(o.json, report)
      if (o.plot) writeFileSync(o.plot, await renderChart(planningChart(report)))
    } finally {
      await provisioned.stop()
    }
  })
}
