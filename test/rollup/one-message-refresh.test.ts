import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { connect, DatabaseError, MonthlyRollup, rollupTable } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { countingPool } from '../support/query-counter.js'
import { useTestDatabase } from '../support/test-database.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

/**
 * refreshAt in one round trip: the advisory lock and the refresh as one message (one implicit
 * transaction). What must hold: one query on the wire, the result equal to a from-scratch
 * aggregate, nothing half-written when the refresh fails, and the same results when the app's
 * fragments carry parameters of their own (then the values stay bound, in three round trips).
 */
const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const { target, rollup } = expensesRollup(ZONE)

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'one-message', rows: 6_000, tenants: 6, bigTenantRows: 2_000, months: 6 })
  await target.create(t.db)
})

describe('refreshAt in one message', () => {
  itWithServer(t.target)('one query on the wire per refresh, equal to the from-scratch aggregate', async () => {
    const counted = countingPool({ connectionString: t.url, max: 1 })
    const pool = counted.pool
    const db = await connect(pool)
    try {
      await rollup.refreshAt(db, { tenantId: 1, moment: '2025-10-15T12:00:00Z' }) // checks the source once
      for (const moment of ['2025-09-03T00:00:00Z', '2025-10-31T23:00:00Z', '2025-11-01T07:00:00Z']) {
        counted.reset()
        await rollup.refreshAt(db, { tenantId: 1, moment })
        expect(counted.queries).toBe(1)
      }
      expect(await rollupSnapshot(t.db, 'expenses_monthly', 1)).toBe(await fromScratch(t.db, ZONE, 1, '2025-09-01', '2025-11-01'))
      expect(JSON.parse(await rollupSnapshot(t.db, 'expenses_monthly', 1)).length).toBeGreaterThan(3)
    } finally {
      await db.close()
      await pool.end()
    }
  })

  it('a refresh that fails after taking its lock writes nothing and leaves the lock and the connection free', async () => {
    const failing = rollupTable('fail_monthly', {
      groupBy: { category: 'varchar(64)' },
      measures: { ratio: 'numeric' },
      tenantType: 'bigint',
    })
    await failing.create(t.db)
    const strict = new MonthlyRollup({
      source: 'expenses',
      target: failing,
      at: 'paid_at',
      tenant: 'tenant_id',
      groupBy: ['category'],
      measures: { ratio: sql`sum(1 / (amount - amount))` },
      zone: ZONE,
    })
    await sql`insert into fail_monthly (tenant_id, month, category, ratio) values (2, '2025-10-01', 'kept', 1)`.execute(t.db)
    await expect(strict.refreshAt(t.db, { tenantId: 2, moment: '2025-10-10T00:00:00Z' })).rejects.toBeInstanceOf(DatabaseError)
    const { rows } = await sql<{ category: string }>`select category from fail_monthly where tenant_id = 2`.execute(t.db)
    expect(rows).toEqual([{ category: 'kept' }])
    // The lock went with the failed message: the same bucket refreshes at once with another rollup.
    await rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-10-10T00:00:00Z' })
    expect(await rollupSnapshot(t.db, 'expenses_monthly', 2)).toBe(await fromScratch(t.db, ZONE, 2, '2025-10-01', '2025-10-01'))
  })

  it('fragments with their own parameters keep them bound and give the same rows', async () => {
    const bound = rollupTable('bound_monthly', {
      groupBy: { category: 'varchar(64)' },
      measures: { total: 'numeric(14,2)', count: 'integer' },
      tenantType: 'bigint',
    })
    await bound.create(t.db)
    const withParams = new MonthlyRollup({
      source: 'expenses',
      target: bound,
      at: 'paid_at',
      tenant: 'tenant_id',
      groupBy: ['category'],
      measures: { total: sql`sum(amount)`, count: sql`count(*)` },
      where: sql`status <> ${'cancelled'}`,
      zone: ZONE,
    })
    for (const tenant of [3, 4]) {
      await withParams.refreshAt(t.db, { tenantId: tenant, moment: '2025-08-20T00:00:00Z' })
      await rollup.refreshAt(t.db, { tenantId: tenant, moment: '2025-08-20T00:00:00Z' })
      expect(await rollupSnapshot(t.db, 'bound_monthly', tenant)).toBe(await rollupSnapshot(t.db, 'expenses_monthly', tenant))
      expect(await rollupSnapshot(t.db, 'bound_monthly', tenant)).toBe(await fromScratch(t.db, ZONE, tenant, '2025-08-01', '2025-08-01'))
      expect(JSON.parse(await rollupSnapshot(t.db, 'bound_monthly', tenant)).length).toBeGreaterThan(0)
    }
  })
})
