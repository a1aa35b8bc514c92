import { sql, type Kysely, type Migration } from 'kysely'

/**
 * pgvector, which every pgscale table needs; `down` leaves it in place (the application's own
 * tables may use it). pgscale's `migrate()` runs it as `0001-vector-extension`.
 *
 * ### Examples
 * ```ts
 * const migrator = new Migrator({ db, provider: { getMigrations: async () => ({ '0001-vector': vectorExtensionMigration }) } })
 * ```
 */
export const vectorExtensionMigration: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create extension if not exists vector`.execute(db)
  },
  async down(): Promise<void> {},
}
