import { CompiledQuery, type Kysely, type QueryResult } from 'kysely'
import { Database, type TransactionConnection, type TransactionOptions } from '../database.js'
import { renderSetLocal, type LocalSettings } from '../local-settings.js'
import { inlineParameters, isInlineValue, type InlineValue } from '../../sql/literal.js'

/** Custom settings a scoped handle holds for every statement: `{ 'pgscale.tenant_id': 'acme' }`. */
export type ScopeSettings = Readonly<Record<string, string>>

const asLocal = (scope: ScopeSettings): LocalSettings => Object.fromEntries(Object.entries(scope).map(([k, v]) => [k, { text: v }]))

/**
 * `select set_config(…, true)` for each setting: how a statement in someone else's transaction
 * gets them; each setting's value before (`p0`, `p1`, …, read in a subquery first) comes back.
 */
function setConfigQuery(scope: ScopeSettings): CompiledQuery {
  const names = Object.keys(scope)
  const before = names.map((_, i) => `current_setting($${2 * i + 1}, true) as p${i}`).join(', ')
  const list = names.map((_, i) => `p${i}, set_config($${2 * i + 1}, $${2 * i + 2}, true)`).join(', ')
  return CompiledQuery.raw(
    `select ${list} from (select ${before}) as before`,
    names.flatMap((n) => [n, scope[n]!]),
  )
}

/** Runs `query` in the app's transaction with the scope's settings, then puts them back as they were ('' for none). */
async function inAppTransaction(plain: ReturnType<Kysely<any>['getExecutor']>, scope: ScopeSettings, query: CompiledQuery) {
  const { rows } = await plain.executeQuery<Record<string, string | null>>(setConfigQuery(scope))
  try {
    return await plain.executeQuery(query)
  } finally {
    const names = Object.keys(scope)
    const back = Object.fromEntries(names.map((n, i) => [n, rows[0]?.[`p${i}`] ?? '']))
    await plain.executeQuery(setConfigQuery(back)).catch(() => {}) // a failed statement aborted the transaction: it ends, settings with it
  }
}

/**
 * A handle whose every statement runs with `scope`'s settings, local to its transaction — the
 * key row-level security policies read (`current_setting('pgscale.tenant_id', true)`), so RLS
 * works behind transaction pooling and nothing carries over to the connection's next user:
 * pgscale's transactions get them as `SET LOCAL` in their opening message (one-message searches
 * in the message), a statement outside a transaction runs in one of its own with them, and a
 * statement inside the app's transaction is preceded by `set_config(…, true)` and followed by
 * the settings' old values (the app's later SQL there is not scoped by pgscale's). Everything else
 * is the handle's own.
 *
 * ### Examples
 * ```ts
 * const acmeDb = scopedHandle(db, { 'pgscale.tenant_id': 'acme' })
 * await sql`select * from rag_chunks`.execute(acmeDb) // RLS shows acme's rows only
 * ```
 */
export function scopedHandle<K extends Kysely<any>>(db: K, scope: ScopeSettings): K {
  const local = asLocal(scope)
  const run = (query: CompiledQuery): Promise<QueryResult<unknown>> => runScoped(db, scope, local, query)
  const executor = new Proxy(db.getExecutor(), {
    get(target, prop) {
      if (prop === 'executeQuery') return (query: CompiledQuery) => run(query)
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return new Proxy(db, {
    get(target, prop) {
      if (prop === 'getExecutor') return () => executor
      if (prop === 'executeQuery') return (query: CompiledQuery) => run(query)
      if (target instanceof Database) {
        const scoped = databaseMethod(target, prop, local)
        if (scoped) return scoped
      }
      if (prop === 'transaction' && !(target instanceof Database)) return () => scopedTransactionBuilder(target, scope)
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

async function runScoped(db: Kysely<any>, scope: ScopeSettings, local: LocalSettings, query: CompiledQuery): Promise<QueryResult<any>> {
  const plain = db.getExecutor()
  if (db.isTransaction) return inAppTransaction(plain, scope, query)
  if (db instanceof Database) {
    // One round trip where it can: the settings and the statement, values inlined by the proven-safe
    // renderer, as one message (one implicit transaction). On Citus the settings travel alone.
    if (db.sendsOneMessage && query.parameters.every(isInlineValue) && !(await db.hasCitus()))
      return (await db.sendAsOneMessage([renderSetLocal(local, false), inlineParameters(query.sql, query.parameters)]))!
    return db.withTransactionConnection((conn) => conn.executeQuery(query), { settings: local })
  }
  return db.transaction().execute(async (trx) => {
    await trx.executeQuery(setConfigQuery(scope))
    return trx.executeQuery(query)
  })
}

/** pgscale's transaction entry points with the scope's settings added. */
function databaseMethod(db: Database, prop: string | symbol, local: LocalSettings): unknown {
  const withScope = (options: TransactionOptions = {}): TransactionOptions => ({ ...options, settings: { ...options.settings, ...local } })
  switch (prop) {
    case 'withTransactionConnection':
      return <T>(fn: (conn: TransactionConnection) => Promise<T>, options?: TransactionOptions) =>
        db.withTransactionConnection(fn, withScope(options))
    case 'transaction':
      return (fn?: (trx: any) => Promise<unknown>, options?: TransactionOptions) =>
        fn === undefined ? scopedTransactionBuilder(db, fromLocal(local)) : db.transaction(fn, withScope(options))
    case 'queryWithSettings':
      return <R>(text: string, params: readonly InlineValue[], settings: LocalSettings) =>
        db.queryWithSettings<R>(text, params, { ...settings, ...local })
    // One message cannot carry a bound setting across Citus; the callers fall back to a transaction.
    case 'sendAsOneMessage':
      return async () => undefined
    case 'sendsOneMessage':
      return false
    default:
      return undefined
  }
}

function fromLocal(local: LocalSettings): ScopeSettings {
  return Object.fromEntries(Object.entries(local).map(([k, v]) => [k, (v as { text: string }).text]))
}

/** Kysely's `transaction()` builder whose transactions start with the scope's settings. */
function scopedTransactionBuilder(db: Kysely<any>, scope: ScopeSettings) {
  const builder = Reflect.get(db, 'transaction', db).call(db) as ReturnType<Kysely<any>['transaction']>
  return new Proxy(builder, {
    get(target, prop) {
      if (prop === 'execute')
        return <T>(fn: (trx: any) => Promise<T>) =>
          target.execute(async (trx) => {
            await trx.executeQuery(setConfigQuery(scope))
            return fn(trx)
          })
      const value = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
