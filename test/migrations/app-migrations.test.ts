import { Migrator, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { PgVectorStore } from '../../src/index.js'
import { migrations } from '../../migrations/index.js'
import { useTestDatabase } from '../support/test-database.js'

/** The migrations/ folder is what an app runs with its own Kysely Migrator. */
const t = useTestDatabase()

describe("migrations/ with an app's Migrator", () => {
  it('creates the extension, the store table and the rollup table; a second run does nothing; down removes them', async () => {
    const migrator = new Migrator({ db: t.db, provider: { getMigrations: async () => migrations } })
    const first = await migrator.migrateToLatest()
    expect(first.error).toBeUndefined()
    expect(first.results?.map((r) => [r.migrationName, r.status])).toEqual([
      ['0001-vector-extension', 'Success'],
      ['0002-rag-chunks', 'Success'],
      ['0003-expenses-monthly', 'Success'],
    ])
    expect((await migrator.migrateToLatest()).results).toEqual([])
    const { rows } = await sql<{ name: string }>`
      select relname as name from pg_class where relname in ('rag_chunks', 'rag_chunks_tenant_tuning', 'expenses_monthly') order by 1`.execute(
      t.db,
    )
    expect(rows.map((r) => r.name)).toEqual(['expenses_monthly', 'rag_chunks', 'rag_chunks_tenant_tuning'])
    // The table the migration made is the store's: open() finds it as it is.
    const store = await PgVectorStore.open(t.db, { table: 'rag_chunks', dimensions: 384 })
    expect((await store.stats()).rows).toBe(0)
    for (let i = 0; i < 2; i++) expect((await migrator.migrateDown()).error).toBeUndefined()
    const { rows: left } = await sql<{ name: string }>`
      select relname as name from pg_class where relname in ('rag_chunks', 'expenses_monthly')`.execute(t.db)
    expect(left).toEqual([])
  })
})
