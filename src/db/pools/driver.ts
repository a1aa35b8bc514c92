import { CompiledQuery, type DatabaseConnection, type Driver, type QueryResult, type TransactionSettings } from 'kysely'
import { InvalidArgumentError, PgScaleError, toPgScaleError } from '../../errors.js'
import type { CopySource, Session, SessionPool } from './session.js'

const AFFECTING = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE', 'COPY'])

/** A Kysely connection over one {@link Session}; adds `copyFrom`. */
export class SessionConnection implements DatabaseConnection {
  /** Set when a statement failed in a way that leaves the session unusable (the pool drops it). */
  broken: unknown = undefined

  constructor(readonly session: Session) {}

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    try {
      const { rows, rowCount, command } = await this.session.query(compiledQuery.sql, compiledQuery.parameters)
      if (command === 'COMMIT' || command === 'ROLLBACK') return { rows: [{ command } as R] }
      return {
        rows: rows as R[],
        numAffectedRows: command !== undefined && AFFECTING.has(command) && rowCount != null ? BigInt(rowCount) : undefined,
      }
    } catch (err) {
      if (endsConnection(err)) this.broken = err
      throw toPgScaleError(err)
    }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new InvalidArgumentError('streamQuery is not supported on a pgscale Database; page with LIMIT/keyset instead')
  }

  /** Streams `source` into `COPY ... FROM STDIN`; resolves to the rows copied. */
  async copyFrom(sql: string, source: CopySource): Promise<number> {
    try {
      return await this.session.copyFrom(sql, source)
    } catch (err) {
      if (endsConnection(err)) this.broken = err
      throw toPgScaleError(err)
    }
  }
}

/** The Kysely driver behind every pgscale `Database`: one implementation for pg and PGlite. */
export class SessionDriver implements Driver {
  constructor(private readonly pool: SessionPool) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<SessionConnection> {
    return new SessionConnection(await this.pool.acquire())
  }

  async beginTransaction(connection: SessionConnection, settings: TransactionSettings): Promise<void> {
    let text = 'begin'
    if (settings.isolationLevel) text += ` isolation level ${settings.isolationLevel}`
    if (settings.accessMode) text += ` ${settings.accessMode}`
    await connection.executeQuery(CompiledQuery.raw(text))
  }

  async commitTransaction(connection: SessionConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: SessionConnection): Promise<void> {
    try {
      await connection.executeQuery(CompiledQuery.raw('rollback'))
    } catch (err) {
      connection.broken = err
      throw err
    }
  }

  async savepoint(connection: SessionConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteName(name)}`))
  }

  async rollbackToSavepoint(connection: SessionConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${quoteName(name)}`))
  }

  async releaseSavepoint(connection: SessionConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${quoteName(name)}`))
  }

  async releaseConnection(connection: SessionConnection): Promise<void> {
    this.pool.release(connection.session, connection.broken)
  }

  async destroy(): Promise<void> {
    await this.pool.close()
  }
}

/**
 * Whether an error means the session is gone: the server ended it (class 08, or 57P01-57P03: the
 * backend was terminated, the server is shutting down or starting) or the socket failed (an error
 * without a SQLSTATE: "Connection terminated unexpectedly", ECONNRESET, EPIPE). The error can
 * arrive before the client notices the socket closed, so the pool must be told to drop it.
 */
export function endsConnection(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || /^57P0[123]$/.test(code)
  return err instanceof Error && !(err instanceof PgScaleError)
}

/** Quotes a savepoint name Kysely's API took from the caller. */
function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
