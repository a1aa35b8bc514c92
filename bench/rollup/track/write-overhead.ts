import { sql } from 'kysely'
import type { Database } from '../../../src/index.js'
import { median, summarize, type Percentiles } from '../../report/stats.js'
import type { PgIvm } from './pg-ivm.js'

/** How the source is maintained during a round: nothing, pgscale's tracking, or a pg_ivm IMMV. */
export type WriteMode = 'plain' | 'tracked' | 'pgIvm'

/** The writes measured: the same rows in each mode. */
export type WriteKind = 'insertSelect' | 'update' | 'delete' | 'copy' | 'singleRowInserts'

/** One write kind with one or four writers: its times per mode and the ratios to plain. */
export interface WriteOverhead {
  kind: WriteKind
  writers: number
  /** Rows written by all writers together (single-row inserts: statements). */
  rows: number
  /** Wall time of the whole write (all writers), per mode. */
  ms: Partial<Record<WriteMode, Percentiles>>
  /** Median over rounds of (mode ÷ plain) in the same round. */
  ratio: Partial<Record<Exclude<WriteMode, 'plain'>, number>>
}

/** What a round needs: where to write, how to turn a mode on and off. */
export interface WriteRounds {
  /** The writers' pool (four connections at least on a server). */
  writers: Database
  source: string
  /** The last moment of the history: written rows go into the months before it. */
  end: Date
  rows: number
  rounds: number
  /** Tenants of the one writer and of the four. */
  oneTenant: number
  fourTenants: readonly number[]
  singleRowInserts: number
  modes: Record<WriteMode, { on(): Promise<void>; off(): Promise<void> } | null>
  onRound?: (round: number, mode: WriteMode) => void
}

const KINDS: WriteKind[] = ['insertSelect', 'update', 'delete', 'copy', 'singleRowInserts']
const MARK = 'bench_write'

/**
 * Write overhead, side by side: every round runs each available mode once (the order rotating
 * round by round), and in each mode the same writes — a `rows`-row INSERT … SELECT, an UPDATE and
 * a DELETE of those rows, a COPY of as many (then deleted, not timed), and `singleRowInserts`
 * autocommit one-row INSERTs — first by one writer, then by four writers of different tenants at
 * once (each a quarter of the rows). The rows go into a typical tenant's last ~10 months, marked by
 * their category so the source is as it was after each round.
 *
 * ### Examples
 * ```ts
 * const overhead = await measureWriteOverhead({ writers, source, end, rows: 40_000, rounds: 5, oneTenant: 2, fourTenants: [3, 4, 5, 6], singleRowInserts: 200, modes })
 * ```
 */
export async function measureWriteOverhead(o: WriteRounds): Promise<WriteOverhead[]> {
  const modes = (Object.keys(o.modes) as WriteMode[]).filter((m) => o.modes[m])
  const times = new Map<string, Record<string, number[]>>()
  const record = (kind: WriteKind, writers: number, mode: WriteMode, ms: number) => {
    const key = `${kind}:${writers}`
    const entry = times.get(key) ?? {}
    ;(entry[mode] ??= []).push(ms)
    times.set(key, entry)
  }
  for (let round = 0; round < o.rounds; round++) {
    for (let i = 0; i < modes.length; i++) {
      const mode = modes[(round + i) % modes.length]!
      o.onRound?.(round, mode)
      const control = o.modes[mode]!
      await control.on()
      try {
        for (const [writers, tenants] of [
          [1, [o.oneTenant]],
          [4, o.fourTenants],
        ] as const) {
          const each = Math.max(1, Math.floor(o.rows / tenants.length))
          const inserts = Math.max(1, Math.floor(o.singleRowInserts / tenants.length))
          const all = (write: (tenant: number) => Promise<unknown>) => wall(() => Promise.all(tenants.map(write)))
          record('insertSelect', writers, mode, await all((t) => insertSelect(o, t, each)))
          record(
            'update',
            writers,
            mode,
            await all((t) =>
              sql.raw(`update ${o.source} set amount = amount + 1 where tenant_id = ${t} and category = '${MARK}'`).execute(o.writers),
            ),
          )
          record('delete', writers, mode, await all((t) => removeMarked(o, t)))
          record(
            'copy',
            writers,
            mode,
            await all((t) =>
              o.writers.copyFrom(`copy ${o.source} (tenant_id, paid_at, category, amount, status) from stdin`, [copyText(o, t, each)]),
            ),
          )
          await Promise.all(tenants.map((t) => removeMarked(o, t)))
          record('singleRowInserts', writers, mode, await all((t) => singleRows(o, t, inserts)))
          await Promise.all(tenants.map((t) => removeMarked(o, t)))
        }
      } finally {
        await control.off()
      }
    }
  }
  const out: WriteOverhead[] = []
  for (const writers of [1, 4]) {
    for (const kind of KINDS) {
      const entry = times.get(`${kind}:${writers}`) ?? {}
      const ms: WriteOverhead['ms'] = {}
      const ratio: WriteOverhead['ratio'] = {}
      for (const mode of modes) ms[mode] = summarize(entry[mode] ?? [])
      for (const mode of modes.filter((m) => m !== 'plain') as Array<Exclude<WriteMode, 'plain'>>)
        ratio[mode] = median((entry[mode] ?? []).map((t, r) => t / entry.plain![r]!))
      const rows = kind === 'singleRowInserts' ? o.singleRowInserts : o.rows
      out.push({ kind, writers, rows: writers === 1 ? rows : Math.floor(rows / 4) * 4, ms, ratio })
    }
  }
  return out
}

/** The pg_ivm mode's switch: the IMMV created before the round and dropped after it (neither timed). */
export function pgIvmMode(ivm: PgIvm | null, db: Database): WriteRounds['modes']['pgIvm'] {
  return ivm ? { on: () => ivm.create(db), off: () => ivm.drop(db) } : null
}

async function wall(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await work()
  return performance.now() - t0
}

/** `n` rows for `tenant`, one every 11 minutes back from the end (about 10 months for 40,000). */
function insertSelect(o: WriteRounds, tenant: number, n: number) {
  return sql`insert into ${sql.raw(o.source)} (tenant_id, paid_at, category, amount, status)
    select ${tenant}, ${o.end}::timestamptz - g * interval '11 minutes', ${MARK}, 1 + (g % 997), 'paid' from generate_series(1, ${n}::int) g`.execute(
    o.writers,
  )
}

function removeMarked(o: WriteRounds, tenant: number) {
  return sql.raw(`delete from ${o.source} where tenant_id = ${tenant} and category = '${MARK}'`).execute(o.writers)
}

/** The same rows as {@link insertSelect}, as COPY text. */
function copyText(o: WriteRounds, tenant: number, n: number): Buffer {
  const lines: string[] = []
  for (let g = 1; g <= n; g++)
    lines.push(`${tenant}\t${new Date(o.end.getTime() - g * 660_000).toISOString()}\t${MARK}\t${1 + (g % 997)}\tpaid`)
  return Buffer.from(lines.join('\n') + '\n')
}

async function singleRows(o: WriteRounds, tenant: number, n: number): Promise<void> {
  for (let g = 1; g <= n; g++)
    await sql`insert into ${sql.raw(o.source)} (tenant_id, paid_at, category, amount, status)
      values (${tenant}, ${new Date(o.end.getTime() - g * 3_600_000)}, ${MARK}, ${1 + (g % 997)}, 'paid')`.execute(o.writers)
}
