import type { Transaction } from 'kysely'
import type pg from 'pg'
import { InvalidArgumentError } from '../errors.js'
import { Database } from './database.js'
import { KyselyConnectionSession } from './pools/kysely-pool.js'
import { clientSession } from './pools/node-postgres-pool.js'
import type { Session } from './pools/session.js'
import { singleSessionPool } from './pools/single-session-pool.js'

/** A transaction the app opened: a Kysely `Transaction`, or a node-postgres client on which it ran `BEGIN`. */
export type AppTransaction = Transaction<any> | pg.ClientBase

/**
 * A {@link Database} whose one session is the app's open transaction. pgscale's own transactions
 * become savepoints in it: a pgscale call that fails rolls back to its savepoint and the app's
 * transaction stays usable; what succeeds commits or rolls back with the app's transaction.
 *
 * ### Examples
 * ```ts
 * await appDb.transaction().execute(async (trx) => {
 *   const db = joinTransaction(trx) // what forTenant(id, { transaction: trx }) uses
 * })
 * ```
 */
export function joinTransaction(transaction: AppTransaction): Database {
  const session = sessionOf(transaction)
  const copy = typeof (transaction as pg.ClientBase).query === 'function' && !isKysely(transaction) ? 'stream' : 'none'
  // One session, one caller at a time: calls made at once on the same handle queue up.
  const pool = singleSessionPool(session, { concurrentConnections: false, maxConnections: 1, copy }, async () => {}, {
    joinsTransaction: true,
  })
  return new Database(pool)
}

function isKysely(value: unknown): value is Transaction<any> {
  return value !== null && typeof value === 'object' && typeof (value as Transaction<any>).getExecutor === 'function'
}

function sessionOf(transaction: AppTransaction): Session {
  if (isKysely(transaction)) {
    if (!transaction.isTransaction) {
      throw new InvalidArgumentError(
        'transaction: expected a Kysely Transaction (from db.transaction().execute(...)), got a Kysely instance',
      )
    }
    return new KyselyConnectionSession(transaction.withoutPlugins())
  }
  if (transaction !== null && typeof transaction === 'object' && typeof (transaction as pg.ClientBase).query === 'function') {
    return clientSession(transaction)
  }
  throw new InvalidArgumentError('transaction: expected a Kysely Transaction or a pg client inside BEGIN')
}
