import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { explain, indexesUsed, InvalidArgumentError, MonthlyRollup, PgVectorStore, rollupTable } from '../../src/index.js'
import { combinerOf } from '../../src/bench-kit.js'
import { useTestDatabase } from '../support/test-database.js'

/** Inputs that used to reach the server or be silently misread, and names PostgreSQL truncated. */
const t = useTestDatabase()
const DIM = 4
const emb = (i: number) => [1, i / 10, 0.25, (i % 5) / 5]

describe('store input', () => {
  it('a filter with an undefined value is refused, never widened to {} (which matches every chunk)', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'input_chunks', dimensions: DIM })
    const acme = store.forTenant('acme')
    await acme.replaceDocument('private', [{ content: 'secret', embedding: emb(1), metadata: { owner: 'ana' } }])
    for (const filter of [{ owner: undefined }, { owner: { nested: undefined } }, { n: Number.NaN }, { f: () => 1 }]) {
      await expect(acme.search(emb(1), { filter: filter as Record<string, unknown> })).rejects.toBeInstanceOf(InvalidArgumentError)
      await expect(acme.exactSearch(emb(1), { filter: filter as Record<string, unknown> })).rejects.toBeInstanceOf(InvalidArgumentError)
    }
    expect(await acme.search(emb(1), { filter: { owner: 'bob' } })).toEqual([])
    expect(await acme.search(emb(1), { filter: { owner: 'ana' } })).toHaveLength(1)
  })

  it('a fractional rrfK works (no 22P02 from the server)', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'input_chunks', dimensions: DIM })
    const hits = await store.forTenant('acme').hybridSearch({ embedding: emb(1), text: 'secret', rrfK: 0.5 })
    expect(hits[0]?.score).toBeCloseTo(1 / 1.5 + 1 / 1.5, 6)
  })

  it('ids that are not well-formed text, and floats beyond float4, are refused before the server', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'input_chunks', dimensions: DIM })
    for (const id of ['a\uD800', '\uDC00b', 'nul\u0000']) {
      expect(() => store.forTenant(id)).toThrow(InvalidArgumentError)
      await expect(store.forTenant('acme').replaceDocument(id, [])).rejects.toBeInstanceOf(InvalidArgumentError)
    }
    // Two lone surrogates that PostgreSQL would both store as U+FFFD: neither is accepted.
    expect(() => store.forTenant('x\uD800')).toThrow(/lone surrogate/)
    expect(() => store.forTenant('x\uD801')).toThrow(/lone surrogate/)
    expect(store.forTenant('emoji \u{1F600}').tenantId).toBe('emoji \u{1F600}')
    await expect(store.forTenant('acme').replaceDocument('big', [{ content: 'x', embedding: [1e39, 0, 0, 1] }])).rejects.toThrow(
      /4-byte float/,
    )
    await expect(store.forTenant('acme').search([1, -1e39, 0, 0])).rejects.toBeInstanceOf(InvalidArgumentError)
  })

  it('tenant index names of a long table stay distinct and within 63 bytes', async () => {
    const table = 'a_rather_long_table_name_for_the_chunks_of_a_product'
    const store = await PgVectorStore.open(t.db, { table, dimensions: DIM })
    for (const tenant of ['tenant-one', 'tenant-two']) {
      await store.bulkIngest(
        Array.from({ length: 60 }, (_, i) => ({ tenantId: tenant, documentId: `d${i}`, chunkIndex: 0, content: 'c', embedding: emb(i) })),
      )
    }
    const report = await store.optimize({ ownIndexAbove: 50 })
    expect(report.built.map((b) => b.tenantId).sort()).toEqual(['tenant-one', 'tenant-two'])
    const names = report.built.map((b) => b.index)
    expect(new Set(names).size).toBe(2)
    for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63)
    const { rows } = await sql<{ name: string }>`
      select c.relname as name from pg_index x join pg_class c on c.oid = x.indexrelid
      where x.indrelid = ${table}::regclass and c.relname like '%tenant%' order by 1`.execute(t.db)
    expect(rows.map((r) => r.name)).toEqual([...names].sort())
    const again = await store.optimize({ ownIndexAbove: 50 })
    expect(again.built).toEqual([])
    expect(again.alreadyIndexed.sort()).toEqual(['tenant-one', 'tenant-two'])
  })
})

describe('rollup measures combined over groups', () => {
  it('only a whole sum/count/min/max (with an optional FILTER) has a known combination', () => {
    expect(combinerOf('sum(amount)')).toBe('sum')
    expect(combinerOf('count(*)')).toBe('sum')
    expect(combinerOf("count(*) filter (where status = 'paid')")).toBe('sum')
    expect(combinerOf('MAX( "amount" )')).toBe('max')
    expect(combinerOf('min(coalesce(a, 0))')).toBe('min')
    for (const refused of [
      'count(distinct user_id)',
      'sum(a)/count(*)',
      'max(a)-min(a)',
      'sum(a)::numeric(10,2)',
      "sum(a) filter (where x = ')') + 1",
      'avg(a)',
      'sum(a) filter (where b) * 2',
    ]) {
      expect(combinerOf(refused), refused).toBeUndefined()
    }
  })

  it('read({ groupBy }) refuses a count(distinct ...) instead of reading one user in two categories as 2', async () => {
    await sql`create table visits (tenant_id int not null, at timestamptz not null, category text not null, user_id int not null)`.execute(
      t.db,
    )
    await sql`insert into visits values (1, '2025-03-05T12:00:00Z', 'docs', 7), (1, '2025-03-06T12:00:00Z', 'blog', 7)`.execute(t.db)
    const target = rollupTable('visits_monthly', {
      tenantType: 'integer',
      groupBy: { category: 'text' },
      measures: { users: 'integer', visits: 'integer' },
    })
    await target.create(t.db)
    const rollup = new MonthlyRollup({
      source: 'visits',
      target,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: ['category'],
      measures: { users: sql`count(distinct user_id)`, visits: sql`count(*)` },
      zone: 'UTC',
    })
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-03-05' })
    expect(() => rollup.readQuery(t.db, { tenantId: 1, from: '2025-03', to: '2025-03', groupBy: [] })).toThrow(/measure users/)
    expect(await rollup.read(t.db, { tenantId: 1, from: '2025-03', to: '2025-03' })).toEqual([
      { month: '2025-03', category: 'blog', users: 1, visits: 1 },
      { month: '2025-03', category: 'docs', users: 1, visits: 1 },
    ])
  })
})

describe('rollup time columns and local dates', () => {
  const zone = 'America/Mexico_City'
  const target = (name: string) => rollupTable(name, { tenantType: 'integer', groupBy: {}, measures: { n: 'integer' } })

  it('a timestamp column holds wall-clock times in the zone, whatever the session TimeZone', async () => {
    await sql`create table ts_events (tenant_id int not null, at timestamp not null)`.execute(t.db)
    // 03:00 local on 1 March, and 23:30 local on 28 February.
    await sql`insert into ts_events values (1, '2025-03-01 03:00'), (1, '2025-02-28 23:30')`.execute(t.db)
    const monthly = target('ts_monthly')
    await monthly.create(t.db)
    const rollup = new MonthlyRollup({
      source: 'ts_events',
      target: monthly,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { n: sql`count(*)` },
      zone,
    })
    await t.db.transaction(async (trx) => {
      await sql`set local timezone = 'UTC'`.execute(trx)
      await rollup.rebuild(trx, { tenantId: 1, since: '2025-02-01', until: '2025-03-31' })
    })
    expect(await rollup.read(t.db, { tenantId: 1, from: '2025-02', to: '2025-03' })).toEqual([
      { month: '2025-02', n: 1 },
      { month: '2025-03', n: 1 },
    ])
  })

  it('a date column, and a column of another type is refused with a typed error', async () => {
    await sql`create table date_events (tenant_id int not null, day date not null, label text not null)`.execute(t.db)
    await sql`insert into date_events values (1, '2025-03-01', 'a'), (1, '2025-02-28', 'b'), (1, '2025-03-31', 'c')`.execute(t.db)
    const monthly = target('date_monthly')
    await monthly.create(t.db)
    const rollup = new MonthlyRollup({
      source: 'date_events',
      target: monthly,
      at: 'day',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { n: sql`count(*)` },
      zone,
    })
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-03-15' })
    expect(await rollup.read(t.db, { tenantId: 1, from: '2025-03', to: '2025-03' })).toEqual([{ month: '2025-03', n: 2 }])
    const wrong = new MonthlyRollup({
      source: 'date_events',
      target: target('label_monthly'),
      at: 'label',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { n: sql`count(*)` },
      zone,
    })
    await expect(wrong.refreshAt(t.db, { tenantId: 1, moment: '2025-03-15' })).rejects.toThrow(/label is text; use timestamptz, timestamp/)
  })

  it("'2025-03-01' names March in the rollup's zone, not UTC midnight (still February in Mexico City)", async () => {
    await sql`create table tz_events (tenant_id int not null, at timestamptz not null)`.execute(t.db)
    await sql`insert into tz_events values (1, '2025-03-01T12:00:00-06:00'), (1, '2025-02-27T12:00:00-06:00')`.execute(t.db)
    const monthly = target('tz_monthly')
    await monthly.create(t.db)
    const rollup = new MonthlyRollup({
      source: 'tz_events',
      target: monthly,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { n: sql`count(*)` },
      zone,
    })
    expect(await rollup.rebuild(t.db, { tenantId: 1, since: '2025-03-01', until: '2025-03-01' })).toEqual({ months: 1 })
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-03-01' })
    expect(await rollup.read(t.db, { tenantId: 1, from: '2025-03-01', to: '2025-03-01' })).toEqual([{ month: '2025-03', n: 1 }])
    // A moment with a time stays an instant: UTC midnight of 1 March is 28 February, 18:00 there.
    await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-03-01T00:00:00Z' })
    expect(await rollup.read(t.db, { tenantId: 1, from: '2025-02', to: '2025-02' })).toEqual([{ month: '2025-02', n: 1 }])
    await expect(rollup.read(t.db, { tenantId: 1, from: '2025-02-30', to: '2025-03' })).rejects.toBeInstanceOf(InvalidArgumentError)
  })
})

describe('explain', () => {
  it('takes a Kysely sql template, as the documented explain(db, rollup.readQuery(...)) does', async () => {
    const plan = await explain(t.db, sql`select * from tz_monthly where tenant_id = ${1}`)
    expect(plan.Plan['Node Type']).toBeTruthy()
    const monthly = rollupTable('tz_monthly', { tenantType: 'integer', groupBy: {}, measures: { n: 'integer' } })
    const rollup = new MonthlyRollup({
      source: 'tz_events',
      target: monthly,
      at: 'at',
      tenant: 'tenant_id',
      groupBy: [],
      measures: { n: sql`count(*)` },
      zone: 'UTC',
    })
    const readPlan = await explain(t.db, rollup.readQuery(t.db, { tenantId: 1, from: '2025-01', to: '2025-12' }))
    expect(readPlan.sql).toMatch(/from "tz_monthly"/)
    expect(Array.isArray(indexesUsed(readPlan))).toBe(true)
  })
})
