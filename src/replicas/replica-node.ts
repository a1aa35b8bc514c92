import { sql } from 'kysely'
import type { Database } from '../db/database.js'
import { DatabaseError } from '../errors.js'
import { parseLsn } from './wal-position.js'

/** What routing counts of one replica. */
export interface ReplicaNodeStats {
  /** Where it is, without credentials (`127.0.0.1:5433/app`). */
  node: string
  /** Reads it served. */
  reads: number
  /** Reads that waited for it to replay past the caller's write, then ran here. */
  waited: number
  /** Reads it failed (unreachable, ended, conflict with recovery, over `readTimeoutMs`): each retried elsewhere. */
  failures: number
  /** Of those, reads (or position reads) it did not answer within `readTimeoutMs`. */
  timeouts: number
  /** Times it was passed over for lagging beyond `maxLagMs`. */
  skippedLagging: number
  /** The largest replay lag seen on it (ms; 0 when caught up with what it received). */
  replayLagMsMax: number
  /** Not known to be down now. */
  up: boolean
  /** It left recovery (promoted): it serves no read until it is a standby again (looked at every `retryDownMs`). */
  promoted: boolean
}

/** A replica that did not answer within the read deadline: the read goes elsewhere (class 08, like a lost connection). */
export class ReplicaTimeoutError extends DatabaseError {
  constructor(ms: number) {
    super({ message: `the replica did not answer within ${ms} ms`, code: '08006' })
  }
}

/**
 * Whether an error says the node is unavailable for this read (so the read may go elsewhere) and
 * not that the statement is wrong: a connection that failed or ended (no SQLSTATE, or class 08),
 * a server shutting down or starting (57P01-57P03), or a standby's conflict with recovery (40001).
 */
export function nodeUnavailable(err: unknown): boolean {
  if (!(err instanceof DatabaseError)) return true
  const state = err.sqlState
  return state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03' || state === '40001'
}

/**
 * One replica as routing sees it: its handle, its replay position (read at most every
 * `cacheMs`), its replay lag, whether it is down (and until when it is left alone) or promoted.
 */
export class ReplicaNode {
  replay = 0n
  lagMs = 0
  promoted = false
  #checkedAt = -Infinity
  #downUntil = 0
  #advancedAt = performance.now()
  #checking: Promise<void> | undefined
  readonly stats: ReplicaNodeStats

  constructor(
    readonly db: Database,
    name: string,
  ) {
    this.stats = {
      node: name,
      reads: 0,
      waited: 0,
      failures: 0,
      timeouts: 0,
      skippedLagging: 0,
      replayLagMsMax: 0,
      up: true,
      promoted: false,
    }
  }

  /** Not down, or its time out is over (a promoted one is down until it is looked at again). */
  usable(now: number): boolean {
    return now >= this.#downUntil
  }

  /**
   * Runs `fn` (a read on this replica) with a deadline: past `ms` it rejects with a
   * {@link ReplicaTimeoutError} (the caller passes the node over) and the late answer is dropped.
   */
  async within<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const work = fn()
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.stats.timeouts++
        reject(new ReplicaTimeoutError(ms))
      }, ms)
    })
    try {
      return await Promise.race([work, deadline])
    } finally {
      clearTimeout(timer)
      work.catch(() => {}) // a late failure of an abandoned read is nobody's
    }
  }

  /** Left alone for `ms` after a failure; routing looks again afterwards. */
  markDown(ms: number): void {
    this.#downUntil = performance.now() + ms
    this.#checkedAt = -Infinity
    this.stats.failures++
    this.stats.up = false
  }

  /** Reads its replay position and lag, unless read within `cacheMs`; marks it down when that fails or takes over `timeoutMs`. */
  async refresh(cacheMs: number, downMs: number, timeoutMs = 500): Promise<void> {
    if (performance.now() - this.#checkedAt < cacheMs) return
    this.#checking ??= this.#read(downMs, timeoutMs).finally(() => (this.#checking = undefined))
    return this.#checking
  }

  async #read(downMs: number, timeoutMs: number): Promise<void> {
    try {
      await this.within(timeoutMs, () => this.#position(downMs))
    } catch (err) {
      if (!nodeUnavailable(err)) throw err
      this.markDown(downMs)
    }
  }

  async #position(downMs: number): Promise<void> {
    const { rows } = await sql<{ replay: string | null; receive: string | null; recovery: boolean; lag: number | null }>`
        select pg_last_wal_replay_lsn()::text as replay, pg_last_wal_receive_lsn()::text as receive, pg_is_in_recovery() as recovery,
          extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000 as lag`.execute(this.db)
    const row = rows[0]!
    const now = performance.now()
    this.promoted = !row.recovery
    this.stats.promoted = this.promoted
    // Promoted: passed over, and looked at again after `downMs` (re-cloned as a standby at the same address, it serves again).
    if (this.promoted) this.#downUntil = now + downMs
    const replay = row.replay ? parseLsn(row.replay) : 0n
    const receive = row.receive ? parseLsn(row.receive) : replay
    if (replay !== this.replay || receive <= replay) this.#advancedAt = now
    this.replay = replay
    // Behind what it received: lagging since its last replayed commit (the server's clock) or, when it
    // has replayed none since it started, since this process saw its replay stop advancing.
    this.lagMs = receive > replay ? Math.max(row.lag ?? 0, now - this.#advancedAt) : 0
    this.stats.replayLagMsMax = Math.max(this.stats.replayLagMsMax, this.lagMs)
    this.stats.up = true
    this.#checkedAt = now
  }
}
