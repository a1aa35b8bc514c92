import { sql, type Kysely } from 'kysely'

/** pgvector, which every pgscale table needs. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create extension if not exists vector`.execute(db)
}

/** The extension is left in place: the application's own tables may use it. */
export async function down(): Promise<void> {}
