import { sql } from 'kysely'
import type { Database } from '../../../src/index.js'
import { runLoadStep, type ClientRunner, type LoadStep } from './load-step.js'

/** What `--soak` measured. */
export interface SoakReport {
  clients: number
  minutes: number
  throughput: number
  readP95Ms: number
  rowsChecked: number
  wrongRows: number
  /** Every 5 s: seconds since start, the bench's RSS (MB), the server's client backends. */
  samples: Array<{ second: number; rssMB: number; backends: number }>
  /** Least-squares slope of RSS over the second half, per hour (MB/h). */
  rssGrowthMbPerHour: number
  maxGrowthMbPerHour: number
  passed: boolean
}

/**
 * Holds one step for `minutes`, sampling the bench's RSS (every thread's: the client workers are
 * threads of it) and the server's client backends every 5 s; fails when RSS grows faster than
 * `maxGrowthMbPerHour` over the second half (the first half is warm-up: pools fill, caches grow).
 *
 * ### Examples
 * ```ts
 * const { soak } = await runSoak(workers, observer, { clients: 8, minutes: 10, warmupSeconds: 3 }, 50, console.error)
 * soak.passed
 * ```
 */
export async function runSoak(
  runner: ClientRunner,
  observer: Database,
  phase: { clients: number; minutes: number; warmupSeconds: number },
  maxGrowthMbPerHour: number,
  log: (line: string) => void,
): Promise<{ step: LoadStep; soak: SoakReport }> {
  const { clients, minutes } = phase
  log(`soak: ${clients} client(s) for ${minutes} min, RSS and backends every 5 s`)
  const samples: SoakReport['samples'] = []
  const started = performance.now()
  const sample = async () => {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity where backend_type = 'client backend' and datname = current_database()`.execute(
      observer,
    )
    samples.push({ second: (performance.now() - started) / 1000, rssMB: process.memoryUsage().rss / 1024 ** 2, backends: rows[0]!.n })
  }
  await sample()
  const timer = setInterval(() => void sample().catch(() => {}), 5000)
  let step
  try {
    step = await runLoadStep(runner, observer, clients, minutes * 60, phase.warmupSeconds)
  } finally {
    clearInterval(timer)
  }
  await sample()
  const growth = rssGrowthPerHour(samples)
  const passed = growth <= maxGrowthMbPerHour && step.wrongRows === 0
  log(`soak: RSS ${growth.toFixed(1)} MB/h over the second half (bound ${maxGrowthMbPerHour}) — ${passed ? 'passed' : 'FAILED'}`)
  const soak = {
    clients,
    minutes,
    throughput: step.throughput,
    readP95Ms: step.readP95Ms,
    rowsChecked: step.rowsChecked,
    wrongRows: step.wrongRows,
    samples: samples.map((s) => ({ second: Math.round(s.second), rssMB: Math.round(s.rssMB), backends: s.backends })),
    rssGrowthMbPerHour: growth,
    maxGrowthMbPerHour,
    passed,
  }
  return { step, soak }
}

/**
 * The least-squares slope of RSS over the second half of the samples, in MB per hour.
 *
 * ### Examples
 * ```ts
 * rssGrowthPerHour([{ second: 0, rssMB: 100 }, { second: 1800, rssMB: 110 }, { second: 3600, rssMB: 120 }]) // ≈ 20
 * ```
 */
export function rssGrowthPerHour(samples: ReadonlyArray<{ second: number; rssMB: number }>): number {
  const half = samples.slice(Math.floor(samples.length / 2))
  if (half.length < 2) return 0
  const mx = half.reduce((s, p) => s + p.second, 0) / half.length
  const my = half.reduce((s, p) => s + p.rssMB, 0) / half.length
  const sxy = half.reduce((s, p) => s + (p.second - mx) * (p.rssMB - my), 0)
  const sxx = half.reduce((s, p) => s + (p.second - mx) ** 2, 0)
  return sxx === 0 ? 0 : (sxy / sxx) * 3600
}
