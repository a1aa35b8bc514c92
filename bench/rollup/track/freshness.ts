import { sql } from 'kysely'
import { localMonth, sqlTextConstant } from '../../../src/bench-kit.js'
import type { Database, MonthlyRollup } from '../../../src/index.js'
import { summarize, type Percentiles } from '../../report/stats.js'
import { drainLog } from './drain-log.js'

/** How fast one drainer turns dirty keys into clean buckets. */
export interface DrainRate {
  label: string
  buckets: number
  /** Source rows in those buckets. */
  rows: number
  seconds: number
  bucketsPerSecond: number
}

/** Seconds from a committed write to its bucket being clean, under a paced write load with one drainer. */
export interface Staleness {
  seconds: number
  writes: number
  writesPerSecond: number
  drainIntervalMs: number
  drainPasses: number
  bucketsRefreshed: number
  staleSeconds: Percentiles & { max: number }
  /** Writes whose bucket was still dirty when the load stopped (then drained, not counted). */
  unresolved: number
}

/**
 * Drain rate: dirties `keys` buckets by a no-op UPDATE of one row in each (tracking on), then one
 * drainer runs `refreshDirty` until the log is empty; buckets per second of that loop.
 *
 * ### Examples
 * ```ts
 * const rate = await measureDrainRate(db, rollup, 'pgscale_bench.expenses', 'pgscale_bench.expenses_monthly_dirty', { label: 'typical tenants', tenants: [2, 300], zone })
 * ```
 */
export async function measureDrainRate(
  db: Database,
  rollup: MonthlyRollup,
  source: string,
  o: { label: string; tenants: [number, number]; zone: string },
): Promise<DrainRate> {
  const month = sql.raw(`date_trunc('month', paid_at at time zone ${sqlTextConstant(o.zone)})`)
  const { rows } = await sql<{ buckets: number; rows: number }>`
    with touched as (
      update ${sql.raw(source)} s set amount = s.amount
      from (select distinct on (tenant_id, ${month}) tenant_id, id from ${sql.raw(source)}
            where tenant_id between ${o.tenants[0]} and ${o.tenants[1]} order by tenant_id, ${month}, id) one
      where s.tenant_id = one.tenant_id and s.id = one.id
      returning s.tenant_id, ${month} as m)
    select count(*)::int as buckets,
      (select count(*)::int from ${sql.raw(source)} where tenant_id between ${o.tenants[0]} and ${o.tenants[1]}) as rows
    from (select distinct tenant_id, m from touched) k`.execute(db)
  const t0 = performance.now()
  const buckets = await drainLog(rollup, db)
  const seconds = (performance.now() - t0) / 1000
  return { label: o.label, buckets, rows: rows[0]!.rows, seconds, bucketsPerSecond: buckets / seconds }
}

/**
 * Staleness under load: a writer inserts one to five rows of a random tenant in a recent month
 * per transaction, paced at `writesPerSecond`, for `seconds`; one drainer runs `refreshDirty` and,
 * after each pass, reads the keys still in the log. A write is clean at the first look after its
 * commit that finds its key gone (the refresh that claimed it read the source after the write
 * committed); a later write to the same key can only delay that, so the figure is an upper bound.
 *
 * ### Examples
 * ```ts
 * const staleness = await measureStaleness({ writer, drainer, rollup, source, log, tenants: 1000, end, zone, seconds: 20, writesPerSecond: 100, drainIntervalMs: 100 })
 * ```
 */
export async function measureStaleness(o: {
  writer: Database
  drainer: Database
  rollup: MonthlyRollup
  source: string
  /** The dirty-key log (qualified). */
  log: string
  tenants: number
  end: Date
  zone: string
  seconds: number
  writesPerSecond: number
  drainIntervalMs: number
}): Promise<Staleness> {
  const pending = new Map<string, number[]>()
  const stale: number[] = []
  let writes = 0
  let passes = 0
  let refreshed = 0
  let writing = true
  const writer = (async () => {
    const t0 = performance.now()
    let state = 12345
    const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    while (performance.now() - t0 < o.seconds * 1000) {
      const tenant = 2 + Math.floor(next() * Math.max(1, o.tenants - 1))
      const at = new Date(o.end.getTime() - Math.floor(next() * 90 * 86_400_000))
      const n = 1 + Math.floor(next() * 5)
      await sql`insert into ${sql.raw(o.source)} (tenant_id, paid_at, category, amount, status)
        select ${tenant}, ${at}, 'bench_stale', 1 + g, 'paid' from generate_series(1, ${n}::int) g`.execute(o.writer)
      const key = `${tenant}:${localMonth(at, o.zone)}`
      const list = pending.get(key) ?? []
      list.push(performance.now())
      pending.set(key, list)
      writes++
      const due = t0 + (writes * 1000) / o.writesPerSecond
      const wait = due - performance.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    }
    writing = false
  })()
  const drainer = (async () => {
    while (writing) {
      const done = await o.rollup.refreshDirty(o.drainer, { limit: 1000 })
      passes++
      refreshed += done.buckets
      // A look judges only writes committed before it began (a later one's key may be missing from what it read).
      const lookedAt = performance.now()
      const { rows } = await sql<{
        key: string
      }>`select distinct tenant_id || ':' || to_char(month, 'YYYY-MM-DD') as key from ${sql.raw(o.log)}`.execute(o.drainer)
      const dirty = new Set(rows.map((r) => r.key))
      const now = performance.now()
      for (const [key, commits] of pending) {
        if (dirty.has(key)) continue
        for (const c of commits) if (c < lookedAt) stale.push((now - c) / 1000)
        const later = commits.filter((c) => c >= lookedAt)
        if (later.length) pending.set(key, later)
        else pending.delete(key)
      }
      if (done.buckets === 0) await new Promise((resolve) => setTimeout(resolve, o.drainIntervalMs))
    }
  })()
  await Promise.all([writer, drainer])
  let unresolved = 0
  for (const commits of pending.values()) unresolved += commits.length
  await drainLog(o.rollup, o.drainer)
  await sql.raw(`delete from ${o.source} where category = 'bench_stale'`).execute(o.writer)
  await drainLog(o.rollup, o.drainer)
  return {
    seconds: o.seconds,
    writes,
    writesPerSecond: writes / o.seconds,
    drainIntervalMs: o.drainIntervalMs,
    drainPasses: passes,
    bucketsRefreshed: refreshed,
    staleSeconds: { ...summarize(stale), max: stale.length ? Math.max(...stale) : 0 },
    unresolved,
  }
}
