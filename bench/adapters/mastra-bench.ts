/**
 * Mastra's own pgvector store against pgscale through pgscale/mastra, on the same rows in the same
 * run: `@mastra/pg`'s `PgVector` (HNSW created with the index and maintained by the upserts) and
 * `PgScaleVector` (upserts, then `optimize()`), both driven through Mastra's `MastraVector` API —
 * upsert rate in the batches Mastra apps send, recall@10 against the exact top 10 without and with
 * a `$in` filter of ~10% of the rows, and query latency.
 *
 *   npx tsx bench/adapters/mastra-bench.ts [--pg URL] [--rows 20000] [--dim 384] [--queries 200] [--batch 500] [--json file]
 *
 * Without --pg, a local PostgreSQL is started (`provision({ provider: 'local' })`) and removed
 * afterwards. Needs examples/mastra installed (`npm run adapters:install -- mastra`).
 */
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { provision } from '../../src/index.js'
import { renderHeader, reportHeader, type ReportHeader } from '../report/header.js'
import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import { BENCH_TENANT, benchQueries, benchRows } from './mastra/bench-corpus.js'
import { HNSW, mastraPgVector, pgscaleAdapter } from './mastra/contenders.js'
import { loadMastraPeers } from './mastra/peers.js'
import { runContender, type ContenderResult } from './mastra/run-mastra-bench.js'

interface MastraBenchReport extends ReportHeader {
  peers: { '@mastra/core': string; '@mastra/pg': string }
  /** The machine's 1-minute load average when the run started and ended: other work on it skews every figure. */
  loadAverage: { start: number; end: number }
  results: ContenderResult[]
}

const METHOD =
  'one tenant of the clustered synthetic corpus (bench/synthetic/corpus.ts, seeded); each row a category drawn uniformly from 20, independent of its vector. ' +
  'Both stores loaded through Mastra’s upsert in batches, one writer, then readied (PgVector: ANALYZE; pgscale: optimize() with defaults). ' +
  'Queries: seeded vectors near the tenant’s topics, topK 10, sequential through Mastra’s query, 20 warm-up queries per pass discarded; ' +
  'filtered queries add { category: { $in: [two categories] } } (~10% of rows). Recall@10 against the exact cosine top 10 computed in the bench over the float4 vectors; latency is wall time of query() in this process, p50/p95.'

const USAGE = `Usage: npx tsx bench/adapters/mastra-bench.ts [options]

@mastra/pg's PgVector beside pgscale through pgscale/mastra, on the same rows in the same database
in the same run, both through Mastra's MastraVector API: upsert rows/s, time until queryable,
recall@10 and p50/p95 latency without and with a $in filter of ~10% of the rows.
Needs examples/mastra installed: npm run adapters:install -- mastra.

Options:
  --pg URL        a PostgreSQL server to run on (default: a throwaway local cluster, removed afterwards)
  --rows N        vectors in the one tenant (default 20000)
  --dim N         dimensions (default 384)
  --queries N     queries per pass, after 20 warm-up queries (default 200)
  --batch N       vectors per upsert call (default 500)
  --seed S        corpus seed (default 7)
  --json FILE     also write the report as JSON
  -h, --help      this text`

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h' },
      pg: { type: 'string' },
      rows: { type: 'string', default: '20000' },
      dim: { type: 'string', default: '384' },
      queries: { type: 'string', default: '200' },
      batch: { type: 'string', default: '500' },
      seed: { type: 'string', default: '7' },
      json: { type: 'string' },
    },
  })
  if (values.help) {
    console.log(USAGE)
    return
  }
  const [rowCount, dim, queryCount, batch] = [values.rows, values.dim, values.queries, values.batch].map((v) => positiveInteger(v!)) as [
    number,
    number,
    number,
    number,
  ]
  const log = (line: string) => console.error(`[mastra-bench] ${line}`)
  const loadAtStart = loadavg()[0]!
  const peers = await loadMastraPeers()
  const server = await provision(values.pg ? { provider: 'url', url: values.pg } : { provider: 'local' })
  try {
    const url = server.url
    if (!url) throw new Error(`the ${server.info.provider} provider gives no URL; @mastra/pg needs a connection string`)
    const spec = { seed: values.seed!, dim, tenants: [{ id: BENCH_TENANT, chunks: rowCount }] }
    log(`corpus: ${rowCount} × ${dim}, ${queryCount} queries with their exact top 10`)
    const rows = benchRows(spec)
    const queries = benchQueries(spec, rows, queryCount)
    const options = { dim, batch, log }
    const results = [await runContender(mastraPgVector(peers, url), rows, queries, options)]
    results.push(await runContender(await pgscaleAdapter(peers, url), rows, queries, { ...options, ef: HNSW.m * 10 }))
    const parameters = { rows: rowCount, dim, queries: queryCount, batch, seed: values.seed, topK: 10, hnsw: HNSW }
    const header = reportHeader('mastra-bench', server.info, parameters, METHOD)
    const peerVersions = { '@mastra/core': peers.coreVersion, '@mastra/pg': peers.pgVersion }
    const report: MastraBenchReport = { ...header, peers: peerVersions, loadAverage: { start: loadAtStart, end: loadavg()[0]! }, results }
    console.log(render(report))
    if (values.json) writeFileSync(values.json, `${JSON.stringify(report, null, 2)}\n`)
  } finally {
    await server.stop()
  }
}

function render(report: MastraBenchReport): string {
  const rows = report.results.flatMap((r) => {
    const passes = [{ label: r.name, unfiltered: r.unfiltered, filtered: r.filtered }]
    if (r.atEf) passes.push({ label: `${r.name} at ef_search ${r.atEf.ef}`, ...r.atEf })
    return passes.map((p, i) => [
      p.label,
      i === 0 ? fmt(r.upsertRowsPerSec) : '',
      i === 0 ? `${fmt(r.upsertSeconds)} + ${fmt(r.finish.seconds)}` : '',
      fmt(p.unfiltered.recall),
      fmt(p.unfiltered.latencyMs.p50),
      fmt(p.unfiltered.latencyMs.p95),
      fmt(p.filtered.recall),
      fmt(p.filtered.latencyMs.p50),
      fmt(p.filtered.latencyMs.p95),
      `${p.unfiltered.short} / ${p.filtered.short}`,
    ])
  })
  const table = renderTable(
    [
      'store',
      'upsert rows/s',
      'load + ready s',
      'recall@10',
      'p50 ms',
      'p95 ms',
      'filtered recall@10',
      'p50 ms',
      'p95 ms',
      'short (< 10 rows)',
    ],
    rows,
  )
  const setups = report.results.map((r) => `  ${r.name}: ${r.setup}; after the load: ${r.finish.what}`)
  return [
    renderHeader(report),
    `peers:      @mastra/core ${report.peers['@mastra/core']}, @mastra/pg ${report.peers['@mastra/pg']}`,
    `load:       1-minute load average ${fmt(report.loadAverage.start)} at the start, ${fmt(report.loadAverage.end)} at the end (other work on the machine skews every figure)`,
    '',
    table,
    '',
    ...setups,
  ].join('\n')
}

function positiveInteger(text: string): number {
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`expected a positive integer, got ${JSON.stringify(text)}`)
  return n
}

await main()
