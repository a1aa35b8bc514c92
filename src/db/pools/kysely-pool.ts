import { CompiledQuery, type Kysely, type QueryResult } from 'kysely'
import { ConnectionError } from '../../errors.js'
import type { Capabilities, Session, SessionPool, SessionResult } from './session.js'

const AFFECTING = /^\s*(insert|update|delete|merge|with)\b/i

/**
 * One of the app's Kysely connections (or its transaction) as a {@link Session}. Statements go to the connection
 * directly, never through the app's plugins, so a `CamelCasePlugin` changes nothing pgscale
 * reads or returns. Kysely hides the driver's client, so there is no COPY here.
 */
export class KyselyConnectionSession implements Session {
  constructor(private readonly connection: { executeQuery(query: CompiledQuery): Promise<QueryResult<unknown>> }) {}

  async query(text: string, params: readonly unknown[]): Promise<SessionResult> {
    const result = (await this.connection.executeQuery(CompiledQuery.raw(text, [...params]))) as QueryResult<Record<string, unknown>>
    const command = /^\s*([a-z]+)/i.exec(text)?.[1]?.toUpperCase()
    const affected = result.numAffectedRows ?? (AFFECTING.test(text) ? BigInt(result.rows.length) : undefined)
    return { rows: result.rows, rowCount: affected === undefined ? undefined : Number(affected), command }
  }

  async copyFrom(): Promise<number> {
    throw new ConnectionError('COPY is not available through a Kysely instance (its driver hides the client); pass a pg.Pool for COPY')
  }
}

/**
 * A {@link SessionPool} over an app's Kysely instance (PostgreSQL dialect): each session holds one
 * of the app's pooled connections until pgscale releases it, so the app runs one pool, not two.
 * `close()` leaves the app's Kysely open.
 *
 * ### Examples
 * ```ts
 * const db = new Database(createKyselySessionPool(appDb))
 * ```
 */
export function createKyselySessionPool(kysely: Kysely<any>, maxConnections = 10): SessionPool {
  const capabilities: Capabilities = {
    concurrentConnections: true,
    maxConnections,
    copy: 'none',
    multiStatementResults: false,
    inProcess: false,
  }
  const releases = new WeakMap<Session, () => void>()
  return {
    capabilities,
    acquire() {
      return new Promise<Session>((resolve, reject) => {
        let release!: () => void
        const released = new Promise<void>((done) => (release = done))
        kysely
          .getExecutor()
          .provideConnection(async (connection) => {
            const session = new KyselyConnectionSession(connection)
            releases.set(session, release)
            resolve(session)
            await released
          })
          .catch(reject)
      })
    },
    release(session) {
      releases.get(session)?.()
      releases.delete(session)
    },
    async close() {},
  }
}
