import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import { from as copyFromStream } from 'pg-copy-streams'
import pgvector from 'pgvector'
import type { Capabilities, CopySource, Session, SessionPool, SessionResult } from './session.js'

/** Options of a node-postgres session pool. */
export interface NodePostgresPoolOptions {
  /** Most connections open at once. Default 10. */
  maxConnections?: number
  /** `application_name` reported to the server. Default `pgscale`. */
  applicationName?: string
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
  constructor(readonly client: pg.PoolClient) {}

  async query(text: string, params: readonly unknown[]): Promise<SessionResult> {
    const result = await this.client.query(text, params.length > 0 ? [...params] : undefined)
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

/**
 * A {@link SessionPool} over node-postgres' `Pool`, COPY through pg-copy-streams.
 *
 * ### Examples
 * ```ts
 * const db = new Database(createNodePostgresPool('postgres://localhost/app'))
 * ```
 */
export function createNodePostgresPool(url: string, options: NodePostgresPoolOptions = {}): SessionPool {
  const parsers = new VectorTypeParsers()
  const maxConnections = options.maxConnections ?? 10
  const pool = new pg.Pool({
    connectionString: url,
    max: maxConnections,
    application_name: options.applicationName ?? 'pgscale',
    types: { getTypeParser: parsers.getTypeParser } as pg.CustomTypesConfig,
  })
  // An idle client that dies (server restart) must not crash the process; the pool replaces it.
  pool.on('error', () => {})
  const capabilities: Capabilities = { concurrentConnections: true, maxConnections, copy: 'stream' }
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
        session = new NodePostgresSession(client)
        sessions.set(client, session)
      }
      return session
    },
    release(session, error) {
      ;(session as NodePostgresSession).client.release(error ? (error as Error) : undefined)
    },
    async close() {
      await pool.end()
    },
  }
}
