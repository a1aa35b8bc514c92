import type { Migration } from 'kysely'
import * as vectorExtension from './0001-vector-extension.js'
import * as ragChunks from './0002-rag-chunks.js'
import * as expensesMonthly from './0003-expenses-monthly.js'

/**
 * Kysely migrations an app runs with its own `Migrator`, written against pgscale's public API:
 * the vector extension, a store table, a rollup table. Copy them into your app's migrations folder
 * (importing from 'pgscale') and change names and shapes to yours.
 *
 * ```ts
 * const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } })
 * await migrator.migrateToLatest()
 * ```
 */
export const migrations: Record<string, Migration> = {
  '0001-vector-extension': vectorExtension,
  '0002-rag-chunks': ragChunks,
  '0003-expenses-monthly': expensesMonthly,
}
