import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { explain, indexesUsed } from '../../src/index.js'
import { bucketAggregate, refreshStatement } from '../../src/bench-kit.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const { target, rollup } = expensesRollup(ZONE)

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'rollup', rows: 12_000, tenants: 8, bigTenantRows: 6_000, months: 14 })
  await target.create(t.db)
  await target.create(t.db)
})

async function insertExpense(tenant: number, paidAt: string, category: string | null, amount: string, status = 'paid'): Promise<number> {
  const { rows } = await sql<{ id: number }>`insert into expenses (tenant_id, paid_at, category, amount, status)
    values (${tenant}, ${paidAt}::timestamptz, ${category}, ${amount}::numeric, ${status}) returning id::int`.execute(t.db)
  return rows[0]!.id
}

describe('MonthlyRollup.refreshAt', () => {
  it('recomputes a bucket equal to a from-scratch aggregate of that local month', async () => {
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-06-15T12:00:00Z' })
    expect(await rollupSnapshot(t.db)).toBe(await fromScratch(t.db, ZONE, 1, '2025-06-01', '2025-06-01'))
    expect(JSON.parse(await rollupSnapshot(t.db)).length).toBeGreaterThan(5)
  })

  it('is idempotent: refreshing once or five times gives the same table', async () => {
    await rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-05-02T00:00:00Z' })
    const once = await rollupSnapshot(t.db, 'expenses_monthly', 2)
    for (let i = 0; i < 5; i++) await rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-05-20T00:00:00Z' })
    expect(await rollupSnapshot(t.db, 'expenses_monthly', 2)).toBe(once)
  })

  it('follows late, duplicate, updated and deleted source rows, and deletes vanished groups', async () => {
    const tenant = 7
    const moment = '2024-03-10T18:00:00Z'
    const check = async () => {
      await rollup.refreshAt(t.db, { tenantId: tenant, moment })
      expect(await rollupSnapshot(t.db, 'expenses_monthly', tenant)).toBe(await fromScratch(t.db, ZONE, tenant, '2024-03-01', '2024-03-01'))
    }
    const late = await insertExpense(tenant, '2024-03-02T10:00:00Z', 'late-fees', '10.00')
    await check()
    await check() // the same event delivered twice
    await sql`update expenses set amount = 99.99 where tenant_id = ${tenant} and id = ${late}`.execute(t.db)
    await check()
    const rows = JSON.parse(await rollupSnapshot(t.db, 'expenses_monthly', tenant)) as Array<{ category: string }>
    expect(rows.some((r) => r.category === 'late-fees')).toBe(true)
    await sql`delete from expenses where tenant_id = ${tenant} and id = ${late}`.execute(t.db)
    await check()
    const after = JSON.parse(await rollupSnapshot(t.db, 'expenses_monthly', tenant)) as Array<{ category: string }>
    expect(after.some((r) => r.category === 'late-fees')).toBe(false)
  })

  it('leaves out rows excluded by where (cancelled), and keeps null groups as one group', async () => {
    const tenant = 8
    await insertExpense(tenant, '2023-01-15T12:00:00Z', 'travel', '100.00')
    await insertExpense(tenant, '2023-01-16T12:00:00Z', 'travel', '900.00', 'cancelled')
    await insertExpense(tenant, '2023-01-17T12:00:00Z', null, '5.00')
    await insertExpense(tenant, '2023-01-18T12:00:00Z', null, '6.00')
    await rollup.refreshAt(t.db, { tenantId: tenant, moment: new Date('2023-01-20T00:00:00Z') })
    const rows = await rollup.read(t.db, { tenantId: tenant, from: '2023-01', to: '2023-01' })
    expect(rows).toEqual([
      { month: '2023-01', category: 'travel', total: '100.00', count: 1 },
      { month: '2023-01', category: null, total: '11.00', count: 2 },
    ])
  })

  it("runs in the caller's transaction: rolled back with it", async () => {
    const tenant = 6
    const before = await rollupSnapshot(t.db, 'expenses_monthly', tenant)
    await t.db
      .transaction(async (trx) => {
        await rollup.refreshAt(trx, { tenantId: tenant, moment: '2025-01-15T00:00:00Z' })
        throw new Error('undo')
      })
      .catch(() => {})
    expect(await rollupSnapshot(t.db, 'expenses_monthly', tenant)).toBe(before)
  })

  it("the bucket's statement reads the source through its (tenant_id, paid_at) index", async () => {
    const plan = await explain(t.db, bucketAggregate(rollup.parts, 1, '2025-06-01').compile(t.db))
    expect(indexesUsed(plan)).toContain('expenses_tenant_paid_at')
    const write = await explain(t.db, refreshStatement(rollup.parts, 1, '2025-06-01').compile(t.db))
    expect(indexesUsed(write)).toContain('expenses_tenant_paid_at')
  })
})

describe('month boundaries are local months, half-open in UTC', () => {
  const cases: Array<{ zone: string; label: string; inside: string[]; outside: string[]; moment: string }> = [
    {
      zone: 'America/New_York',
      label: 'March with the spring-forward DST change (EST → EDT)',
      moment: '2024-03-15T12:00:00Z',
      // 2024-03-01 00:00 EST = 05:00Z; 2024-04-01 00:00 EDT = 04:00Z.
      inside: ['2024-03-01T05:00:00Z', '2024-03-10T07:30:00Z', '2024-04-01T03:59:59.999Z'],
      outside: ['2024-03-01T04:59:59.999Z', '2024-04-01T04:00:00Z'],
    },
    {
      zone: 'America/New_York',
      label: 'November with the fall-back DST change (EDT → EST)',
      moment: '2024-11-15T12:00:00Z',
      inside: ['2024-11-01T04:00:00Z', '2024-11-03T06:30:00Z', '2024-12-01T04:59:59.999Z'],
      outside: ['2024-11-01T03:59:59.999Z', '2024-12-01T05:00:00Z'],
    },
    {
      zone: 'America/Mexico_City',
      label: 'December across the year end (UTC-6)',
      moment: '2024-12-31T23:00:00-06:00',
      inside: ['2024-12-01T06:00:00Z', '2025-01-01T05:59:59.999Z'],
      outside: ['2024-12-01T05:59:59.999Z', '2025-01-01T06:00:00Z'],
    },
    {
      zone: 'Europe/Madrid',
      label: 'October with the DST end, zone east of UTC',
      moment: '2025-10-26T12:00:00Z',
      // 2025-10-01 00:00 CEST = 2025-09-30T22:00Z; 2025-11-01 00:00 CET = 2025-10-31T23:00Z.
      inside: ['2025-09-30T22:00:00Z', '2025-10-31T22:59:59.999Z'],
      outside: ['2025-09-30T21:59:59.999Z', '2025-10-31T23:00:00Z'],
    },
  ]
  it.each(cases)('$zone: $label', async ({ zone, inside, outside, moment }) => {
    const table = `bounds_${zone.replace(/\W/g, '_').toLowerCase()}`
    const { target: boundsTable, rollup: boundsRollup } = expensesRollup(zone, table)
    await boundsTable.create(t.db)
    const tenant = 100 + cases.findIndex((c) => c.moment === moment)
    for (const at of [...inside, ...outside]) await insertExpense(tenant, at, 'edge', '1.00')
    await boundsRollup.refreshAt(t.db, { tenantId: tenant, moment })
    const { rows } = await sql<{ count: number }>`select count from ${sql.table(table)} where tenant_id = ${tenant}`.execute(t.db)
    expect(rows).toEqual([{ count: inside.length }])
  })
})

describe('MonthlyRollup.rebuild', () => {
  it('heals a range in one statement: equal to a from-scratch aggregate, rows outside the range untouched', async () => {
    const tenant = 3
    await rollup.refreshAt(t.db, { tenantId: tenant, moment: '2024-11-15T00:00:00Z' })
    // Corrupt the range: a wrong total and a row for a group that does not exist.
    await sql`update expenses_monthly set total = -1 where tenant_id = ${tenant}`.execute(t.db)
    await sql`insert into expenses_monthly values (${tenant}, '2025-02-01', 'ghost', 1, 1)`.execute(t.db)
    const outside = await sql`insert into expenses_monthly values (${tenant}, '2019-01-01', 'old', 5, 5)`.execute(t.db)
    expect(outside.numAffectedRows).toBe(1n)
    const { months } = await rollup.rebuild(t.db, { tenantId: tenant, since: '2024-10-01T12:00:00Z', until: '2025-12-31T12:00:00Z' })
    expect(months).toBe(15)
    const got = JSON.parse(await rollupSnapshot(t.db, 'expenses_monthly', tenant)) as Array<{ month: string }>
    expect(got.filter((r) => r.month === '2019-01')).toHaveLength(1)
    expect(JSON.stringify(got.filter((r) => r.month !== '2019-01'))).toBe(await fromScratch(t.db, ZONE, tenant, '2024-10-01', '2025-12-01'))
  })
})

describe('MonthlyRollup.read', () => {
  it('returns YYYY-MM rows by group, or combined over groups', async () => {
    await rollup.rebuild(t.db, { tenantId: 4, since: '2025-01-01T12:00:00Z', until: '2025-03-31T12:00:00Z' })
    const byCategory = await rollup.read(t.db, { tenantId: 4, from: '2025-01', to: '2025-03' })
    expect(byCategory.every((r) => /^2025-0[1-3]$/.test(r.month) && typeof r.category === 'string')).toBe(true)
    const totals = await rollup.read(t.db, { tenantId: 4, from: '2025-01', to: '2025-03', groupBy: [] })
    expect(totals.map((r) => r.month)).toEqual(['2025-01', '2025-02', '2025-03'])
    for (const month of totals) {
      const parts = byCategory.filter((r) => r.month === month.month)
      expect(Number(month.total)).toBeCloseTo(
        parts.reduce((s, r) => s + Number(r.total), 0),
        2,
      )
      expect(month.count).toBe(parts.reduce((s, r) => s + Number(r.count), 0))
    }
  })
})

describe('concurrency', () => {
  itWithServer(t.target)('ten concurrent refreshes of one bucket never violate the key', async () => {
    const moment = '2025-06-15T12:00:00Z'
    const ten = () => Array.from({ length: 10 }, () => rollup.refreshAt(t.db, { tenantId: 1, moment }))
    const results = await Promise.allSettled(ten())
    expect(results.filter((r) => r.status === 'rejected')).toEqual([])
    expect(await rollupSnapshot(t.db)).toContain('2025-06')
    expect(await rollupSnapshot(t.db)).toBe(await fromScratch(t.db, ZONE, 1, '2025-06-01', '2025-06-01'))
  })

  // The control: the same statement without the advisory lock races on plain PostgreSQL. On Citus
  // 13 (coordinator + 2 workers) 5 × 10 unlocked refreshes raised no 23505 (observed, not
  // explained): there the control has nothing to show, and is skipped.
  const control = t.target.citusWorkers ? it.skip : itWithServer(t.target)
  control('without the lock, ten concurrent refreshes of one bucket violate the key (the control)', async () => {
    // The seed saw unique violations. Up to 20 tries: through PgBouncer with 3 server connections
    // only 3 of the 10 run at once, and 5 tries once saw none (CI, 2026-12-02).
    const unlocked = refreshStatement(rollup.parts, 1, '2025-06-01').compile(t.db)
    let violations = 0
    for (let attempt = 0; attempt < 20 && violations === 0; attempt++) {
      const settled = await Promise.allSettled(
        Array.from({ length: 10 }, () => t.db.transaction(async (trx) => trx.executeQuery(unlocked))),
      )
      violations = settled.filter((r) => r.status === 'rejected' && (r.reason as { sqlState?: string }).sqlState === '23505').length
    }
    console.log(`[rollup] without the lock: ${violations} of 10 concurrent refreshes failed with 23505`)
    expect(violations).toBeGreaterThan(0)
  })
})
