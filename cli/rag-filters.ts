import { writeFileSync } from 'node:fs'
import { Command } from 'commander'
import { filterChart, renderFilterReport } from '../bench/rag/filters/render-filter-report.js'
import { FILTER_SCHEMA, runFilterBench, type FilterBenchConfig } from '../bench/rag/filters/run-filter-bench.js'
import { loadFilterPeers } from '../bench/rag/filters/filter-peers.js'
import { chartLibrary, renderChart } from '../bench/report/charts.js'
import { addCommonOptions, dropSchemaOnInterrupt, positiveInt, provisionFor, runCli, writeJson, type CommonOptions } from './common.js'

interface FilterCliOptions extends CommonOptions, Omit<FilterBenchConfig, 'keep' | 'hard' | 'correlated' | 'before' | 'traffic'> {
  traffic?: number
  hard?: boolean
  correlated?: boolean
  before?: boolean
  peers: boolean
  plot?: string
}

/** Builds the `rag-bench filters` command (commander wiring only; the work is in bench/rag/filters). */
export function ragFiltersCommand(): Command {
  return addCommonOptions(
    new Command('rag-bench filters')
      .description(
        "Recall and latency under metadata filters: a large tenant with its own tuned HNSW index, filters independent of the vectors from 0.1% to 50% of its rows (equality, range, $in, $or), per strategy — pgscale's choice, always exact, the HNSW walk at a fixed ef — and the peers installed beside it (Mastra, LangChain), side by side.",
      )
      .option('--chunks <n>', "the measured tenant's chunks", positiveInt('--chunks', 10_000_000), 30_000)
      .option('--dim <n>', 'dimensions', positiveInt('--dim', 2000), 128)
      .option('--queries <n>', 'queries per filter', positiveInt('--queries', 100_000), 30)
      .option('--fixed-ef <n>', 'hnsw.ef_search of the fixed-ef walk', positiveInt('--fixed-ef', 1000), 100)
      .option(
        '--exact-below <n>',
        "pgscale's threshold: filters matching at most this many rows are scored exactly (default: the tenant's tuned threshold)",
        positiveInt('--exact-below', 1_000_000),
      )
      .option(
        '--hard',
        'add the hard tenant: the same size, spread widely around 24 topics (a high tuned ef_search), measured on the same ladder',
      )
      .option('--correlated', 'add the correlated ladder: a field that follows the topic (ranges of whole topics)')
      .option(
        '--traffic <n>',
        "searches sent per measured tenant before optimize(), with the ladder's filters in turn (tuning runs on the query sample)",
        positiveInt('--traffic', 100_000),
      )
      .option('--before', "add pgscale's filtered search as it was before issue #35 (1,000 rows exact, 40 candidates), side by side")
      .option('--seed <s>', 'data seed', '42')
      .option('--no-peers', 'leave out the peers even when installed')
      .option('--plot <file>', 'write recall@10 against p50 as SVG (Vega-Lite: npm install vega vega-lite)'),
    'local',
  )
}

/**
 * Runs `rag-bench filters` with `argv` (after `filters`); resolves to the exit code.
 *
 * ### Examples
 * ```ts
 * await ragFilters(['--chunks', '5000', '--queries', '10'])
 * ```
 */
export async function ragFilters(argv: readonly string[]): Promise<number> {
  const program = ragFiltersCommand()
  return runCli(program, argv, async (onInterrupt) => {
    const o = program.opts<FilterCliOptions>()
    if (o.plot) await chartLibrary()
    const log = (line: string) => process.stderr.write(`[rag-bench filters] ${line}\n`)
    const provisioned = await provisionFor(o, log)
    dropSchemaOnInterrupt(onInterrupt, provisioned, FILTER_SCHEMA, o.keep)
    try {
      const config = {
        chunks: o.chunks,
        dim: o.dim,
        queries: o.queries,
        seed: o.seed,
        fixedEf: o.fixedEf,
        ...(o.exactBelow === undefined ? {} : { exactBelow: o.exactBelow }),
        keep: Boolean(o.keep),
        hard: Boolean(o.hard),
        correlated: Boolean(o.correlated),
        before: Boolean(o.before),
        traffic: o.traffic ?? 0,
      }
      const peers = o.peers ? await loadFilterPeers(provisioned, config, log) : { peers: [], skipped: [] }
      const report = await runFilterBench(provisioned.db, provisioned.info, config, peers, log)
      if (o.json !== '-') console.log(renderFilterReport(report))
      writeJson(o.json, report)
      if (o.plot) writeFileSync(o.plot, await renderChart(filterChart(report)))
    } finally {
      await provisioned.stop()
    }
  })
}
