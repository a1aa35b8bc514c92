import { sql } from 'kysely'
import type { Database } from '../../../src/index.js'

/**
 * Drops every table whose name starts with `prefix` (the bench's store and its spaces' sibling
 * tables, `<table>__<space>`) and the stores' records, so a migration bench leaves nothing behind.
 *
 * ### Examples
 * ```ts
 * await dropBenchTables(db, 'rag_migrate')
 * ```
 */
export async function dropBenchTables(db: Database, prefix: string): Promise<void> {
  const { rows } = await sql<{
    name: string
  }>`select relname as name from pg_class where relkind in ('r', 'p') and relname like ${`${prefix}%`}`.execute(db)
  if (rows.length) await sql.raw(`drop table if exists ${rows.map((r) => `"${r.name}"`).join(', ')} cascade`).execute(db)
  await sql`delete from pgscale_object_version where object like ${`store:%${prefix}%`}`.execute(db).catch(() => {})
}

/** Waits `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
