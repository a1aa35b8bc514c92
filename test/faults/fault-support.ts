import { sql } from 'kysely'
import { expect } from 'vitest'
import type { Database } from '../../src/index.js'

/** What must survive a fault: row counts and checksums of the tables, and the indexes. */
export interface Snapshot {
  rows: Record<string, number>
  checksums: Record<string, string>
  indexes: string[]
}

/** Counts and md5 checksums of `tables` (every column, in key order), and the valid indexes. */
export async function snapshot(db: Database, tables: Record<string, string>): Promise<Snapshot> {
  const rows: Record<string, number> = {}
  const checksums: Record<string, string> = {}
  for (const [table, orderBy] of Object.entries(tables)) {
    const { rows: r } = await sql<{ n: number; sum: string | null }>`
      select count(*)::int as n, md5(string_agg(t::text, '|' order by ${sql.raw(orderBy)})) as sum from ${sql.table(table)} t`.execute(db)
    rows[table] = r[0]!.n
    checksums[table] = r[0]!.sum ?? ''
  }
  const { rows: idx } = await sql<{ name: string }>`
    select c.relname as name from pg_index x join pg_class c on c.oid = x.indexrelid
    join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public' order by 1`.execute(db)
  return { rows, checksums, indexes: idx.map((i) => i.name) }
}

/** Invalid indexes and advisory locks in this database (pg_locks is the whole server's): both must be none after a fault. */
export async function leftovers(db: Database): Promise<{ invalidIndexes: number; advisoryLocks: number }> {
  const { rows } = await sql<{ invalid: number; locks: number }>`
    select (select count(*)::int from pg_index where not indisvalid) as invalid,
      (select count(*)::int from pg_locks where locktype = 'advisory'
        and database = (select oid from pg_database where datname = current_database())) as locks`.execute(db)
  return { invalidIndexes: rows[0]!.invalid, advisoryLocks: rows[0]!.locks }
}

/**
 * Waits until a backend other than the admin's matches `where` (a condition on pg_stat_activity,
 * trusted test text), then terminates it; resolves to its pid.
 */
export async function terminateWhen(admin: Database, where: string, timeoutMs = 20_000): Promise<number> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const { rows } = await sql<{ pid: number }>`
      select pid from pg_stat_activity
      where pid <> pg_backend_pid() and datname = current_database() and (${sql.raw(where)})
      limit 1`.execute(admin)
    if (rows[0]) {
      await sql`select pg_terminate_backend(${rows[0].pid}::int)`.execute(admin)
      return rows[0].pid
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`no backend matched "${where}" within ${timeoutMs} ms`)
}

/** Tally of injected faults, printed as the suite's one line. */
export class FaultTally {
  injected = 0
  lost = 0
  halfWritten = 0
  healthy = 0

  /** Compares the state after a fault with the state before; counts what was lost or half-written. */
  record(name: string, before: Snapshot, after: Snapshot, left: { invalidIndexes: number; advisoryLocks: number }): void {
    this.injected++
    const lostRows = Object.keys(before.rows).some((t) => (after.rows[t] ?? 0) < before.rows[t]!)
    if (lostRows) this.lost++
    else if (JSON.stringify(before) !== JSON.stringify(after) || left.invalidIndexes > 0) this.halfWritten++
    expect(after, `${name}: state changed`).toEqual(before)
    expect(left, `${name}: leftovers`).toEqual({ invalidIndexes: 0, advisoryLocks: 0 })
  }

  line(): string {
    return `faults: ${this.injected} injected, ${this.lost} lost, ${this.halfWritten} half-written, pool healthy after ${this.healthy}`
  }
}
