/**
 * LangChain's own `PGVectorStore` (@langchain/community) beside pgscale through `pgscale/langchain`,
 * on the same rows in the same database in the same run: ingest rate (`addVectors`, precomputed
 * vectors), the index build after the load, and recall@10 against the exact answer, p50 latency and
 * short answers (fewer than 10 rows), unfiltered and under an `$in` filter of ~10% of the rows.
 *
 *   npx tsx bench/adapters/langchain-bench.ts [--pg URL] [--rows 20000] [--dim 384] [--queries 30] [--batch 1000] [--json file]
 *
 * Without `--pg` it runs on a throwaway local cluster (`provision({ provider: 'local' })`). Both stores
 * are loaded from the example app (examples/langchain: `npm run build && npm run adapters:install -- langchain`).
 */
import { cpus, totalmem } from 'node:os'
import { writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { provision, type ProvisionedDatabase } from '../../src/index.js'
import { langchainAppMissing } from './langchain/app-modules.js'
import { benchCorpus, exactTopK, type BenchQuery, type BenchRow, type Truth } from './langchain/bench-corpus.js'
import { measure, type QueryFigures } from './langchain/measure.js'
import { ingestInterleaved, langchainSide, pgscaleSide, type Side } from './langchain/sides.js'

interface BenchOptions {
  pg?: string
  rows: number
  dim: number
  queries: number
  batch: number
  json?: string
}

interface SideReport {
  name: string
  setup: string
  ingest: { seconds: number; rowsPerSecond: number }
  index: { seconds: number; buildSeconds: number; note: string }
  unfiltered: QueryFigures
  filtered: QueryFigures
}

function options(): BenchOptions {
  const { values } = parseArgs({
    options: {
      pg: { type: 'string' },
      rows: { type: 'string', default: '20000' },
      dim: { type: 'string', default: '384' },
      queries: { type: 'string', default: '30' },
      batch: { type: 'string', default: '1000' },
      json: { type: 'string' },
    },
  })
  const int = (name: string, value: string) => {
    const n = Number(value)
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`--${name} takes a positive integer, got ${value}`)
    return n
  }
  return {
    pg: values.pg,
    rows: int('rows', values.rows),
    dim: int('dim', values.dim),
    queries: int('queries', values.queries),
    batch: int('batch', values.batch),
    json: values.json,
  }
}

/** One side after the interleaved load: builds its index, and measures both kinds of query. */
async function runSide(
  side: Side,
  data: { rows: BenchRow[]; queries: BenchQuery[]; byId: Map<string, BenchRow> },
  truth: { all: Truth[]; filtered: Truth[] },
  seconds: number,
): Promise<SideReport> {
  console.error(`${side.name}: index…`)
  const index = await side.index()
  console.error(`${side.name}: queries…`)
  const unfiltered = await measure(side, data.queries, truth.all, data.byId, false)
  const filtered = await measure(side, data.queries, truth.filtered, data.byId, true)
  return { name: side.name, setup: side.setup, ingest: { seconds, rowsPerSecond: data.rows.length / seconds }, index, unfiltered, filtered }
}

const figures = (q: QueryFigures) =>
  `${q.recall.toFixed(3)} · ${q.p50Ms.toFixed(2)} ms (p95 ${q.p95Ms.toFixed(2)}) · ${q.short === 0 ? 'none short' : `${q.short} of ${q.queries} short (fewest ${q.fewest})`}`

function render(reports: SideReport[], context: Record<string, unknown>): string {
  const lines = [
    `LangChain VectorStore API, same rows, same database, same run — ${JSON.stringify(context)}`,
    '',
    `| | ${reports.map((r) => r.name).join(' | ')} |`,
    `|---|${reports.map(() => '---').join('|')}|`,
    `| ingest (addVectors) | ${reports.map((r) => `${Math.round(r.ingest.rowsPerSecond).toLocaleString('en-US')} rows/s (${r.ingest.seconds.toFixed(1)} s)`).join(' | ')} |`,
    `| index after the load (of it, the HNSW build) | ${reports.map((r) => `${r.index.seconds.toFixed(1)} s (${r.index.buildSeconds.toFixed(1)} s)`).join(' | ')} |`,
    `| unfiltered: recall@10 · p50 · short | ${reports.map((r) => figures(r.unfiltered)).join(' | ')} |`,
    `| $in ~10%: recall@10 · p50 · short | ${reports.map((r) => figures(r.filtered)).join(' | ')} |`,
    '',
    ...reports.map((r) => `${r.name}: ${r.setup}; ${r.index.note}`),
  ]
  return lines.join('\n')
}

async function main(): Promise<void> {
  const o = options()
  const missing = langchainAppMissing()
  if (missing) throw new Error(missing)
  const server: ProvisionedDatabase = await provision({ provider: o.pg ? 'url' : 'local', url: o.pg })
  try {
    const url = server.url
    if (!url) throw new Error('the bench needs a server URL')
    const data = { ...benchCorpus({ rows: o.rows, dim: o.dim, queries: o.queries }), byId: new Map<string, BenchRow>() }
    for (const row of data.rows) data.byId.set(row.id, row)
    const truth = {
      all: data.queries.map((q) => exactTopK(data.rows, q.vector, 10)),
      filtered: data.queries.map((q) => exactTopK(data.rows, q.vector, 10, (row) => q.buckets.includes(row.metadata.bucket))),
    }
    const matching = data.queries.map((q) => data.rows.filter((r) => q.buckets.includes(r.metadata.bucket)).length)
    const reports: SideReport[] = []
    const sides: Side[] = []
    try {
      for (const make of [langchainSide, pgscaleSide]) sides.push(await make(url, o.dim))
      console.error('ingest, the sides taking turns batch by batch…')
      const seconds = await ingestInterleaved(sides, data.rows, o.batch)
      for (let i = 0; i < sides.length; i++) reports.push(await runSide(sides[i]!, data, truth, seconds[i]!))
    } finally {
      for (const side of sides) await side.close()
    }
    const context = {
      machine: `${cpus()[0]?.model ?? '?'} × ${cpus().length}, ${Math.round(totalmem() / 2 ** 30)} GiB`,
      server: `${server.info.provider}: PostgreSQL ${server.info.serverVersion}, pgvector ${server.info.pgvectorVersion}`,
      rows: o.rows,
      dim: o.dim,
      queries: o.queries,
      batch: o.batch,
      filterMatches: `${Math.min(...matching)}–${Math.max(...matching)} rows`,
    }
    console.log(render(reports, context))
    if (o.json) writeFileSync(o.json, JSON.stringify({ context, reports }, null, 2) + '\n')
  } finally {
    await server.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err)
  process.exit(1)
})
