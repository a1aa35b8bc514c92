import { ConnectionError, DatabaseNotConfiguredError, InvalidArgumentError, PgScaleError } from '../errors.js'
import { sql } from 'kysely'
import { Database, type DatabaseConfig } from './database.js'
import { createNodePostgresPool, isPgPool } from './pools/node-postgres-pool.js'
import type pg from 'pg'
import { createPglitePool, type PgliteLike } from './pools/pglite-pool.js'
import { ensureVectorExtension } from './server-info.js'

/** Options of {@link connect}. */
export interface ConnectOptions extends DatabaseConfig {
  /** Most connections open at once (a URL or a config without `max`). Default 10. */
  maxConnections?: number
  /** `application_name` reported to the server. Default `pgscale`. */
  applicationName?: string
  /**
   * Check that pgvector >= 0.8 is installed (creating the extension if the role may), and fail
   * with {@link ExtensionMissingError} saying how to install it otherwise. Default true.
   */
  requireVector?: boolean
  /**
   * `'transaction'` when `source` is a pooler in transaction mode (PgBouncer `pool_mode =
   * transaction`, RDS Proxy, Supavisor's transaction port): pgscale then sets nothing for a
   * session and holds no lock across statements of a session (docs/database.md, "Poolers").
   */
  pooler?: 'transaction'
}

/**
 * Connects to a PostgreSQL server and returns a {@link Database}. `source` is a URL, a
 * node-postgres `PoolConfig` (SSL, `max`, `connectionTimeoutMillis`, `idleTimeoutMillis`,
 * `statement_timeout`, ...), or the app's own `pg.Pool`, which is borrowed: `db.close()` leaves it open.
 * `undefined` (an unset `process.env.DATABASE_URL`) is a {@link DatabaseNotConfiguredError}.
 *
 * ### Examples
 * ```ts
 * const app = await connect(process.env.DATABASE_URL)
 * const db = await connect('postgres://app@localhost:5432/app')
 * const tls = await connect({ connectionString: url, ssl: { rejectUnauthorized: true }, max: 20, connectionTimeoutMillis: 5000 })
 * const shared = await connect(appPool)
 * await db.close()
 * ```
 */
export async function connect(source: string | pg.PoolConfig | pg.Pool | undefined, options: ConnectOptions = {}): Promise<Database> {
  if (source === undefined) {
    throw new DatabaseNotConfiguredError('connect() was given no URL: set DATABASE_URL (postgres://user:password@host:5432/db)')
  }
  const where = describeSource(source)
  const db = new Database(createNodePostgresPool(source, options), options)
  try {
    return await prepare(db, options)
  } catch (err) {
    if (err instanceof PgScaleError && err.code !== 'DATABASE_ERROR') throw err
    const reason = err instanceof Error ? ((err as { code?: string }).code ?? err.message) : String(err)
    throw new ConnectionError(`could not connect to ${where}: ${reason}`, { cause: err })
  }
}

/** Checks what {@link connect} was given and names it for messages (password hidden). */
function describeSource(source: unknown): string {
  if (typeof source === 'string') {
    if (!/^postgres(ql)?:\/\//.test(source))
      throw new InvalidArgumentError(`expected a postgres:// URL, got ${JSON.stringify(redactUrl(source))}`)
    return redactUrl(source)
  }
  if (isPgPool(source)) return 'the given pg.Pool'
  if (source !== null && typeof source === 'object' && !Array.isArray(source)) {
    const config = source as pg.PoolConfig
    if (config.connectionString !== undefined) return describeSource(config.connectionString)
    return `${config.host ?? 'the default host'}${config.port ? `:${config.port}` : ''}`
  }
  throw new InvalidArgumentError(
    `expected a postgres:// URL, a pg.PoolConfig or a pg.Pool, got ${source === null ? 'null' : typeof source}`,
  )
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
export async function connectPglite(
  pglite: PgliteLike,
  options: Omit<ConnectOptions, 'maxConnections' | 'applicationName'> = {},
): Promise<Database> {
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
