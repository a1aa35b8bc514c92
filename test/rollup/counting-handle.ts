import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Driver,
} from 'kysely'

/**
 * An app's Kysely over one of the test's handles that counts every statement it sends: what "0
 * statements sent" is read from, on every provider (PGlite included). Each connection it hands out
 * holds one connection of `db` for as long as Kysely holds it, so transactions stay on it.
 *
 * ### Examples
 * ```ts
 * const counted = countingHandle(t.db)
 * counted.reset(); await rollup.read(counted.handle, bad).catch(() => {}); expect(counted.statements).toBe(0)
 * ```
 */
export function countingHandle(db: Kysely<any>): { handle: Kysely<any>; readonly statements: number; reset(): void } {
  let statements = 0
  const released = new WeakMap<DatabaseConnection, () => void>()
  const driver: Driver = {
    async init() {},
    async acquireConnection() {
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      const inner = await new Promise<Kysely<any>>((resolve, reject) => {
        db.connection()
          .execute((conn) => {
            resolve(conn)
            return held
          })
          .catch(reject)
      })
      const connection: DatabaseConnection = {
        executeQuery: <R>(query: CompiledQuery) => {
          statements++
          return inner.executeQuery<R>(query)
        },
        streamQuery: () => {
          throw new Error('countingHandle does not stream')
        },
      }
      released.set(connection, release)
      return connection
    },
    async beginTransaction(conn) {
      await conn.executeQuery(CompiledQuery.raw('begin'))
    },
    async commitTransaction(conn) {
      await conn.executeQuery(CompiledQuery.raw('commit'))
    },
    async rollbackTransaction(conn) {
      await conn.executeQuery(CompiledQuery.raw('rollback'))
    },
    async releaseConnection(conn) {
      released.get(conn)?.()
    },
    async destroy() {},
  }
  const handle = new Kysely<any>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  })
  return {
    handle,
    get statements() {
      return statements
    },
    reset() {
      statements = 0
    },
  }
}
