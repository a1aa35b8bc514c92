import { Command } from 'commander'
import { measureRlsCost } from '../bench/rag/rls/rls-cost.js'
import { machineInfo } from '../bench/report/machine.js'
import { renderTable } from '../bench/report/table.js'
import { addConnectionOptions, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'

interface RlsCliOptions extends CommonOptions {
  bigTenantChunks: number
  smallTenants: number
  smallTenantChunks: number
  dim: number
  searches: number
}

/** Builds the `rag-bench rls` command (commander wiring only; the work is in bench/rag/rls). */
export function ragRlsCommand(): Command {
  return addConnectionOptions(
    new Command('rag-bench rls')
      .description(
        "What isolation: 'rls' costs a search: the same rows with and without row-level security, searched by a runtime role, side by side.",
      )
      .option('--big-tenant-chunks <n>', 'chunks of the tenant with its own index', positiveInt('--big-tenant-chunks', 10_000_000), 20_000)
      .option('--small-tenants <n>', 'small tenants', positiveInt('--small-tenants', 100_000), 50)
      .option('--small-tenant-chunks <n>', 'chunks per small tenant', positiveInt('--small-tenant-chunks', 100_000), 200)
      .option('--dim <n>', 'dimensions', positiveInt('--dim', 2000), 384)
      .option('--searches <n>', 'searches per kind and mode', positiveInt('--searches', 100_000), 400),
    'local',
  )
}

/**
 * Runs `rag-bench rls` with `argv` (after `rls`); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await ragRls(['--big-tenant-chunks', '5000', '--json', '-'])
 * ```
 */
export async function ragRls(argv: readonly string[]): Promise<number> {
  const program = ragRlsCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<RlsCliOptions>()
    const log = (line: string) => process.stderr.write(`[rag-bench rls] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    onInterrupt(() => provisioned.stop())
    try {
      if (!provisioned.url)
        throw new RangeError('rag-bench rls logs in as a runtime role: it needs a server (--db local, --db container or --pg URL)')
      const result = await measureRlsCost(provisioned.db, provisioned.url, o, log)
      const report = { machine: machineInfo(), server: provisioned.info, ...result }
      if (o.json !== '-') {
        console.log(
          renderTable(
            ['search (runtime role)', 'p50 no RLS ms', "p50 isolation: 'rls' ms", 'ratio', 'p95 no RLS', 'p95 RLS'],
            result.rows.map((r) => [
              r.kind,
              r.none.p50.toFixed(2),
              r.rls.p50.toFixed(2),
              `${r.ratio.toFixed(3)}×`,
              r.none.p95.toFixed(2),
              r.rls.p95.toFixed(2),
            ]),
          ),
        )
        console.log(`method: ${result.method}`)
      }
      writeJson(o.json, report)
    } finally {
      await provisioned.stop()
    }
  })
}
