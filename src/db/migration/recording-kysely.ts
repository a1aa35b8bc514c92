import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
} from 'kysely'
import { InvalidArgumentError } from '../../errors.js'
import { inlineParameters, isInlineValue } from '../../sql/literal.js'

/** A connection that answers nothing and keeps the text of every statement, values inlined. */
class RecordingConnection implements DatabaseConnection {
  constructor(readonly statements: string[]) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const values = compiled.parameters
    if (!values.every(isInlineValue))
      throw new InvalidArgumentError(`a statement to print has a value that cannot be rendered as SQL text: ${compiled.sql}`)
    this.statements.push(values.length ? inlineParameters(compiled.sql, values) : compiled.sql)
    return { rows: [] }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new InvalidArgumentError('a recording connection does not stream')
  }
}

class RecordingDriver implements Driver {
  constructor(readonly connection: RecordingConnection) {}
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection
  }
  async beginTransaction(): Promise<void> {}
  async commitTransaction(): Promise<void> {}
  async rollbackTransaction(): Promise<void> {}
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

/**
 * Runs `work` against a Kysely that sends nothing anywhere and returns every statement it was given,
 * as SQL text with its values inlined (strings dollar-quoted and numbers by the renderer
 * src/sql/literal.ts proves safe): how a migration written as code is printed as plain SQL.
 * Reads get no rows, so `work` must be DDL that does not branch on what it reads, or treat "no
 * rows" as "not there yet".
 *
 * ### Examples
 * ```ts
 * const text = await recordStatements(async (db) => { await sql`create table if not exists t (x int)`.execute(db) })
 * ```
 */
export async function recordStatements(work: (db: Kysely<any>) => Promise<void>): Promise<string[]> {
  const statements: string[] = []
  const connection = new RecordingConnection(statements)
  const db = new Kysely<any>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new RecordingDriver(connection),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  })
  await work(db)
  await db.destroy()
  return statements
}
