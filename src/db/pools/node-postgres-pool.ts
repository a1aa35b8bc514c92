import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { from as copyFromStream } from 'pg-copy-streams'
import pgvector from 'pgvector'
import type { Capabilities, CopySource, Session, SessionPool, SessionResult } from './session.js'

/** Options of a node-postgres session pool that pgscale creates. */
export interface NodePostgresPoolOptions {
  /** Most connections open at once. Default 10. */
  maxConnections?: number
  /** `application_name` reported to the server. Default `pgscale`. */
  applicationName?: string
  /** `'transaction'`: the connections go through a transaction pooler (PgBouncer); see `Capabilities.transactionPooled`. */
  pooler?: 'transaction'
}

/**
 * Parses pgvector's `vector` type. Its OID differs per database and exists only once the extension
 * does, so it is looked up per pool (once found, never again) instead of a query per connection.
 */
class VectorTypeParsers {
  vectorOid: number | undefined
  readonly getTypeParser = (oid: number, format?: 'text' | 'binary') => {
    if (oid === this.vectorOid && format !== 'binary') return (value: string) => pgvector.fromSql(value)
    return (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format)
  }
}

class NodePostgresSession implements Session {
  constructor(
    readonly client: pg.PoolClient,
    private readonly types: pg.CustomTypesConfig,
  ) {}

  async query(text: string, params: readonly unknown[]): Promise<SessionResult> {
    // Type parsers per query: a pool the app lent keeps its own parsers for the app's queries.
    const result = await this.client.query({ text, values: params.length > 0 ? [...params] : undefined, types: this.types })
    // A multi-statement text returns one result per statement: the last one is the answer.
    const last = Array.isArray(result) ? (result[result.length - 1] as pg.QueryResult) : result
    return { rows: last.rows, rowCount: last.rowCount, command: last.command }
  }

  async copyFrom(text: string, source: CopySource): Promise<number> {
    const stream = this.client.query(copyFromStream(text))
    await pipeline(Readable.from(source, { objectMode: false }), stream)
    return stream.rowCount ?? 0
  }
}

/** True for a node-postgres `Pool` (or a compatible one): what an app that already has a pool passes. */
export function isPgPool(value: unknown): value is pg.Pool {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as pg.Pool).connect === 'function' &&
    typeof (value as pg.Pool).query === 'function' &&
    typeof (value as pg.Pool).end === 'function' &&
    'totalCount' in value
  )
}

/**
 * A {@link SessionPool} over node-postgres' `Pool`, COPY through pg-copy-streams. Given a URL or a
 * `pg.PoolConfig` (SSL, `max`, timeouts, ...) it creates the pool and `close()` ends it; given an
 * existing `pg.Pool` it borrows it: `close()` leaves the app's pool open.
 *
 * ### Examples
 * ```ts
 * const db = new Database(createNodePostgresPool('postgres://localhost/app'))
 * const shared = new Database(createNodePostgresPool(appPool)) // the app's pool, not a second one
 * ```
 */
export function createNodePostgresPool(source: string | pg.PoolConfig | pg.Pool, options: NodePostgresPoolOptions = {}): SessionPool {
  const parsers = new VectorTypeParsers()
  const types = { getTypeParser: parsers.getTypeParser } as pg.CustomTypesConfig
  const borrowed = isPgPool(source)
  let pool: pg.Pool
  if (borrowed) {
    pool = source
  } else {
    const config: pg.PoolConfig = typeof source === 'string' ? { connectionString: source } : { ...source }
    config.max ??= options.maxConnections ?? 10
    config.application_name ??= options.applicationName ?? 'pgscale'
    pool = new pg.Pool(config)
    // An idle client that dies (server restart) must not crash the process; the pool replaces it.
    pool.on('error', () => {})
  }
  const maxConnections = pool.options.max ?? 10
  const capabilities: Capabilities = {
    concurrentConnections: true,
    maxConnections,
    copy: 'stream',
    multiStatementResults: true,
    inProcess: false,
    ...(options.pooler === 'transaction' ? { transactionPooled: true } : {}),
  }
  const sessions = new WeakMap<pg.PoolClient, NodePostgresSession>()

  return {
    capabilities,
    async acquire() {
      const client = await pool.connect()
      if (parsers.vectorOid === undefined) {
        try {
          const { rows } = await client.query<{ oid: number }>(`select oid from pg_type where typname = 'vector'`)
          parsers.vectorOid = rows[0]?.oid
        } catch (err) {
          client.release(err as Error)
          throw err
        }
      }
      let session = sessions.get(client)
      if (!session) {
        session = new NodePostgresSession(client, types)
        sessions.set(client, session)
        // A connection that dies while checked out (the backend killed mid-COPY, a restart) emits
        // 'error' on the client; the statement in flight rejects with it, and the client is released
        // with it and dropped. Without a listener the event would crash the process.
        client.on('error', () => {})
      }
      return session
    },
    release(session, error) {
      ;(session as NodePostgresSession).client.release(error ? (error as Error) : undefined)
    },
    async close() {
      if (!borrowed) await pool.end()
    },
  }
}

/**
 * A {@link Session} on one node-postgres client the app holds (e.g. inside its own `BEGIN`):
 * pgvector types parsed per query, COPY streamed. The app keeps the client; nothing releases it.
 */
export function clientSession(client: pg.ClientBase): Session {
  const parsers = new VectorTypeParsers()
  const session = new NodePostgresSession(client as pg.PoolClient, { getTypeParser: parsers.getTypeParser } as pg.CustomTypesConfig)
  return {
    async query(text, params) {
      if (parsers.vectorOid === undefined) {
        const { rows } = await client.query<{ oid: number }>(`select oid from pg_type where typname = 'vector'`)
        parsers.vectorOid = rows[0]?.oid
      }
      return session.query(text, params)
    },
    copyFrom: (text, source) => session.copyFrom(text, source),
  }
}
