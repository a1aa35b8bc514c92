import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SingleConnectionProvider,
  Transaction,
  CompiledQuery,
  sql,
  type KyselyConfig,
  type KyselyPlugin,
  type QueryResult,
  type TransactionBuilder,
} from 'kysely'
import { SessionConnection, SessionDriver } from './pools/driver.js'
import { renderSetLocal, settingsMessage, type LocalSettings } from './local-settings.js'
import { inlineParameters, type InlineValue } from '../sql/literal.js'
import type { Capabilities, CopySource, SessionPool } from './pools/session.js'

const COMMIT = CompiledQuery.raw('COMMIT')
let savepoints = 0
const ROLLBACK = CompiledQuery.raw('ROLLBACK')

/**
 * Rolls back whatever transaction a failed statement left open on `conn`; when that fails too
 * (the connection died), marks the connection broken so the pool discards it instead of reusing it.
 */
async function rollbackOrDiscard(conn: SessionConnection): Promise<void> {
  try {
    await conn.executeQuery(ROLLBACK)
  } catch (rollbackError) {
    conn.broken = rollbackError
  }
}

/** The `SET LOCAL`s that put `names` back to their values now (read in one statement). */
async function settingsNow(conn: SessionConnection, names: readonly string[]): Promise<string> {
  const { rows } = await conn.executeQuery<{ v: string | null }>(
    CompiledQuery.raw(`select current_setting(n, true) as v from unnest($1::text[]) with ordinality as t(n, i) order by i`, [names]),
  )
  // A setting that had no value: pgscale's own read as '' (no tenant); another (a library's, loaded
  // since) is left as the savepoint set it, since '' may not be a valid value of it.
  const back = names.flatMap((n, i) => {
    const v = rows[i]?.v ?? (n.startsWith('pgscale.') ? '' : null)
    return v === null ? [] : [[n, { text: v }] as const]
  })
  return renderSetLocal(Object.fromEntries(back), false)
}

/** The raw connection of a transaction: statements as compiled queries, and COPY. */
export type TransactionConnection = SessionConnection

/** Options of {@link Database.transaction} when given a callback. */
export interface TransactionOptions {
  /** Applied with `SET LOCAL` right after `BEGIN`, in the same round trip; validated, never user text. */
  settings?: LocalSettings
  /**
   * Trusted, parameterless statements run after the settings in the same round trip (pgscale uses
   * it for advisory locks whose keys it computed). Never put user text here.
   */
  prelude?: readonly string[]
  /**
   * The callback only reads. Inside a transaction the app opened (see `forTenant(id, { transaction })`),
   * pgscale's transaction is a savepoint; a read-only one is rolled back to, which also undoes its
   * `SET LOCAL` settings, so they never leak into the rest of the app's transaction.
   */
  readOnly?: boolean
}

/** A Kysely transaction that can also `COPY ... FROM STDIN` on its connection. */
export type DatabaseTransaction<DB = any> = Transaction<DB> & {
  /** Streams `source` into `COPY ... FROM STDIN` inside this transaction; resolves to the rows copied. */
  copyFrom(copySql: string, source: CopySource): Promise<number>
}

/** Options of the {@link Database} constructor. */
export interface DatabaseConfig {
  /** Kysely plugins, e.g. `CamelCasePlugin`. */
  plugins?: KyselyPlugin[]
  /** Kysely's logger (`['query', 'error']` or a function). */
  log?: KyselyConfig['log']
}

/**
 * The one database handle pgscale uses: a Kysely instance (PostgreSQL dialect, pgvector types
 * parsed) plus what Kysely lacks: `COPY FROM STDIN`, transactions with `SET LOCAL` settings,
 * and `capabilities`. Get one from {@link connect} or {@link provision}.
 *
 * ### Examples
 * ```ts
 * const db = await connect(process.env.DATABASE_URL!)
 * const { rows } = await sql`select 1 as one`.execute(db)
 * await db.transaction(async (trx) => {
 *   await sql`select ...`.execute(trx)
 * }, { settings: { 'hnsw.ef_search': 100 } })
 * await db.close()
 * ```
 */
export class Database<DB = any> extends Kysely<DB> {
  /** What this handle can do (concurrency, COPY streaming). */
  readonly capabilities: Capabilities
  readonly #driver: SessionDriver
  readonly #config: KyselyConfig
  readonly #pool: SessionPool
  #plain: Database<DB> | undefined
  #citus: Promise<boolean> | undefined
  #closed: Promise<void> | undefined

  constructor(pool: SessionPool, config: DatabaseConfig = {}) {
    const driver = new SessionDriver(pool)
    const kyselyConfig: KyselyConfig = {
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => driver,
        createIntrospector: (db) => new PostgresIntrospector(db),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
      plugins: config.plugins,
      log: config.log,
    }
    super(kyselyConfig)
    this.capabilities = pool.capabilities
    this.#driver = driver
    this.#config = kyselyConfig
    this.#pool = pool
  }

  /**
   * This handle without plugins, on the same pool (this handle itself when it has none). pgscale
   * runs its own statements through it, so an app's `CamelCasePlugin` never changes what pgscale
   * reads or returns. Closing it closes the shared pool: close the original instead.
   *
   * ### Examples
   * ```ts
   * const plain = db.withoutPlugins()
   * ```
   */
  override withoutPlugins(): Database<DB> {
    if (!this.#config.plugins?.length) return this
    this.#plain ??= new Database<DB>(this.#pool, { log: this.#config.log })
    return this.#plain
  }

  /**
   * Streams `source` into `COPY ... FROM STDIN` on one pooled connection (its own implicit
   * transaction); resolves to the rows copied. On failure the COPY is aborted, nothing is kept.
   *
   * ### Examples
   * ```ts
   * await db.copyFrom('COPY items (id, name) FROM STDIN', [Buffer.from('1\ta\n2\tb\n')])
   * ```
   */
  copyFrom(copySql: string, source: CopySource): Promise<number> {
    return this.getExecutor().provideConnection((connection) => (connection as SessionConnection).copyFrom(copySql, source))
  }

  /** Kysely's transaction builder: `db.transaction().execute(fn)`. */
  override transaction(): TransactionBuilder<DB>
  /**
   * Runs `fn` in a transaction on one connection, with `options.settings` applied by `SET LOCAL`
   * in the same round trip as `BEGIN`; commits when `fn` resolves, rolls back when it throws.
   *
   * ### Examples
   * ```ts
   * const rows = await db.transaction(
   *   (trx) => sql`select ...`.execute(trx),
   *   { settings: { 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' } },
   * )
   * ```
   */
  override transaction<T>(fn: (trx: DatabaseTransaction<DB>) => Promise<T>, options?: TransactionOptions): Promise<T>
  override transaction<T>(
    fn?: (trx: DatabaseTransaction<DB>) => Promise<T>,
    options?: TransactionOptions,
  ): TransactionBuilder<DB> | Promise<T> {
    if (fn === undefined) return super.transaction()
    return this.#runTransaction(fn, options ?? {})
  }

  async #runTransaction<T>(fn: (trx: DatabaseTransaction<DB>) => Promise<T>, options: TransactionOptions): Promise<T> {
    return this.withTransactionConnection((conn) => {
      const trx = new Transaction<DB>({
        config: this.#config,
        dialect: this.#config.dialect,
        driver: this.#driver,
        executor: this.getExecutor().withConnectionProvider(new SingleConnectionProvider(conn)),
      }) as DatabaseTransaction<DB>
      trx.copyFrom = (copySql, source) => conn.copyFrom(copySql, source)
      return fn(trx)
    }, options)
  }

  /**
   * Low level: like {@link transaction} with a callback, but hands `fn` the transaction's raw
   * connection (`executeQuery(CompiledQuery)`, `copyFrom`) instead of a Kysely object, skipping
   * the query builder. pgscale's hot paths (search) use it; most code wants `transaction`.
   *
   * ### Examples
   * ```ts
   * const { rows } = await db.withTransactionConnection(
   *   (conn) => conn.executeQuery(CompiledQuery.raw('select $1::int as n', [1])),
   *   { settings: { 'hnsw.ef_search': 100 } },
   * )
   * ```
   */
  async withTransactionConnection<T>(fn: (conn: TransactionConnection) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const settings = options.settings ?? {}
    const citus = Object.keys(settings).length > 0 ? await this.hasCitus() : false
    // Citus 13 forwards a propagated SET LOCAL to the workers as the whole message it came in, so
    // there the settings travel alone: a BEGIN or a prelude beside them (an advisory lock) ran again
    // on every worker connection — a shard DDL's parallel connections then waited on each other.
    const opening = (first: string): CompiledQuery[] =>
      citus
        ? [first, renderSetLocal(settings, true), (options.prelude ?? []).join('; ')].filter(Boolean).map((m) => CompiledQuery.raw(m))
        : [CompiledQuery.raw([first, renderSetLocal(settings, false), ...(options.prelude ?? [])].filter(Boolean).join('; '))]
    if (this.#pool.joinsTransaction) return this.#withSavepoint(fn, opening, options.readOnly === true, Object.keys(settings))
    const begin = opening('BEGIN')
    const conn = await this.#driver.acquireConnection()
    try {
      // BEGIN and its settings travel in one message (on Citus, one after another): if any of it fails (a bad setting, a lock
      // timeout in the prelude, a cancel), the transaction block is open and aborted, so it is
      // rolled back like any other failure before the connection goes back to the pool.
      for (const message of begin) await conn.executeQuery(message)
      const result = await fn(conn)
      await conn.executeQuery(COMMIT)
      return result
    } catch (err) {
      await rollbackOrDiscard(conn)
      throw err
    } finally {
      await this.#driver.releaseConnection(conn)
    }
  }

  /**
   * Runs one read statement under `SET LOCAL` settings in **one round trip** where the session
   * allows it: `SET LOCAL …; <statement>` as one simple-protocol message, which PostgreSQL runs as
   * one implicit transaction (the settings end with it; a failure rolls all of it back and leaves
   * the connection idle). The simple protocol takes no bound parameters, so `params` are inlined
   * as constants by `inlineParameters` (dollar-quoted text, finite numbers). Inside an app's
   * transaction, or on a handle whose session cannot return a multi-statement result (an app's
   * Kysely), it falls back to {@link withTransactionConnection} with the parameters bound.
   *
   * ### Examples
   * ```ts
   * const rows = await db.queryWithSettings('select * from chunks where tenant_id = $1 order by embedding <=> $2 limit $3',
   *   ['acme', '[1,0,0]', 10], { 'hnsw.ef_search': 100 })
   * ```
   */
  async queryWithSettings<R>(text: string, params: readonly InlineValue[], settings: LocalSettings): Promise<R[]> {
    // On Citus (13.0) a query in the same message as propagated SET LOCALs failed on the workers
    // ("cannot execute a distributed query from a query on a shard"); the settings then go first,
    // the query after, in one transaction.
    const citus = Object.keys(settings).length > 0 && (await this.hasCitus())
    if (!this.sendsOneMessage || citus) {
      return this.withTransactionConnection(async (conn) => (await conn.executeQuery<R>(CompiledQuery.raw(text, [...params]))).rows, {
        // On Citus the settings' own message makes the transaction read-only, as the one message does.
        settings: citus ? { transaction_read_only: 'on', ...settings } : settings,
        readOnly: true,
      })
    }
    // Read-only like the fallback's savepoint: the message can change nothing, whatever it holds.
    const message = settingsMessage(settings, citus, inlineParameters(text, params))
    const conn = await this.#driver.acquireConnection()
    try {
      return (await conn.executeQuery<R>(CompiledQuery.raw(message))).rows
    } finally {
      await this.#driver.releaseConnection(conn)
    }
  }

  /** Whether this handle's statements run inside a transaction the app opened (and commits): `forTenant(id, { transaction })`. */
  get joinsAppTransaction(): boolean {
    return this.#pool.joinsTransaction === true
  }

  /**
   * Whether several statements can travel as one message here and return the last one's rows: not
   * inside an app's transaction, nor on an app's Kysely. Ask before building inlined text.
   */
  get sendsOneMessage(): boolean {
    return !this.#pool.joinsTransaction && this.capabilities.multiStatementResults === true
  }

  /**
   * Sends trusted, placeholder-free statements as **one** simple-protocol message, which PostgreSQL
   * runs as one implicit transaction: all commit together or none does, and locks taken by an early
   * statement (`pg_advisory_xact_lock`) are held until the last one ends. Resolves to the last
   * statement's result, or to undefined, having sent nothing, where that is not possible (inside an
   * app's transaction, or on an app's Kysely); the caller then runs its statements in a transaction
   * of its own.
   *
   * ### Examples
   * ```ts
   * const result = await db.sendAsOneMessage(['select pg_advisory_xact_lock(1, 2)', 'delete from t where id = 1'])
   * if (result === undefined) { ... } else console.log(result.numAffectedRows)
   * ```
   */
  async sendAsOneMessage<R>(statements: readonly string[]): Promise<QueryResult<R> | undefined> {
    if (!this.sendsOneMessage) return undefined
    return this.executeQuery<R>(CompiledQuery.raw(statements.join('; ')))
  }

  /**
   * pgscale's transaction nested in the app's as a savepoint (see {@link TransactionOptions.readOnly}).
   * A savepoint that is released keeps its `SET LOCAL`s to the end of the app's transaction, so
   * the settings it made (`settings`: their names) are put back as they were before it: the app's
   * later SQL in that transaction runs as if pgscale had not been there (a setting that was not
   * set reads as `''` afterwards: `current_setting(name, true)` cannot be made NULL again; a
   * library's setting that did not exist before the savepoint keeps the savepoint's value).
   */
  async #withSavepoint<T>(
    fn: (conn: TransactionConnection) => Promise<T>,
    opening: (first: string) => CompiledQuery[],
    readOnly: boolean,
    settings: readonly string[],
  ): Promise<T> {
    const name = `pgscale_${++savepoints}`
    const undo = CompiledQuery.raw(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`)
    const conn = await this.#driver.acquireConnection()
    try {
      const restore = readOnly || settings.length === 0 ? undefined : await settingsNow(conn, settings)
      for (const message of opening(`SAVEPOINT ${name}`)) await conn.executeQuery(message)
      const result = await fn(conn)
      await conn.executeQuery(readOnly ? undo : CompiledQuery.raw([`RELEASE SAVEPOINT ${name}`, restore].filter(Boolean).join('; ')))
      return result
    } catch (err) {
      await conn.executeQuery(undo).catch(() => {})
      throw err
    } finally {
      await this.#driver.releaseConnection(conn)
    }
  }

  /** Whether the Citus extension is installed (checked once, then cached). */
  hasCitus(): Promise<boolean> {
    this.#citus ??= hasCitusExtension(this).catch((err: unknown) => {
      this.#citus = undefined
      throw err
    })
    return this.#citus
  }

  /** Closes every connection (PGlite: closes the instance). Calling it again is a no-op. */
  close(): Promise<void> {
    this.#closed ??= this.destroy()
    return this.#closed
  }
}

/**
 * Whether the Citus extension is installed in the database behind `db` (any Kysely handle; a
 * {@link Database} caches it in `hasCitus()`).
 *
 * ### Examples
 * ```ts
 * if (await hasCitusExtension(appKysely)) await rollup.distribute(appKysely)
 * ```
 */
export async function hasCitusExtension(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{ citus: boolean }>`select exists (select 1 from pg_extension where extname = 'citus') as citus`.execute(db)
  return rows[0]?.citus === true
}

/**
 * Whether `db` is a Citus cluster ready for distributed tables: the extension is installed and its
 * metadata has an active primary node that holds shards (a worker, or a coordinator set to hold them).
 *
 * ### Examples
 * ```ts
 * if (await hasCitusShardNodes(db)) await sql`select create_distributed_table('expenses', 'tenant_id')`.execute(db)
 * ```
 */
export async function hasCitusShardNodes(db: Kysely<any>): Promise<boolean> {
  if (!(await hasCitusExtension(db))) return false
  const { rows } = await sql<{ yes: boolean }>`
    select exists (select 1 from pg_dist_node where isactive and shouldhaveshards and noderole = 'primary') as yes`.execute(db)
  return rows[0]?.yes === true
}
