import { performance } from 'node:perf_hooks'
import { summarize, type Percentiles } from '../../report/stats.js'
import { recall, type BenchQuery, type BenchRow } from './bench-corpus.js'
import type { Contender } from './contenders.js'

/** One pass of queries: mean recall@10 against the exact top 10, and latency through Mastra's `query`. */
export interface QueryPass {
  recall: number
  latencyMs: Percentiles
  /** Queries answered with fewer than 10 results. */
  short: number
}

/** What one store measured. */
export interface ContenderResult {
  name: string
  setup: string
  /** Rows per second of the upserts alone (batches of `batch`, one writer). */
  upsertRowsPerSec: number
  upsertSeconds: number
  /** What ran after the load (pgscale's optimize(), PgVector's ANALYZE) and how long it took. */
  finish: { what: string; seconds: number }
  unfiltered: QueryPass
  /** With a `$in` filter of two categories (~10% of the rows). */
  filtered: QueryPass
  /** The same passes at another `ef_search`, where one was asked for. */
  atEf?: { ef: number; unfiltered: QueryPass; filtered: QueryPass }
}

/** Queries run and discarded before each timed pass (caches, plans, connections). */
const WARMUP = 20

/**
 * Loads the rows into one store through Mastra's API in batches, readies it, and measures its
 * queries: unfiltered and filtered recall@10 and latency, sequentially, after a warm-up.
 *
 * ### Examples
 * ```ts
 * const result = await runContender(await pgscaleAdapter(peers, url), rows, queries, { dim: 384, batch: 500 })
 * ```
 */
export async function runContender(
  contender: Contender,
  rows: readonly BenchRow[],
  queries: readonly BenchQuery[],
  options: { dim: number; batch: number; ef?: number; log: (line: string) => void },
): Promise<ContenderResult> {
  const { log } = options
  await contender.create(options.dim)
  log(`${contender.name}: upserting ${rows.length} rows in batches of ${options.batch}`)
  const t0 = performance.now()
  for (let start = 0; start < rows.length; start += options.batch) await contender.upsert(rows.slice(start, start + options.batch))
  const upsertSeconds = (performance.now() - t0) / 1000
  const t1 = performance.now()
  const what = await contender.finish()
  const finish = { what, seconds: (performance.now() - t1) / 1000 }
  log(`${contender.name}: upserts ${upsertSeconds.toFixed(1)} s, ${what} ${finish.seconds.toFixed(1)} s; querying`)
  const result: ContenderResult = {
    name: contender.name,
    setup: contender.setup,
    upsertRowsPerSec: rows.length / upsertSeconds,
    upsertSeconds,
    finish,
    unfiltered: await queryPass(contender, queries, false),
    filtered: await queryPass(contender, queries, true),
  }
  if (options.ef !== undefined) {
    result.atEf = {
      ef: options.ef,
      unfiltered: await queryPass(contender, queries, false, options.ef),
      filtered: await queryPass(contender, queries, true, options.ef),
    }
  }
  return result
}

async function queryPass(contender: Contender, queries: readonly BenchQuery[], filtered: boolean, ef?: number): Promise<QueryPass> {
  for (const q of queries.slice(0, WARMUP)) await contender.query(q.vector, filtered ? q.filter : undefined, ef)
  const latencies: number[] = []
  let sum = 0
  let short = 0
  for (const q of queries) {
    const start = performance.now()
    const ids = await contender.query(q.vector, filtered ? q.filter : undefined, ef)
    latencies.push(performance.now() - start)
    sum += recall(ids, filtered ? q.filteredTruth : q.truth)
    if (ids.length < 10) short++
  }
  return { recall: sum / queries.length, latencyMs: summarize(latencies), short }
}
