import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { MonthlyRollup, rollupTable } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * No row for an empty bucket, in any rollup shape: `rebuild`, `refreshAt` and `refreshDirty` of a
 * month with no source rows — or of a tenant with none — leave no rollup row, and a bucket whose
 * rows were all deleted is deleted, with group columns (`groupBy: { category }`) and without
 * (`groupBy: {}`, where the aggregate without GROUP BY used to store a row of zeros and nulls).
 */
const t = useTestDatabase()
const ZONE = 'America/Mexico_City'
const measures = { n: sql`count(*)`, total: sql`sum(amount)` }

function rollupOf(table: string, groups: string[]) {
  const target = rollupTable(table, {
    groupBy: Object.fromEntries(groups.map((g) => [g, 'text'])),
    measures: { n: 'integer', total: 'numeric(14,2)' },
    tenantType: 'bigint',
  })
  const rollup = new MonthlyRollup({ source: 'empties', target, at: 'paid_at', tenant: 'tenant_id', groupBy: groups, measures, zone: ZONE })
  return { target, rollup }
}

const shapes = [
  { name: 'groupBy {}', ...rollupOf('empties_total', []) },
  { name: 'groupBy { category }', ...rollupOf('empties_by_category', ['category']) },
]

async function stored(table: string): Promise<Array<{ tenant: string; month: string; n: number }>> {
  const { rows } = await sql<{ tenant: string; month: string; n: number }>`
    select tenant_id::text as tenant, to_char(month, 'YYYY-MM') as month, sum(n)::int as n
    from ${sql.table(table)} group by 1, 2 order by 1, 2`.execute(t.db)
  return rows
}

beforeAll(async () => {
  await sql`create table empties (id serial primary key, tenant_id bigint not null, paid_at timestamptz not null, category text, amount numeric(10,2))`.execute(
    t.db,
  )
  // One row, on 15 March local time, for tenant 1; tenant 2 has none.
  await sql`insert into empties (tenant_id, paid_at, category, amount) values (1, '2025-03-15 12:00-06', 'travel', 10)`.execute(t.db)
  for (const s of shapes) await s.target.create(t.db)
})

describe.each(shapes)('no row for an empty bucket ($name)', ({ target, rollup }) => {
  it('rebuild of months without rows, and of a tenant without rows, stores only the bucket that has rows', async () => {
    await rollup.rebuild(t.db, { tenantId: 1, since: '2025-01', until: '2025-04' })
    await rollup.rebuild(t.db, { tenantId: 2, since: '2025-01', until: '2025-06' })
    expect(await stored(target.name)).toEqual([{ tenant: '1', month: '2025-03', n: 1 }])
    expect(await rollup.readAcross(t.db, { from: '2025-01', to: '2025-12', groupBy: [] })).toMatchObject([{ month: '2025-03' }])
  })

  it('refreshAt of an empty month, or of a tenant without rows, stores nothing', async () => {
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-05-10' })
    await rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-03-10' })
    expect(await stored(target.name)).toEqual([{ tenant: '1', month: '2025-03', n: 1 }])
  })

  it('a bucket whose rows were all deleted is deleted (refreshAt, refreshDirty); a fresh read shows none before the drain', async () => {
    await rollup.track(t.db)
    await sql`delete from empties where tenant_id = 1`.execute(t.db)
    expect(await rollup.read(t.db, { tenantId: 1, from: '2025-01', to: '2025-12', fresh: true })).toEqual([])
    expect(await rollup.readAcross(t.db, { from: '2025-01', to: '2025-12', fresh: true })).toEqual([])
    expect(await rollup.refreshDirty(t.db)).toMatchObject({ buckets: 1, remaining: 0 })
    expect(await stored(target.name)).toEqual([])
    // Put it back and delete it again, healed by refreshAt this time.
    await sql`insert into empties (tenant_id, paid_at, category, amount) values (1, '2025-03-15 12:00-06', 'travel', 10)`.execute(t.db)
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-03-15' })
    expect(await stored(target.name)).toEqual([{ tenant: '1', month: '2025-03', n: 1 }])
    await sql`delete from empties where tenant_id = 1`.execute(t.db)
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-03-15' })
    expect(await stored(target.name)).toEqual([])
    await rollup.refreshDirty(t.db)
    expect(await stored(target.name)).toEqual([])
    await rollup.untrack(t.db)
    await sql`insert into empties (tenant_id, paid_at, category, amount) values (1, '2025-03-15 12:00-06', 'travel', 10)`.execute(t.db)
  })
})
