import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { connect, PgVectorStore, type Database } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * A store's migration printed as plain SQL (what `pgscale migrate --print` writes) for teams whose
 * migrations are SQL files: it creates what `open` creates, records the version so `open` needs no
 * DDL afterwards, grants the runtime role, changes nothing when run again, stops on a different
 * configuration, and two runs at once take turns.
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'app_sql')
const DIM = 6

const exists = async (db: Database, name: string) =>
  (await sql<{ r: string | null }>`select to_regclass(${name})::text as r`.execute(db)).rows[0]!.r !== null

describe('PgVectorStore.migrationSql', () => {
  it('creates the store, its version row and the grants; open then needs no DDL; a second run changes nothing', async () => {
    await app.create()
    const text = await PgVectorStore.migrationSql({ table: 'sql_chunks', dimensions: DIM, partitions: 2 }, { runtimeRole: app.name })
    expect(text).toMatch(/^-- pgscale: store:public\.sql_chunks at version 5/)
    expect(text).toMatch(/create table if not exists "sql_chunks"/)
    expect(text).toMatch(new RegExp(`grant select, insert, update, delete on "sql_chunks" to "${app.name}"`))
    await sql.raw(text).execute(t.db)
    for (const table of [
      'sql_chunks',
      'sql_chunks_p0',
      'sql_chunks_p1',
      'sql_chunks_tenant_tuning',
      'sql_chunks_query_sample',
      'sql_chunks_recall_monitor',
    ])
      expect(await exists(t.db, table)).toBe(true)
    const { rows } = await sql<{
      version: number
    }>`select version from pgscale_object_version where object = 'store:public.sql_chunks'`.execute(t.db)
    expect(rows[0]!.version).toBe(5)
    await sql.raw(text).execute(t.db)
    await app.as(async (db) => {
      const store = await PgVectorStore.open(db, { table: 'sql_chunks', dimensions: DIM, partitions: 2, migrate: false })
      await store.forTenant('a').replaceDocument('d', [{ content: 'x', embedding: axisVector(DIM, 1) }])
      expect(await store.forTenant('a').search(axisVector(DIM, 1), { k: 1 })).toHaveLength(1)
      await store.close()
    })
  })

  it('stops with an error, changing nothing, when the store was recorded with another configuration', async () => {
    const other = await PgVectorStore.migrationSql({ table: 'sql_chunks', dimensions: DIM + 2, partitions: 2 })
    // One connection: a script's BEGIN outlives the message that failed (as in psql without
    // ON_ERROR_STOP), and the rollback must reach that session.
    const one = t.url ? await connect(t.url, { maxConnections: 1 }) : t.db
    try {
      await expect(sql.raw(other).execute(one)).rejects.toThrow(/exists with a different configuration/)
      await sql`rollback`.execute(one)
    } finally {
      if (one !== t.db) await one.close()
    }
    const { rows } = await sql<{
      dims: number
    }>`select atttypmod as dims from pg_attribute where attrelid = 'sql_chunks'::regclass and attname = 'embedding'`.execute(t.db)
    expect(rows[0]!.dims).toBe(DIM)
  })

  it('the Kysely migration does the same, and its second run is a no-op', async () => {
    const migration = PgVectorStore.migration({ table: 'kysely_chunks', dimensions: DIM }, { runtimeRole: app.name })
    await migration.up(t.db)
    await migration.up(t.db)
    await app.as(async (db) => (await PgVectorStore.open(db, { table: 'kysely_chunks', dimensions: DIM, migrate: false })).close())
    await migration.down!(t.db)
    expect(await exists(t.db, 'kysely_chunks')).toBe(false)
  })

  itWithServer(t.target)('two runs of the printed SQL at once take turns and both succeed', async () => {
    const text = await PgVectorStore.migrationSql({ table: 'race_sql_chunks', dimensions: DIM })
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      await Promise.all([sql.raw(text).execute(t.db), sql.raw(text).execute(other)])
    } finally {
      await other.close()
    }
    expect(await exists(t.db, 'race_sql_chunks')).toBe(true)
  })
})
