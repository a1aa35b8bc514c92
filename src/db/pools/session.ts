/**
 * The minimal structural interfaces between pgscale's Kysely driver and a PostgreSQL client
 * (node-postgres or PGlite). Nothing else in pgscale touches a driver's own types.
 */

/** Bytes fed to `COPY ... FROM STDIN`, streamed chunk by chunk. */
export type CopySource = AsyncIterable<Uint8Array> | Iterable<Uint8Array>

/** What one statement returned. */
export interface SessionResult {
  rows: Record<string, unknown>[]
  /** Rows affected by INSERT/UPDATE/DELETE/MERGE/COPY. */
  rowCount?: number | null
  /** The command tag: `INSERT`, `COMMIT`, `ROLLBACK`, ... (when the client reports it). */
  command?: string
}

/** One server session: a pooled pg client or PGlite's single connection. */
export interface Session {
  /** Runs one statement; `params` go as bound parameters. A parameterless text may hold several statements. */
  query(sql: string, params: readonly unknown[]): Promise<SessionResult>
  /** Runs `COPY ... FROM STDIN` feeding it `source`; resolves to the number of rows copied. */
  copyFrom(sql: string, source: CopySource): Promise<number>
}

/** What a database handle can do; ask it instead of sniffing the driver. */
export interface Capabilities {
  /** More than one connection can run statements at the same time (false on PGlite). */
  concurrentConnections: boolean
  /** The most connections the handle opens at once. */
  maxConnections: number
  /**
   * `COPY FROM STDIN` streams with constant memory (`stream`), is buffered per call (`buffered`,
   * PGlite), or is not available (`none`: an app's Kysely, whose driver hides its client; bulk
   * loads then use batched `INSERT`s).
   */
  copy: 'stream' | 'buffered' | 'none'
  /**
   * A parameterless text of several statements returns the last statement's rows (node-postgres,
   * PGlite). Then `SET LOCAL …; SELECT …` travels in one message (see `Database.queryWithSettings`);
   * without it (an app's Kysely), the settings take their own round trips.
   */
  multiStatementResults?: boolean
  /**
   * The largest `maintenance_work_mem` (MB) an index build may use here. PGlite 0.4 never gives
   * back a dynamic shared memory segment of 64 MB or more, and pgvector's HNSW build allocates its
   * graph in one: at PGlite's default of 64MB each build kept 61 MB of RSS (20 tenant indexes:
   * 0.7 → 2.0 GB), at 63MB and below none did. Builds there run with at most this.
   */
  maxBuildMemoryMb?: number
  /** The server runs inside this process (PGlite): its plans are recorded apart from a native server's of the same major. */
  inProcess?: boolean
  /**
   * The connections go through a pooler in transaction mode (PgBouncer's `pool_mode = transaction`):
   * a statement outside a transaction may run on any server connection, so pgscale sets nothing
   * for a session (an index build's `maintenance_work_mem` outside a transaction is left to the
   * server) and its locks never depend on a session. Declared by the app (`connect(url, { pooler:
   * 'transaction' })`); pgscale cannot see a pooler.
   */
  transactionPooled?: boolean
}

/** Hands out sessions; the driver releases each one when done, with the error that broke it, if any. */
export interface SessionPool {
  readonly capabilities: Capabilities
  /**
   * Set when every session of this pool is inside a transaction the app opened: pgscale then
   * nests its transactions as savepoints instead of `BEGIN`/`COMMIT`.
   */
  readonly joinsTransaction?: boolean
  acquire(): Promise<Session>
  release(session: Session, error?: unknown): void
  close(): Promise<void>
}
