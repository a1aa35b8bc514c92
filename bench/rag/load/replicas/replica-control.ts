import { sql } from 'kysely'
import { connect, fromToken, type Database } from '../../../../src/index.js'
import { truthClock } from '../corpus-truth.js'

/** A standby as `provision({ provider: 'local', standbys })` returns it. */
export interface Standby {
  url: string
  stop(): Promise<void>
  restart(): Promise<void>
}

/** What the bench saw of one standby's replay over a window, sampled from outside the routing. */
export interface LagSeen {
  /** The largest replay lag (ms: since its last replayed commit, while it had received WAL it had not replayed). */
  msMax: number
  /** The most WAL it was behind the primary's write position (bytes). */
  bytesMax: number
  samples: number
  /** Samples it did not answer (stopped, starting). */
  unreachable: number
}

const POSITIONS = sql<{ replay: string | null; receive: string | null; lag: number | null }>`
  select pg_last_wal_replay_lsn()::text as replay, pg_last_wal_receive_lsn()::text as receive,
    extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000 as lag`

/**
 * The bench's own hands on the standbys, from the main thread: a small pool on each, to pause and
 * resume replay (`pg_wal_replay_pause()`/`pg_wal_replay_resume()`), stop and restart one, wait
 * for them to catch up, and sample their replay lag — what the load's routing has to cope with,
 * seen from outside it.
 *
 * ### Examples
 * ```ts
 * const control = await ReplicaControl.open(provisioned.db, provisioned.standbys!)
 * await control.pause(0)
 * ```
 */
export class ReplicaControl {
  private constructor(
    readonly primary: Database,
    readonly standbys: readonly Standby[],
    readonly nodes: readonly Database[],
  ) {}

  static async open(primary: Database, standbys: readonly Standby[]): Promise<ReplicaControl> {
    const nodes: Database[] = []
    try {
      for (const s of standbys)
        nodes.push(await connect({ connectionString: s.url, max: 2, connectionTimeoutMillis: 5000 }, { requireVector: false }))
    } catch (err) {
      await Promise.all(nodes.map((n) => n.close().catch(() => {})))
      throw err
    }
    return new ReplicaControl(primary, standbys, nodes)
  }

  /** Each standby's name in reports: `replica 1 (127.0.0.1:5433)`, no credentials. */
  get names(): string[] {
    return this.standbys.map((s, i) => `replica ${i + 1} (${new URL(s.url).host})`)
  }

  /** Waits until every standby has replayed the primary's current write position; the seconds it took. */
  async catchUp(timeoutMs: number): Promise<number> {
    const started = performance.now()
    const target = await this.#primaryLsn()
    for (let i = 0; i < this.nodes.length; i++)
      if (!(await this.#replayed(i, target, timeoutMs - (performance.now() - started))))
        throw new Error(`rag-bench load: ${this.names[i]} did not replay the primary's WAL within ${timeoutMs / 1000} s`)
    return (performance.now() - started) / 1000
  }

  async #primaryLsn(): Promise<bigint> {
    const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(this.primary)
    return lsnOf(rows[0]!.lsn)
  }

  /** Whether standby `i` replays past `target` within `timeoutMs`. */
  async #replayed(i: number, target: bigint, timeoutMs: number): Promise<boolean> {
    const until = performance.now() + timeoutMs
    for (;;) {
      const { rows } = await POSITIONS.execute(this.nodes[i]!)
      if (rows[0]?.replay && lsnOf(rows[0].replay) >= target) return true
      if (performance.now() > until) return false
      await sleep(100)
    }
  }

  async pause(i: number): Promise<void> {
    await sql`select pg_wal_replay_pause()`.execute(this.nodes[i]!)
  }

  async resume(i: number): Promise<void> {
    await sql`select pg_wal_replay_resume()`.execute(this.nodes[i]!)
  }

  /**
   * Before stopping standby `i`: a checkpoint on the primary that it replays and makes its
   * restartpoint, so its restart replays only what came after, not everything since the primary's
   * last timed checkpoint (a restart must be ready within the provider's 30 s).
   */
  async prepareStop(i: number): Promise<void> {
    await sql`checkpoint`.execute(this.primary)
    if (await this.#replayed(i, await this.#primaryLsn(), 15_000)) await sql`checkpoint`.execute(this.nodes[i]!)
  }

  /** Stops standby `i` (fast shutdown). */
  stop(i: number): Promise<void> {
    return this.standbys[i]!.stop()
  }

  /** Starts standby `i` again: up to three attempts (the machine may be busy); the attempts it took. */
  async restart(i: number, log: (line: string) => void): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.standbys[i]!.restart()
        return attempt
      } catch (err) {
        log(`  ${this.names[i]}: restart attempt ${attempt} failed: ${err instanceof Error ? err.message : String(err)}`)
        if (attempt === 3) throw err
      }
    }
  }

  /** Samples every standby's replay lag every `everyMs` from now until `to` ({@link truthClock} ms). */
  async sampleLag(to: number, everyMs = 100): Promise<LagSeen[]> {
    const seen = this.nodes.map(() => ({ msMax: 0, bytesMax: 0, samples: 0, unreachable: 0 }))
    while (truthClock() < to) {
      const next = sleep(everyMs)
      const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(this.primary)
      const primary = lsnOf(rows[0]!.lsn)
      await Promise.all(
        this.nodes.map(async (node, i) => {
          const s = seen[i]!
          s.samples++
          try {
            const at = (await POSITIONS.execute(node)).rows[0]!
            const replay = at.replay ? lsnOf(at.replay) : 0n
            const receive = at.receive ? lsnOf(at.receive) : replay
            if (receive > replay) s.msMax = Math.max(s.msMax, at.lag ?? 0)
            s.bytesMax = Math.max(s.bytesMax, Number(primary > replay ? primary - replay : 0n))
          } catch {
            s.unreachable++
          }
        }),
      )
      await next
    }
    return seen
  }

  /** Resumes replay everywhere it answers (a step that failed mid-pause leaves none paused), then closes the pools. */
  async close(): Promise<void> {
    await Promise.all(this.nodes.map((_, i) => this.resume(i).catch(() => {})))
    await Promise.all(this.nodes.map((n) => n.close().catch(() => {})))
  }
}

function lsnOf(text: string): bigint {
  return fromToken(`pgscale:wal:${text}`)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
