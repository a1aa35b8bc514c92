/**
 * LlamaIndex.TS's own PGVectorStore (@llamaindex/postgres 0.0.66) against pgscale through
 * pgscale/llamaindex, on the same nodes in the same run: ingest rate, recall@10 against the exact
 * answer and p50 latency, unfiltered and under an `in` filter of ~10% selectivity.
 *
 *   npx tsx bench/adapters/llamaindex-bench.ts [--pg URL] [--rows 20000] [--dim 384] [--tenants 2]
 *     [--queries 50] [--batch 1000] [--json file]
 *
 * Without --pg, a throwaway local cluster (`provision({ provider: 'local' })`). Both stores come from
 * examples/llamaindex/node_modules: run `npm run build && npm run adapters:install -- llamaindex`
 * first. The tables li_bench_pgscale and li_bench_llamaindex are dropped and recreated.
 */
import { writeFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { provision } from '../../src/index.js'
import { runLlamaIndexBench, type LlamaIndexBenchReport } from './llamaindex/run.js'

const USAGE = `LlamaIndex.TS's PGVectorStore (@llamaindex/postgres) beside pgscale through pgscale/llamaindex, same nodes, same run.

  npx tsx bench/adapters/llamaindex-bench.ts [--pg URL] [--rows 20000] [--dim 384] [--tenants 2] [--queries 50] [--batch 1000] [--json file]

  --pg URL      a server (default: a throwaway local cluster, provision({ provider: 'local' }))
  --rows N      nodes in all, split evenly over the tenants (default 20000)
  --dim N       dimensions (default 384)
  --tenants N   tenants (pgscale: adapters by tenant; @llamaindex/postgres: collections) (default 2)
  --queries N   queries per tenant, each asked of both stores, unfiltered and filtered (default 50)
  --batch N     nodes per add() call, both stores (default 1000)
  --json FILE   the report as JSON (docs/results/llamaindex-adapter-*.json)

Needs the example app installed with the current pgscale packed into it; both stores load from there
(one @llamaindex/core for both):

  npm run build && npm run adapters:install -- llamaindex

It pins @llamaindex/core 0.6.23, llamaindex 0.12.1, @llamaindex/postgres 0.0.66 and pg 8.23.1
(examples/llamaindex/package.json), outside pgscale's own install. Tables li_bench_pgscale and
li_bench_llamaindex are dropped and recreated.`

const { values } = parseArgs({
  options: {
    help: { type: 'boolean', short: 'h' },
    pg: { type: 'string' },
    rows: { type: 'string', default: '20000' },
    dim: { type: 'string', default: '384' },
    tenants: { type: 'string', default: '2' },
    queries: { type: 'string', default: '50' },
    batch: { type: 'string', default: '1000' },
    json: { type: 'string' },
  },
})

if (values.help) {
  console.log(USAGE)
  process.exit(0)
}

const int = (name: 'rows' | 'dim' | 'tenants' | 'queries' | 'batch'): number => {
  const n = Number(values[name])
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${String(values[name])}`)
  return n
}

/** How many queries came back with fewer than 10 results, and the fewest: '0' when none did. */
const shortOf = (q: { short: number; fewest: number }): string => (q.short === 0 ? '0' : `${q.short} (fewest ${q.fewest})`)

/** The figures as a Markdown table, one row per store and setup. */
function table(report: LlamaIndexBenchReport): string {
  const ms = (x: number) => x.toFixed(1)
  const lines = [
    '| store | setup | ingest rows/s | index build s | recall@10 | p50 ms | recall@10 filtered | p50 ms filtered | short of 10 (unfiltered / filtered) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...report.results.map((r) =>
      [
        r.store,
        r.setup,
        r.ingestRowsPerSecond === undefined ? '' : Math.round(r.ingestRowsPerSecond).toLocaleString('en-US'),
        r.indexSeconds === undefined ? '' : r.indexSeconds.toFixed(1),
        r.unfiltered.recallAt10.toFixed(3),
        ms(r.unfiltered.p50Ms),
        r.filtered.recallAt10.toFixed(3),
        ms(r.filtered.p50Ms),
        `${shortOf(r.unfiltered)} / ${shortOf(r.filtered)}`,
      ].join(' | '),
    ),
  ]
  return lines.map((l) => (l.startsWith('|') ? l : `| ${l} |`)).join('\n')
}

const server = values.pg === undefined ? await provision({ provider: 'local' }) : undefined
try {
  const url = values.pg ?? server!.url!
  const report = await runLlamaIndexBench(
    { url, rows: int('rows'), dim: int('dim'), tenants: int('tenants'), queriesPerTenant: int('queries'), batch: int('batch') },
    (line) => console.error(`[llamaindex-bench] ${line}`),
  )
  const { machine, server: pgInfo, sizes } = report
  console.log(
    `${machine.cores} × ${machine.cpu}, ${machine.memoryGiB} GiB, Node ${machine.node}, load average ${machine.loadAverage.map((x) => x.toFixed(1)).join(' → ')}; ` +
      `PostgreSQL ${pgInfo.version}, pgvector ${pgInfo.pgvector}`,
  )
  console.log(
    `${sizes.rows} rows × ${sizes.dimensions} dims, ${sizes.tenants} tenants, ${sizes.queries} queries; filter in ${JSON.stringify(sizes.filterValues)} passes ${(sizes.filterSelectivity * 100).toFixed(1)}%\n`,
  )
  console.log(table(report))
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`)
} finally {
  await server?.stop()
}
