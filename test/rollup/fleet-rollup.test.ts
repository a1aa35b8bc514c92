import { sql, type Kysely, type RawBuilder } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { connect, InvalidArgumentError, MigrationRequiredError, MonthlyRollup, rollupTable, SchemaMismatchError } from '../../src/index.js'
import { fleetTable, type FleetTable, type RollupTable } from '../../src/bench-kit.js'
import { itUnless, itWithServer } from '../support/skip.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'
import { createSpend, insertSpend } from './spend-fixture.js'
import { canonicalRows } from './canonical-rows.js'
import { bulkDrain } from '../../src/bench-kit.js'
import { heldOpen } from './held-transaction.js'

/**
 * Fleet rollups (`fleetTable`): the level without the tenant, kept by the rollup's own refreshes,
 * rebuilds and drains, against plain SQL GROUP BY over the source — in both ways it is kept (deltas
 * of exact sums and counts; months recomputed from the rollup table for min/max) — read by
 * `readAcross` when a view needs no tenant detail; the refusals; two refreshes of different tenants
 * on one fleet bucket at once; a failure between the tenant write and the fleet write.
 */
const t = useTestDatabase()
const withServer = itWithServer(testTarget())
const ZONE = 'Europe/Madrid'

interface Setup {
  target: RollupTable
  fleet: FleetTable
  rollup: MonthlyRollup
  /** The same rollup without the fleet level: what filled the rollup table before the level existed. */
  plain: MonthlyRollup
}

/** A rollup of `spend` into `<name>` with a fleet level `<name>_fleet` by `fleetGroups`; min/max make it recompute. */
function declare(name: string, options: { minMax: boolean; fleetGroups?: string[] }): Setup {
  // Declared loosely (its measures depend on the options): rows typed as RollupRow.
  const measureTypes: Record<string, string> = {
    total: 'numeric(14,2)',
    n: 'integer',
    ...(options.minMax ? { lo: 'numeric(10,2)', hi: 'numeric(10,2)' } : {}),
  }
  const target: RollupTable = rollupTable(name, {
    groupBy: { category: 'text', channel: 'text' },
    measures: measureTypes,
    tenantType: 'bigint',
  })
  const fleet = fleetTable(`${name}_fleet`, { of: target, groupBy: options.fleetGroups ?? ['category'] })
  const config = {
    source: 'spend',
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category', 'channel'],
    measures: {
      total: sql`sum(amount)`,
      n: sql`count(*)`,
      ...(options.minMax ? { lo: sql`min(amount)`, hi: sql`max(amount)` } : {}),
    },
    zone: ZONE,
  }
  return { target, fleet, rollup: new MonthlyRollup({ ...config, fleet }), plain: new MonthlyRollup(config) }
}

const month = sql`date_trunc('month', paid_at at time zone ${sql.lit(ZONE)})::date`

/** The fleet by month and the kept groups, from the source. */
async function truth(db: Kysely<any>, keep: string[], minMax: boolean) {
  const groups = keep.map((g) => sql.raw(`"${g}"`))
  const { rows } = await sql<Record<string, unknown>>`
    select to_char(${month}, 'YYYY-MM') as month${groups.length ? sql`, ${sql.join(groups)}` : sql``},
      sum(amount)::text as total, count(*)::int as n
      ${minMax ? sql`, min(amount)::text as lo, max(amount)::text as hi` : sql``}
    from spend where ${month} between '2025-01-01' and '2025-12-01' group by ${sql.join([month, ...groups])}`.execute(db)
  return norm(rows)
}

const norm = (rows: ReadonlyArray<Record<string, unknown>>) => canonicalRows(rows)

async function readFleet(s: Setup, keep: string[]) {
  const rows = await s.rollup.readAcross(t.db, { from: '2025-01', to: '2025-12', groupBy: keep })
  return norm(rows)
}

async function expectFleetTruth(s: Setup, minMax: boolean) {
  for (const keep of [['category'], []]) {
    const query = s.rollup.readAcrossQuery(t.db, { from: '2025-01', to: '2025-12', groupBy: keep }).compile(t.db).sql
    expect(query).toContain(s.fleet.qualified)
    expect(await readFleet(s, keep)).toEqual(await truth(t.db, keep, minMax))
  }
}

beforeAll(() => createSpend(t.db))

describe.each([
  ['delta (sums and counts)', false],
  ['recompute (min and max)', true],
] as const)('a fleet level kept by %s', (_label, minMax) => {
  const name = minMax ? 'spend_mm' : 'spend_sc'
  const s = declare(name, { minMax })

  it('is filled by create, kept by refreshAt, rebuild and the drain, and read by readAcross', async () => {
    await s.target.create(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await s.plain.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await s.fleet.create(t.db) // filled from the rollup table
    await expectFleetTruth(s, minMax)
    // A write the app announces, one that moves a row to another tenant, month and group, a bucket emptied.
    await insertSpend(t.db, 2, '2025-03-31T23:30:00Z', 'a', '12.34')
    await s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-04-01T00:30:00+02:00' })
    await sql`update spend set tenant_id = 6, paid_at = paid_at - interval '40 days', category = 'z' where id in (7, 8)`.execute(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await s.rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await sql`delete from spend where tenant_id = 3 and category is null`.execute(t.db)
    await s.rollup.rebuild(t.db, { tenantId: 3, since: '2025-01', until: '2025-12' })
    await expectFleetTruth(s, minMax)
    // Tracked writes, healed by the drain.
    await s.rollup.track(t.db)
    await insertSpend(t.db, 4, '2025-06-15T10:00:00Z', 'c', null)
    await sql`update spend set amount = amount + 1 where tenant_id = 5 and paid_at < '2025-03-01'`.execute(t.db)
    await sql`delete from spend where tenant_id = 1 and paid_at >= '2025-11-01'`.execute(t.db)
    // Drained with the level's deltas per tenant, then (more writes) the way of a large drain: recomputed once.
    bulkDrain.rowsPerBucket = 0
    try {
      while ((await s.rollup.refreshDirty(t.db, { limit: 3 })).remaining > 0);
      await expectFleetTruth(s, minMax)
      await insertSpend(t.db, 3, '2025-06-20T10:00:00Z', 'a', '5')
      await sql`delete from spend where tenant_id = 2 and paid_at >= '2025-10-01' and paid_at < '2025-11-01'`.execute(t.db)
      bulkDrain.rowsPerBucket = 1_000_000_000
      while ((await s.rollup.refreshDirty(t.db, { limit: 50 })).remaining > 0);
    } finally {
      bulkDrain.rowsPerBucket = 1000
    }
    await s.rollup.untrack(t.db)
    await expectFleetTruth(s, minMax)
  })

  itUnless(minMax && 'a level that recomputes rewrites its months whole: only a delta-kept level skips unchanged rows')(
    'a refresh rewrites only the fleet rows whose delta is not zero (the groups that changed)',
    async () => {
      // Each fleet row's tuple version (xmin) and place (ctid): an update, even to the same values, gives a new one.
      const versions = async () => {
        const { rows } = await sql<{ month: string; category: string | null; v: string }>`
        select to_char(month, 'YYYY-MM') as month, category, xmin::text || ctid::text as v
        from ${sql.raw(s.fleet.qualified)} where month = '2025-05-01'`.execute(t.db)
        return new Map(rows.map((r) => [`${r.month}/${r.category}`, r.v]))
      }
      const refresh = () => s.rollup.refreshAt(t.db, { tenantId: 4, moment: '2025-05-15T12:00:00Z' })
      await refresh()
      const before = await versions()
      expect(before.size).toBeGreaterThan(1)
      await refresh() // nothing changed: no fleet row is written
      expect(await versions()).toEqual(before)
      await insertSpend(t.db, 4, '2025-05-15T10:00:00Z', 'b', '3.50') // one group changes
      await refresh()
      const after = await versions()
      const rewritten = [...after].filter(([k, v]) => before.get(k) !== v).map(([k]) => k)
      expect(rewritten).toEqual(['2025-05/b'])
      await expectFleetTruth(s, minMax)
    },
  )

  it('readAcross reads the rollup table when a view needs tenant detail or groups the level does not keep', async () => {
    for (const o of [
      { groupBy: ['channel'] },
      { groupBy: ['category'], perTenant: true },
      { groupBy: [], tenants: [1, 2] },
      { groupBy: [], top: { by: 'total', n: 2 } },
    ]) {
      const query = s.rollup.readAcrossQuery(t.db, { from: '2025-01', to: '2025-12', ...o }).compile(t.db).sql
      expect(query).not.toContain(s.fleet.qualified)
      expect(query).toContain(s.target.qualified)
    }
  })

  it('a failure between the tenant write and the fleet write leaves neither (and the next refresh works)', async () => {
    // A trigger that fails every write of the fleet table: the fleet's statement fails after the tenant's.
    await sql
      .raw(
        `create function ${name}_fail() returns trigger language plpgsql as $$ begin raise exception 'fleet write refused'; end $$;
      create trigger ${name}_fail before insert or update or delete on ${s.fleet.qualified} for each statement execute function ${name}_fail()`,
      )
      .execute(t.db)
    const before = await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)
    await insertSpend(t.db, 2, '2025-05-05T12:00:00Z', 'b', '99.00')
    await expect(s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-05-05' })).rejects.toThrow(/fleet write refused/)
    await expect(s.rollup.rebuild(t.db, { tenantId: 2, since: '2025-05', until: '2025-06' })).rejects.toThrow(/fleet write refused/)
    expect((await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)).rows).toEqual(before.rows)
    await sql.raw(`drop trigger ${name}_fail on ${s.fleet.qualified}`).execute(t.db)
    await s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-05-05' })
    await expectFleetTruth(s, minMax)
    // A large drain: its tenants' statements run, then the level's recomputation fails — the drain
    // leaves nothing (rollup rows and dirty keys as they were) and the next drain finishes it.
    await s.rollup.track(t.db)
    bulkDrain.rowsPerBucket = 1_000_000_000
    try {
      await insertSpend(t.db, 3, '2025-05-06T12:00:00Z', 'a', '7.00')
      await sql
        .raw(
          `create trigger ${name}_fail before insert or update or delete on ${s.fleet.qualified} for each statement execute function ${name}_fail()`,
        )
        .execute(t.db)
      const rollupRows = await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)
      await expect(s.rollup.refreshDirty(t.db)).rejects.toThrow(/fleet write refused/)
      expect((await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)).rows).toEqual(rollupRows.rows)
      await sql.raw(`drop trigger ${name}_fail on ${s.fleet.qualified}`).execute(t.db)
      expect((await s.rollup.refreshDirty(t.db)).buckets).toBeGreaterThan(0) // the keys were still there
    } finally {
      bulkDrain.rowsPerBucket = 1000
      await s.rollup.untrack(t.db)
    }
    await expectFleetTruth(s, minMax)
  })

  withServer("a large drain's recomputation beside a tenant's refresh of the same fleet month loses no update", async () => {
    const other = await connect(t.url!, { maxConnections: 1 })
    await s.rollup.track(t.db)
    bulkDrain.rowsPerBucket = 1_000_000_000
    try {
      for (let round = 0; round < 3; round++) {
        await insertSpend(t.db, 4, '2025-09-10T12:00:00Z', 'b', `${round + 1}.00`) // tracked: the drain's
        await insertSpend(t.db, 5, '2025-09-11T12:00:00Z', 'b', `${round + 20}.00`) // refreshed by hand
        const both = await Promise.all([s.rollup.refreshDirty(t.db), s.rollup.refreshAt(other, { tenantId: 5, moment: '2025-09-11' })])
        expect(both[0].buckets).toBeGreaterThan(0)
        while ((await s.rollup.refreshDirty(t.db)).remaining > 0);
        await expectFleetTruth(s, minMax)
      }
    } finally {
      bulkDrain.rowsPerBucket = 1000
      await s.rollup.untrack(t.db)
      await other.close()
    }
  })

  withServer('two refreshes of different tenants on one fleet bucket at once lose no update', async () => {
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      for (let round = 0; round < 3; round++) {
        await insertSpend(t.db, 1, '2025-08-10T12:00:00Z', 'a', `${round + 1}.00`)
        await insertSpend(t.db, 3, '2025-08-11T12:00:00Z', 'a', `${round + 10}.00`)
        // The first refresh holds its transaction open after writing; the second starts meanwhile.
        const first = heldOpen(t.db, (trx) => s.rollup.refreshAt(trx, { tenantId: 1, moment: '2025-08-10' }))
        await first.started
        const second = s.rollup.refreshAt(other, { tenantId: 3, moment: '2025-08-11' })
        await new Promise((r) => setTimeout(r, 150))
        first.release()
        await Promise.all([first.done, second])
        await expectFleetTruth(s, minMax)
      }
    } finally {
      await other.close()
    }
  })
})

describe('fleet level refusals', () => {
  it('a measure that does not combine across tenants is refused when the rollup is declared', () => {
    const target = rollupTable('refused_monthly', { groupBy: {}, measures: { avg: 'numeric', users: 'bigint' }, tenantType: 'bigint' })
    const fleet = fleetTable('refused_fleet', { of: target })
    const declare = (measures: { avg: RawBuilder<unknown>; users: RawBuilder<unknown> }) =>
      new MonthlyRollup({ source: 'spend', target, at: 'paid_at', tenant: 'tenant_id', groupBy: [], measures, zone: ZONE, fleet })
    expect(() => declare({ avg: sql`sum(amount) / count(*)`, users: sql`count(*)` })).toThrow(InvalidArgumentError)
    expect(() => declare({ avg: sql`sum(amount)`, users: sql`count(distinct tenant_id)` })).toThrow(/cannot combine measure users/)
    expect(() => declare({ avg: sql`sum(amount)`, users: sql`count(*)` })).not.toThrow()
  })

  it('bad declarations are typed', () => {
    const target = rollupTable('decl_monthly', { groupBy: { category: 'text' }, measures: { n: 'integer' } })
    expect(() => fleetTable('decl_fleet', { of: target, groupBy: ['nope'] })).toThrow(InvalidArgumentError)
    expect(() => fleetTable('decl fleet', { of: target })).toThrow()
    expect(() => fleetTable('decl_monthly', { of: target })).toThrow(InvalidArgumentError)
    expect(() => fleetTable('decl_fleet', { of: {} as RollupTable })).toThrow(InvalidArgumentError)
    const other = rollupTable('decl_other', { groupBy: { category: 'text' }, measures: { n: 'integer' } })
    expect(
      () =>
        new MonthlyRollup({
          source: 'spend',
          target,
          at: 'paid_at',
          tenant: 'tenant_id',
          groupBy: ['category'],
          measures: { n: sql`count(*)` },
          zone: ZONE,
          fleet: fleetTable('decl_fleet', { of: other }),
        }),
    ).toThrow(InvalidArgumentError)
    const rls = rollupTable('decl_rls', { groupBy: {}, measures: { lo: 'numeric' }, isolation: 'rls' })
    expect(
      () =>
        new MonthlyRollup({
          source: 'spend',
          target: rls,
          at: 'paid_at',
          tenant: 'tenant_id',
          groupBy: [],
          measures: { lo: sql`min(amount)` },
          zone: ZONE,
          fleet: fleetTable('decl_rls_fleet', { of: rls }),
        }),
    ).toThrow(/row-level security/)
  })

  it('a missing fleet table is a MigrationRequiredError before anything is written; a rollup that does not declare an existing level is refused', async () => {
    const s = declare('spend_missing', { minMax: false })
    await s.target.create(t.db)
    await expect(s.rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(MigrationRequiredError)
    await expect(s.rollup.readAcross(t.db, { from: '2025-01', to: '2025-02', groupBy: [] })).rejects.toThrow(MigrationRequiredError)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from spend_missing`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
    await s.fleet.create(t.db)
    await s.rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })
    const undeclared = new MonthlyRollup({
      source: 'spend',
      target: s.target,
      at: 'paid_at',
      tenant: 'tenant_id',
      groupBy: ['category', 'channel'],
      measures: { total: sql`sum(amount)`, n: sql`count(*)` },
      zone: ZONE,
    })
    await expect(undeclared.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(SchemaMismatchError)
  })
})
