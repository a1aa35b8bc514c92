import pgvector from 'pgvector'
import { InvalidArgumentError } from '../../errors.js'
import type { Capabilities, CopySource, Session, SessionPool, SessionResult } from './session.js'
import { singleSessionPool } from './single-session-pool.js'

type Parsers = Record<number, (value: string, typeId: number) => unknown>

/** The part of PGlite's API pgscale uses (a structural type: no import of PGlite's own types). */
export interface PgliteLike {
  query<T>(sql: string, params?: unknown[], options?: { blob?: Blob; parsers?: Parsers }): Promise<{ rows: T[]; affectedRows?: number }>
  exec(sql: string, options?: { parsers?: Parsers }): Promise<Array<{ rows: unknown[]; affectedRows?: number }>>
  close(): Promise<void>
}

const FROM_STDIN = /\bfrom\s+stdin\b/i

class PgliteSession implements Session {
  parsers: Parsers = {}
  #vectorKnown = false

  constructor(private readonly pg: PgliteLike) {}

  async query(text: string, params: readonly unknown[]): Promise<SessionResult> {
    // PGlite runs in this thread and resolves without I/O: yield one event-loop turn per statement,
    // or a long run of statements starves timers and signal handlers (Ctrl-C would wait for the end).
    await new Promise<void>((resolve) => setImmediate(resolve))
    await this.#learnVectorType()
    const command = firstKeyword(text)
    if (params.length === 0) {
      // Parameterless texts may hold several statements (BEGIN; SET LOCAL ...): simple protocol.
      const results = await this.pg.exec(text, { parsers: this.parsers })
      const last = results[results.length - 1]
      return { rows: (last?.rows ?? []) as Record<string, unknown>[], rowCount: last?.affectedRows, command }
    }
    const result = await this.pg.query<Record<string, unknown>>(text, [...params], { parsers: this.parsers })
    return { rows: result.rows, rowCount: result.affectedRows, command }
  }

  async copyFrom(text: string, source: CopySource): Promise<number> {
    if (!FROM_STDIN.test(text)) throw new InvalidArgumentError('copyFrom expects a COPY ... FROM STDIN statement')
    // PGlite reads COPY input from a Blob: the data of one call is buffered (capabilities.copy).
    const chunks: Uint8Array[] = []
    for await (const chunk of source) chunks.push(chunk)
    const result = await this.pg.query(text.replace(FROM_STDIN, `FROM '/dev/blob'`), [], {
      blob: new Blob(chunks),
    })
    return result.affectedRows ?? 0
  }

  async #learnVectorType(): Promise<void> {
    if (this.#vectorKnown) return
    const { rows } = await this.pg.query<{ oid: number }>(`select oid from pg_type where typname = 'vector'`)
    const oid = rows[0]?.oid
    if (oid !== undefined) {
      this.parsers = { [oid]: (value: string) => pgvector.fromSql(value) }
      this.#vectorKnown = true
    }
  }
}

function firstKeyword(text: string): string {
  const word = /^\s*([a-z]+)/i.exec(text)?.[1]?.toUpperCase() ?? ''
  // A data-modifying CTE reports its affected rows; let the driver count them.
  return word === 'WITH' ? 'INSERT' : word
}

/**
 * A {@link SessionPool} over one PGlite instance: one session, handed to one caller at a time.
 * A caller that acquires while another holds it waits, so never use `db` inside `db.transaction`.
 *
 * ### Examples
 * ```ts
 * const db = new Database(createPglitePool(await PGlite.create({ extensions: { vector } })))
 * ```
 */
export function createPglitePool(pglite: PgliteLike): SessionPool {
  const capabilities: Capabilities = {
    concurrentConnections: false,
    maxConnections: 1,
    copy: 'buffered',
    multiStatementResults: true,
    maxBuildMemoryMb: 48,
    inProcess: true,
  }
  return singleSessionPool(new PgliteSession(pglite), capabilities, () => pglite.close())
}
