import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'
import { toPgScaleError } from '../errors.js'
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
      throw toPgScaleError(err)
    }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('pgscale: streamQuery is not supported; page with LIMIT/keyset instead')
  }

  /** Streams `source` into `COPY ... FROM STDIN`; resolves to the rows copied. */
  async copyFrom(sql: string, source: CopySource): Promise<number> {
    try {
      return await this.session.copyFrom(sql, source)
    } catch (err) {
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

/** Quotes a savepoint name Kysely's API took from the caller. */
function quoteName(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
