#!/usr/bin/env node
import { Command } from 'commander'
import { renderStoreReport } from '../bench/store/render-store-report.js'
import { dropStoreBenchData, runStoreBench, type StoreBenchOptions } from '../bench/store/run-store-bench.js'
import { addCommonOptions, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'

/** The parsed options: the bench's parameters plus the connection ones. */
type StoreBenchCli = CommonOptions & StoreBenchOptions

/** Builds the `store-bench` command (commander wiring only; the work is in bench/store). */
export function storeBenchCommand(): Command {
  return addCommonOptions(
    new Command('store-bench')
      .description(
        'The store side by side with hand-written SQL: ingest paths (bulkIngest, bare binary COPY, psql \\copy, multi-row INSERT, LangChain.js, fullText: false, the server-bound ceiling), search beside the same SQL raw, PLAIN vs EXTENDED storage.',
      )
      .option('--chunks <n>', 'chunks in all', positiveInt('--chunks', 100_000_000), 100_000)
      .option('--tenants <n>', 'tenants of equal size', positiveInt('--tenants', 10_000), 4)
      .option('--dim <n>', 'dimensions', positiveInt('--dim', 2000), 384)
      .option('--rounds <n>', 'ingest rounds per method (median reported)', positiveInt('--rounds', 100), 3)
      .option('--queries <n>', 'search queries per tenant', positiveInt('--queries', 100_000), 200)
      .option('--seed <s>', 'data seed', '42')
      .option('--skip-langchain', 'do not measure LangChain.js even if installed', false),
    'local',
  )
}

/**
 * Runs `store-bench` with `argv` (without `node` and the script); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await storeBench(['--chunks', '20000', '--rounds', '1', '--json', 'out.json'])
 * ```
 */
export async function storeBench(argv: readonly string[]): Promise<number> {
  const program = storeBenchCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<StoreBenchCli>()
    const log = (line: string) => process.stderr.write(`[store-bench] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    // Interrupted (SIGINT, SIGTERM): its schema and LangChain.js's table go, unless --keep.
    onInterrupt(async () => {
      if (!o.keep) await dropStoreBenchData(provisioned.db).catch(() => {})
      await provisioned.stop()
    })
    try {
      const report = await runStoreBench(provisioned, { ...o, skipLangchain: Boolean(o.skipLangchain), keep: Boolean(o.keep) }, log)
      if (o.json !== '-') console.log(renderStoreReport(report))
      writeJson(o.json, report)
    } finally {
      await provisioned.stop()
    }
  })
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/store-bench')) {
  process.exitCode = await storeBench(process.argv.slice(2))
}
