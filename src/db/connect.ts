import { ConnectionError, InvalidArgumentError, PgScaleError } from '../errors.js'
import { sql } from 'kysely'
import { Database, type DatabaseConfig } from './database.js'
import { createNodePostgresPool } from './node-postgres-pool.js'
import { createPglitePool, type PgliteLike } from './pglite-pool.js'
import { ensureVectorExtension } from './server-info.js'

/** Options of {@link connect}. */
export interface ConnectOptions extends DatabaseConfig {
  /** Most connections open at once. Default 10. */
  maxConnections?: number
  /** `application_name` reported to the server. Default `pgscale`. */
  applicationName?: string
  /**
   * Check that pgvector >= 0.8 is installed (creating the extension if the role may), and fail
   * with {@link ExtensionMissingError} saying how to install it otherwise. Default true.
   */
  requireVector?: boolean
}

/**
 * Connects to a PostgreSQL server by URL and returns a {@link Database}.
 *
 * ### Examples
 * ```ts
 * const db = await connect('postgres://app@localhost:5432/app')
 * await db.close()
 * ```
 */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Database> {
  if (typeof url !== 'string' || !/^postgres(ql)?:\/\//.test(url)) {
    throw new InvalidArgumentError(`expected a postgres:// URL, got ${JSON.stringify(redactUrl(String(url)))}`)
  }
  const db = new Database(createNodePostgresPool(url, options), options)
  try {
    return await prepare(db, options)
  } catch (err) {
    if (err instanceof PgScaleError && err.code !== 'DATABASE_ERROR') throw err
    const reason = err instanceof Error ? ((err as { code?: string }).code ?? err.message) : String(err)
    throw new ConnectionError(`could not connect to ${redactUrl(url)}: ${reason}`, { cause: err })
  }
}

/**
 * Wraps an existing PGlite instance (loaded with `@electric-sql/pglite/vector`) as a {@link Database}.
 * Closing the Database closes the instance.
 *
 * ### Examples
 * ```ts
 * import { PGlite } from '@electric-sql/pglite'
 * import { vector } from '@electric-sql/pglite/vector'
 * const db = await connectPglite(await PGlite.create({ extensions: { vector } }))
 * ```
 */
export async function connectPglite(pglite: PgliteLike, options: Omit<ConnectOptions, 'maxConnections' | 'applicationName'> = {}): Promise<Database> {
  return prepare(new Database(createPglitePool(pglite), options), options)
}

async function prepare(db: Database, options: { requireVector?: boolean }): Promise<Database> {
  try {
    if (options.requireVector === false) await sql`select 1`.execute(db)
    else await ensureVectorExtension(db)
    return db
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}

/** Hides the password of a connection URL for messages and reports. */
export function redactUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@/]*@/, '$1***@')
}
