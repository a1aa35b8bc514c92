import { Kysely, type Transaction } from 'kysely'
import { InvalidArgumentError } from '../errors.js'
import { Database } from './database.js'
import { joinTransaction } from './joined-transaction.js'
import { createKyselySessionPool } from './pools/kysely-pool.js'
import { createNodePostgresPool, isPgPool } from './pools/node-postgres-pool.js'
import type pg from 'pg'

/**
 * What pgscale's entry points accept as a database: its own {@link Database}, the app's
 * `Kysely` (PostgreSQL dialect), or the app's node-postgres `Pool`. The app keeps one pool.
 */
export type DatabaseHandle = Database | Kysely<any> | pg.Pool

const adopted = new WeakMap<object, Database>()

/**
 * The plugin-free {@link Database} pgscale runs its statements on, over the app's own pool:
 * a `Database` as it is (without plugins), a `Kysely` through its connections (no COPY: bulk loads
 * use batched INSERTs), a Kysely `Transaction` inside it (savepoints; e.g. in a migration), a
 * `pg.Pool` directly (COPY streams). Closing the result never closes the
 * app's pool. The same handle always gives the same Database.
 *
 * ### Examples
 * ```ts
 * const db = adoptDatabase(new Kysely({ dialect: new PostgresDialect({ pool }) }))
 * ```
 */
export function adoptDatabase(handle: DatabaseHandle): Database {
  if (handle instanceof Database) return handle.withoutPlugins()
  if (handle === null || typeof handle !== 'object') {
    throw new InvalidArgumentError('expected a pgscale Database, a Kysely instance or a pg.Pool')
  }
  const known = adopted.get(handle)
  if (known) return known
  let db: Database
  if (handle instanceof Kysely || typeof (handle as unknown as Kysely<any>).getExecutor === 'function') {
    const kysely = handle as Kysely<any>
    // A transaction (a migration's, say): pgscale's work joins it, as savepoints. Not cached: it ends.
    if (kysely.isTransaction) return joinTransaction(kysely as Transaction<any>)
    db = new Database(createKyselySessionPool(kysely.withoutPlugins()))
  } else if (isPgPool(handle)) {
    db = new Database(createNodePostgresPool(handle))
  } else {
    throw new InvalidArgumentError('expected a pgscale Database, a Kysely instance or a pg.Pool')
  }
  adopted.set(handle, db)
  return db
}
