import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import pg from 'pg'
import { assertEmbedding, inlineParameters, parseFilter, renderStatements, settingsMessage, toVectorLiteral } from '../../src/bench-kit.js'
import { connect, PgVectorStore } from '../../src/index.js'
import { median } from '../report/stats.js'
import { renderTable } from '../report/table.js'

/**
 * What a search costs in pgscale's own code (docs/performance.md): CPU of this process per call
 * (`process.cpuUsage`) for each search form, with the query sample on and off, beside the same
 * one-message statement sent raw through `pg` (the vector formatted per call), measured in
 * alternating blocks; and the steps of a call measured alone in tight loops.
 *
 *   npx tsx bench/perf-gate/search-profile.ts --pg URL [--chunks 2000] [--blocks 30]
 *   node --cpu-prof --import tsx bench/perf-gate/search-profile.ts --pg URL --only search --blocks 200
 */

const DIM = 384
const FILTER = { kind: 'invoice', year: { $gte: 2022 } }

function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const vec = (next: () => number) => Array.from({ length: DIM }, () => next() * 2 - 1)

const cpu = () => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** CPU µs per iteration of `fn` over `n` iterations (the median of 5 runs). */
function loop(n: number, fn: (i: number) => unknown): number {
  const runs: number[] = []
  for (let r = 0; r < 5; r++) {
    const c = cpu()
    for (let i = 0; i < n; i++) fn(i)
    runs.push((cpu() - c) / n)
  }
  return median(runs)
}

async function prepare(url: string, chunks: number) {
  const db = await connect(url, { maxConnections: 4 })
  await sql`drop table if exists prof_on, prof_off cascade`.execute(db)
  const next = rng(1)
  const rows = Array.from({ length: 2 * chunks }, (_, i) => ({
    tenantId: i < chunks ? 'acme' : 'globex',
    documentId: `doc-${Math.floor(i / 4)}`,
    chunkIndex: i % 4,
    content: `chunk ${i}: invoice payment contract clause ${i % 17}`,
    embedding: vec(next),
    metadata: { kind: ['invoice', 'contract', 'memo', 'faq'][i % 4], year: 2020 + (i % 6), n: i },
  }))
  const on = await PgVectorStore.open(db, { table: 'prof_on', dimensions: DIM })
  const off = await PgVectorStore.open(db, { table: 'prof_off', dimensions: DIM, querySample: false })
  await on.bulkIngest(rows)
  await off.bulkIngest(rows)
  await sql`analyze prof_on`.execute(db)
  await sql`analyze prof_off`.execute(db)
  const q = rng(2)
  return { db, on, off, queries: Array.from({ length: 64 }, () => vec(q)) }
}

/** The forms measured: pgscale's calls and the raw one-message reference. */
function forms(p: Awaited<ReturnType<typeof prepare>>, client: pg.Client): Record<string, (i: number) => Promise<unknown>> {
  const on = p.on.forTenant('acme')
  const off = p.off.forTenant('acme')
  const q = (i: number) => p.queries[i % p.queries.length]!
  const statements = renderStatements(p.off.config)
  const settings = { 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' }
  return {
    'raw pg, one message (vector formatted per call)': (i) =>
      client.query(settingsMessage(settings, false, inlineParameters(statements.search, ['acme', toVectorLiteral(q(i)), 10]))),
    'search, sample on': (i) => on.search(q(i), { k: 10 }),
    'search, sample off': (i) => off.search(q(i), { k: 10 }),
    'search, sample off, efSearch given (no tuning lookup)': (i) => off.search(q(i), { k: 10, efSearch: 100 }),
    'filtered search, sample on': (i) => on.search(q(i), { k: 10, filter: FILTER }),
    'filtered search, sample off': (i) => off.search(q(i), { k: 10, filter: FILTER }),
    'hybridSearch, sample off': (i) => off.hybridSearch({ embedding: q(i), text: 'invoice payment', k: 10 }),
    'exactSearch, sample off': (i) => off.exactSearch(q(i), { k: 10 }),
  }
}

/** Each form in alternating blocks of `calls`, `blocks` times; the median CPU µs per call. */
async function measureForms(all: Record<string, (i: number) => Promise<unknown>>, blocks: number, calls: number) {
  const names = Object.keys(all)
  const per: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]))
  let i = 0
  for (const n of names) for (let w = 0; w < 50; w++) await all[n]!(i++)
  for (let b = 0; b < blocks; b++) {
    const order = b % 2 ? [...names].reverse() : names
    for (const n of order) {
      const c = cpu()
      for (let k = 0; k < calls; k++) await all[n]!(i++)
      per[n]!.push((cpu() - c) / calls)
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(per[n]!)]))
}

/** The steps of a call alone, in tight loops. */
function steps(p: Awaited<ReturnType<typeof prepare>>): Record<string, number> {
  const qs = p.queries
  const statements = renderStatements(p.off.config)
  const literal = toVectorLiteral(qs[0]!)
  const settings = { 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' }
  return {
    'assertEmbedding (384 floats: finite, range, non-zero)': loop(20_000, (i) => assertEmbedding(qs[i & 63], DIM, 'cosine', 'search')),
    'toVectorLiteral (384 values, 64 distinct vectors)': loop(5_000, (i) => toVectorLiteral(qs[i & 63]!)),
    'the same, each vector new (no number text V8 has cached)': loop(2_000, (i) => toVectorLiteral(qs[i & 63]!.map((x) => x + i * 1e-7))),
    'the shortest text of each float, each vector new (String(Math.fround(x)), the form before)': loop(
      2_000,
      (i) => `[${qs[i & 63]!.map((x) => String(Math.fround(x + i * 1e-7))).join(',')}]`,
    ),
    'parseFilter of the filter': loop(50_000, () => parseFilter(FILTER, 'search filter')),
    'parseFilter of no filter': loop(200_000, () => parseFilter(undefined, 'search filter')),
    'inlineParameters + settingsMessage (the message text)': loop(20_000, () =>
      settingsMessage(settings, false, inlineParameters(statements.search, ['acme', literal, 10])),
    ),
    'sampler record: Float32Array.from(384) + new Date()': loop(50_000, (i) => [Float32Array.from(qs[i & 63]!), new Date()]),
    'sampler flush, per sampled query: toVectorLiteral(Float32Array)': loop(2_000, (i) => toVectorLiteral(Float32Array.from(qs[i & 63]!))),
  }
}

const { values } = parseArgs({
  options: { pg: { type: 'string' }, chunks: { type: 'string' }, blocks: { type: 'string' }, only: { type: 'string' } },
})
const p = await prepare(values.pg ?? process.env.DATABASE_URL!, Number(values.chunks ?? 2000))
const client = new pg.Client({ connectionString: values.pg ?? process.env.DATABASE_URL })
await client.connect()
let all = forms(p, client)
if (values.only) all = Object.fromEntries(Object.entries(all).filter(([n]) => n.startsWith(values.only!)))
const measured = await measureForms(all, Number(values.blocks ?? 30), 10)
const raw = measured['raw pg, one message (vector formatted per call)']
console.log(
  renderTable(
    ['form (k 10)', 'CPU µs/call', 'over raw'],
    Object.entries(measured).map(([n, v]) => [n, v.toFixed(0), raw === undefined ? '—' : (v - raw).toFixed(0)]),
  ),
)
if (!values.only)
  console.log(
    renderTable(
      ['step, alone', 'CPU µs'],
      Object.entries(steps(p)).map(([n, v]) => [n, v.toFixed(2)]),
    ),
  )
await client.end()
await p.on.close()
await p.off.close()
await sql`drop table if exists prof_on, prof_off cascade`.execute(p.db)
await p.db.close()
