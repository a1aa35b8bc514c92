import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { connect, migrate, MIGRATION_TABLE } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'

const t = useTestDatabase()

describe('migrate', () => {
  it('applies pgscale migrations once and records them in its own table', async () => {
    const first = await migrate(t.db)
    expect(first).toContain('0001-vector-extension')
    expect(await migrate(t.db)).toEqual([])
    const { rows } = await sql<{ name: string }>`select name from ${sql.table(MIGRATION_TABLE)} order by name`.execute(t.db)
    expect(rows.map((r) => r.name)).toEqual(['0001-vector-extension'])
  })

  const appMigrations = {
    '9000-app-table': { up: async (db: any) => void (await sql`create table app_thing (id int primary key)`.execute(db)) },
  }

  it('runs extra migrations after its own', async () => {
    const applied = await migrate(t.db, { migrations: appMigrations })
    expect(applied).toEqual(['9000-app-table'])
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from app_thing`.execute(t.db)
    expect(rows[0]?.n).toBe(0)
  })

  itWithServer(t.target)('two processes migrating at once both succeed (Kysely lock)', async () => {
    const [a, b] = [await connect(t.url!), await connect(t.url!)]
    try {
      const extra = {
        ...appMigrations,
        '9001-concurrent': { up: async (db: any) => void (await sql`create table concurrent_thing (id int)`.execute(db)) },
      }
      const results = await Promise.all([migrate(a, { migrations: extra }), migrate(b, { migrations: extra })])
      expect(results.flat().filter((n) => n === '9001-concurrent')).toHaveLength(1)
    } finally {
      await Promise.all([a.close(), b.close()])
    }
  })
})
