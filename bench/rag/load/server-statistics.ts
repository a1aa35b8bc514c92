import { sql } from 'kysely'
import type { Database } from '../../../src/index.js'

/** The server's counters of the current database a step reads before and after its window. */
export interface DatabaseCounters {
  commits: number
  hits: number
  reads: number
}

/**
 * Reads `pg_stat_database` of the current database (its own transaction: the view is cached per
 * transaction).
 *
 * ### Examples
 * ```ts
 * const before = await databaseCounters(observer)
 * ```
 */
export async function databaseCounters(db: Database): Promise<DatabaseCounters> {
  const { rows } = await sql<{ commits: string; hits: string; reads: string }>`
    select xact_commit::text as commits, blks_hit::text as hits, blks_read::text as reads
    from pg_stat_database where datname = current_database()`.execute(db)
  return { commits: Number(rows[0]?.commits ?? 0), hits: Number(rows[0]?.hits ?? 0), reads: Number(rows[0]?.reads ?? 0) }
}

/**
 * Makes every connection of a pool of `connections` publish its pending statistics now. Since
 * PostgreSQL 15 a busy backend publishes them at most once a second, and an idle one up to 10 s
 * later: a step's "after" reading would miss the end of the step (a 1 s step read 0 commits). One
 * `pg_stat_force_next_flush()` per connection, all in flight at once so each holds a different
 * connection; the backend publishes before it answers. A server before 15 (no such function:
 * its collector lags by ~0.5 s instead) is left as it is. A connection that cannot be had in time
 * (a starved pool) is skipped: the reading is then late for it, and the step still reports.
 *
 * ### Examples
 * ```ts
 * await flushStatistics(clientsPool, 8)
 * const after = await databaseCounters(observer)
 * ```
 */
export async function flushStatistics(db: Database, connections: number): Promise<number> {
  const flush = sql`select pg_stat_force_next_flush()`
  const done = await Promise.allSettled(Array.from({ length: connections }, () => flush.execute(db)))
  return done.filter((d) => d.status === 'fulfilled').length
}

/**
 * Wait events of the other active client backends, sampled every 200 ms from `from` to `to`
 * (`performance.now()` times).
 *
 * ### Examples
 * ```ts
 * const { waits, samples } = await sampleWaits(observer, performance.now(), performance.now() + 10_000)
 * ```
 */
export async function sampleWaits(db: Database, from: number, to: number): Promise<{ waits: Record<string, number>; samples: number }> {
  const waits: Record<string, number> = {}
  let samples = 0
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, from - performance.now())))
  while (performance.now() < to) {
    const { rows } = await sql<{ wait: string; n: number }>`
      select coalesce(wait_event_type || ':' || wait_event, 'CPU') as wait, count(*)::int as n from pg_stat_activity
      where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend' group by 1`.execute(db)
    for (const r of rows) waits[r.wait] = (waits[r.wait] ?? 0) + r.n
    samples++
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return { waits, samples }
}
