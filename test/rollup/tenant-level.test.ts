import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql, type Kysely } from 'kysely'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { pgscale } from '../../cli/pgscale.js'
import {
  fleetTable,
  InvalidArgumentError,
  MigrationRequiredError,
  MonthlyRollup,
  rollupTable,
  SchemaMismatchError,
  type FleetTable,
  type RollupTable,
} from '../../src/index.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { itUnless } from '../support/skip.js'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { useTestDatabase } from '../support/test-database.js'
import { createSpend, insertSpend } from './spend-fixture.js'
import { canonicalRows } from './canonical-rows.js'

/**
 * The per-tenant level (`fleetTable(…, { perTenant: true })`, issue #43): one row per tenant,
 * month and kept group, written by the tenant's own refresh statement from the rows it wrote —
 * exact against a from-scratch aggregate of the source after fills, refreshes, rebuilds, moves,
 * deletes (an emptied bucket leaves no row) and drains, beside a level without the tenant (both
 * declared as an array); `readAcross` reads it for views with tenant detail and no dropped group;
 * a failure in its write leaves neither; the refusals, typed; the record keeps both levels; and
 * under row-level security it has the tenant policy (the runtime role's tenant sees its own rows).
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'tenant_level')
const ZONE = 'Europe/Madrid'
const month = sql`date_trunc('month', paid_at at time zone ${sql.lit(ZONE)})::date`

interface Setup {
  target: RollupTable
  fleet: FleetTable
  byTenant: FleetTable
  rollup: MonthlyRollup
  /** The same rollup without levels: what filled the rollup table before they existed, and the reads they must equal. */
  plain: MonthlyRollup
  config: ConstructorParameters<typeof MonthlyRollup>[0]
}

/** A rollup of `spend` into `name` with a fleet level by category and a per-tenant level keeping `tenantGroups`. */
function declare(
  name: string,
  options: { minMax: boolean; tenantGroups?: string[]; isolation?: 'rls'; source?: string; deferred?: boolean },
): Setup {
  const target: RollupTable = rollupTable(name, {
    groupBy: { category: 'text', channel: 'text' },
    measures: { total: 'numeric(14,2)', n: 'integer', ...(options.minMax ? { lo: 'numeric(10,2)', hi: 'numeric(10,2)' } : {}) },
    tenantType: options.isolation ? 'text' : 'bigint',
    ...(options.isolation ? { isolation: options.isolation } : {}),
  })
  const deferred = options.deferred === true
  const fleet = fleetTable(`${name}_fleet`, { of: target, groupBy: ['category'], deferred })
  const byTenant = fleetTable(`${name}_by_tenant`, { of: target, groupBy: options.tenantGroups ?? [], perTenant: true, deferred })
  const config = {
    source: options.source ?? 'spend',
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
  // A level without the tenant that recomputes (min/max) is refused under row-level security: the per-tenant level alone there.
  const levels = options.isolation && options.minMax ? [byTenant] : [fleet, byTenant]
  return { target, fleet, byTenant, rollup: new MonthlyRollup({ ...config, fleet: levels }), plain: new MonthlyRollup(config), config }
}

const norm = (rows: ReadonlyArray<Record<string, unknown>>) => canonicalRows(rows, { months: true })

/** The per-tenant level from scratch: the source by tenant, month and kept groups. */
async function truth(
  db: Kysely<any>,
  s: Setup,
  minMax: boolean,
  source = 'spend',
  where = sql`${month} between '2025-01-01' and '2025-12-01'`,
) {
  const groups = s.byTenant.groupBy.map((g) => sql.raw(`"${g}"`))
  const { rows } = await sql<Record<string, unknown>>`
    select tenant_id::text as tenant_id, to_char(${month}, 'YYYY-MM') as month${groups.length ? sql`, ${sql.join(groups)}` : sql``},
      sum(amount)::text as total, count(*)::int as n
      ${minMax ? sql`, min(amount)::text as lo, max(amount)::text as hi` : sql``}
    from ${sql.table(source)} where ${where} group by ${sql.join([sql`tenant_id`, month, ...groups])}`.execute(db)
  return norm(rows)
}

/** The per-tenant level's stored rows (as the owner). */
async function stored(db: Kysely<any>, s: Setup) {
  const { rows } = await sql<Record<string, unknown>>`
    select * from ${sql.raw(s.byTenant.qualified)} where month between '2025-01-01' and '2025-12-01'`.execute(db)
  return norm(rows.map((r) => ({ ...r, tenant_id: String(r.tenant_id) })))
}

/** The views whose answers must not change with the levels, and the table each must read. */
function views(s: Setup): Array<{ options: Record<string, unknown>; reads: string }> {
  const keepsCategory = s.byTenant.groupBy.includes('category')
  return [
    { options: { groupBy: [], top: { by: 'total', n: 2 } }, reads: s.byTenant.qualified },
    { options: { groupBy: [], perTenant: true }, reads: s.byTenant.qualified },
    { options: { groupBy: [], tenants: [1, 2] }, reads: s.byTenant.qualified },
    { options: { groupBy: [], combineMonths: true, top: { by: 'n', n: 3, order: 'asc' } }, reads: s.byTenant.qualified },
    { options: { groupBy: ['category'], perTenant: true }, reads: keepsCategory ? s.byTenant.qualified : s.target.qualified },
    { options: { groupBy: ['channel'], perTenant: true }, reads: s.target.qualified },
    { options: { groupBy: [] }, reads: s.fleet.qualified },
    { options: { groupBy: ['category'] }, reads: s.fleet.qualified },
  ]
}

async function expectExact(s: Setup, minMax: boolean) {
  expect(await stored(t.db, s)).toEqual(await truth(t.db, s, minMax))
  for (const v of views(s)) {
    const options = { from: '2025-01', to: '2025-12', ...v.options }
    const query = s.rollup.readAcrossQuery(t.db, options).compile(t.db).sql
    expect(query, JSON.stringify(v.options)).toContain(`from ${v.reads} as r`)
    expect(norm(await s.rollup.readAcross(t.db, options)), JSON.stringify(v.options)).toEqual(norm(await s.plain.readAcross(t.db, options)))
  }
}

beforeAll(async () => {
  await createSpend(t.db, 'spend', 'bigint')
})

describe.each([
  ['sums and counts, no group kept', false, []],
  ['min and max, no group kept', true, []],
  ['sums and counts, category kept', false, ['category']],
] as const)('a per-tenant level beside a fleet level (%s)', (_label, minMax, tenantGroups) => {
  const name = `tl_${minMax ? 'mm' : 'sc'}_${tenantGroups.length}`
  const s = declare(name, { minMax, tenantGroups: [...tenantGroups] })

  it('is filled by create, kept exact by refreshAt, rebuild, moves, deletes and the drain, and read by readAcross', async () => {
    await s.target.create(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await s.plain.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await s.fleet.create(t.db)
    await s.byTenant.create(t.db) // filled from the rollup table
    await expectExact(s, minMax)
    await insertSpend(t.db, 2, '2025-03-31T23:30:00Z', 'a', '12.34')
    await s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-04-01T00:30:00+02:00' })
    await sql`update spend set tenant_id = 6, paid_at = paid_at - interval '40 days', category = 'z' where id in (7, 8, 9)`.execute(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await s.rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await expectExact(s, minMax)
    // A bucket emptied: tenant 3's March gone from the source leaves no row in the level.
    await sql`delete from spend where tenant_id = 3 and paid_at >= '2025-03-05' and paid_at < '2025-03-25'`.execute(t.db)
    await sql`delete from spend where tenant_id = 3 and ${month} = '2025-03-01'`.execute(t.db)
    await s.rollup.refreshAt(t.db, { tenantId: 3, moment: '2025-03-15' })
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from ${sql.raw(s.byTenant.qualified)} where tenant_id = 3 and month = '2025-03-01'`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
    await expectExact(s, minMax)
    // Tracked writes, healed by the drain (several tenants and months per claim).
    await s.rollup.track(t.db)
    await insertSpend(t.db, 4, '2025-06-15T10:00:00Z', 'c', null)
    await sql`update spend set amount = amount + 1 where tenant_id = 5 and paid_at < '2025-03-01'`.execute(t.db)
    await sql`delete from spend where tenant_id = 1 and paid_at >= '2025-11-01'`.execute(t.db)
    while ((await s.rollup.refreshDirty(t.db, { limit: 3 })).remaining > 0);
    await s.rollup.untrack(t.db)
    await expectExact(s, minMax)
  })

  it('a fresh view reads the source, not a level', () => {
    const query = s.rollup.readAcrossQuery(t.db, { from: '2025-01', to: '2025-12', groupBy: [], fresh: true, top: { by: 'total', n: 2 } })
    expect(query.compile(t.db).sql).not.toContain(s.byTenant.qualified)
  })

  it('a failure in the per-tenant level write leaves neither the bucket nor the levels written (and the next refresh works)', async () => {
    await sql
      .raw(
        `create function ${name}_fail() returns trigger language plpgsql as $$ begin raise exception 'tenant level write refused'; end $$;
      create trigger ${name}_fail before insert or delete on ${s.byTenant.qualified} for each statement execute function ${name}_fail()`,
      )
      .execute(t.db)
    const before = await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)
    const fleetBefore = await sql`select * from ${sql.raw(s.fleet.qualified)} order by 1, 2`.execute(t.db)
    await insertSpend(t.db, 2, '2025-05-05T12:00:00Z', 'b', '99.00')
    await expect(s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-05-05' })).rejects.toThrow(/tenant level write refused/)
    await expect(s.rollup.rebuild(t.db, { tenantId: 2, since: '2025-05', until: '2025-06' })).rejects.toThrow(/tenant level write refused/)
    expect((await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)).rows).toEqual(before.rows)
    expect((await sql`select * from ${sql.raw(s.fleet.qualified)} order by 1, 2`.execute(t.db)).rows).toEqual(fleetBefore.rows)
    await sql.raw(`drop trigger ${name}_fail on ${s.byTenant.qualified}`).execute(t.db)
    await s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-05-05' })
    await expectExact(s, minMax)
  })
})

describe('per-tenant level refusals and records', () => {
  const target: RollupTable = rollupTable('tl_decl', {
    groupBy: { category: 'text' },
    measures: { n: 'integer', avg: 'numeric' },
    tenantType: 'bigint',
  })
  const base = {
    source: 'spend',
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { n: sql`count(*)`, avg: sql`sum(amount)` },
    zone: ZONE,
  }

  it('bad declarations are InvalidArgumentErrors', () => {
    expect(() => fleetTable('tl_decl_t', { of: target, groupBy: ['category'], perTenant: true })).toThrow(InvalidArgumentError)
    expect(() => fleetTable('tl_decl_t', { of: target, groupBy: ['category'], perTenant: true })).toThrow(/must drop a group/)
    expect(() => fleetTable('tl_decl_t', { of: target, perTenant: 'yes' as unknown as boolean })).toThrow(InvalidArgumentError)
    const byTenant = fleetTable('tl_decl_t', { of: target, perTenant: true })
    expect(byTenant.groupBy).toEqual([])
    expect(() => new MonthlyRollup({ ...base, fleet: [] })).toThrow(InvalidArgumentError)
    expect(() => new MonthlyRollup({ ...base, fleet: [byTenant, fleetTable('tl_decl_t', { of: target, perTenant: true })] })).toThrow(
      /declared twice/,
    )
    expect(() => new MonthlyRollup({ ...base, fleet: [byTenant, null as unknown as FleetTable] })).toThrow(InvalidArgumentError)
    // A measure that does not combine over the dropped groups.
    expect(() => new MonthlyRollup({ ...base, measures: { ...base.measures, avg: sql`avg(amount)` }, fleet: byTenant })).toThrow(
      /cannot combine measure avg across groups/,
    )
    expect(() => new MonthlyRollup({ ...base, fleet: [fleetTable('tl_decl_f', { of: target }), byTenant] })).not.toThrow()
  })

  it('a per-tenant level that recomputes is allowed under row-level security (its rows are the tenant’s)', () => {
    const rls: RollupTable = rollupTable('tl_decl_rls', { groupBy: { category: 'text' }, measures: { lo: 'numeric' }, isolation: 'rls' })
    const declare = (fleet: FleetTable) => new MonthlyRollup({ ...base, target: rls, measures: { lo: sql`min(amount)` }, fleet: [fleet] })
    expect(() => declare(fleetTable('tl_decl_rls_t', { of: rls, perTenant: true }))).not.toThrow()
    expect(() => declare(fleetTable('tl_decl_rls_f', { of: rls }))).toThrow(/row-level security/)
  })

  it('a missing per-tenant table is a MigrationRequiredError; a rollup that does not declare it is refused; the record keeps both levels', async () => {
    const s = declare('tl_missing', { minMax: false })
    await s.target.create(t.db)
    await s.fleet.create(t.db)
    await expect(s.rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(MigrationRequiredError)
    await expect(s.rollup.readAcross(t.db, { from: '2025-01', to: '2025-02', groupBy: [], top: { by: 'n', n: 1 } })).rejects.toThrow(
      MigrationRequiredError,
    )
    await s.byTenant.create(t.db)
    await s.rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })
    const onlyFleet = new MonthlyRollup({ ...s.config, fleet: s.fleet })
    await expect(onlyFleet.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(SchemaMismatchError)
    await expect(onlyFleet.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(/perTenant: true/)
    await s.rollup.track(t.db)
    const found = (await MonthlyRollup.tracked(t.db)).find((r) => r.parts.target.name === 'tl_missing')
    expect(found?.parts.levels?.map((l) => [l.name, l.perTenant, [...l.groupBy]])).toEqual([
      ['tl_missing_fleet', false, ['category']],
      ['tl_missing_by_tenant', true, []],
    ])
    await insertSpend(t.db, 2, '2025-02-10T10:00:00Z', 'a', '5.00')
    while ((await found!.refreshDirty(t.db, { limit: 50 })).remaining > 0);
    expect(await stored(t.db, s)).toEqual(await truth(t.db, s, false, 'spend', sql`tenant_id in (1, 2) and ${month} = '2025-02-01'`))
    await s.rollup.untrack(t.db)
  })
})

describe.each([
  ['kept by writes', false],
  ['both deferred', true],
] as const)('under row-level security, through migrationSql and the runtime role: levels %s', (_label, deferred) => {
  const name = deferred ? 'tl_rls_def' : 'tl_rls'
  const source = deferred ? 'tl_spend_def' : 'tl_spend'
  it('the per-tenant level has the tenant policy: the role’s tenant sees its own rows; refreshes, drains and reads as the role stay exact', async () => {
    await app.create()
    await createSpend(t.db, source, 'text')
    await sql.raw(`grant select, insert, update, delete on ${source} to ${app.name}`).execute(t.db)
    const s = declare(name, { minMax: false, isolation: 'rls', source, deferred })
    const text = await s.rollup.migrationSql(t.db, { runtimeRole: app.name })
    expect(text).toMatch(new RegExp(`create table if not exists "${name}_by_tenant"`))
    await sql.raw(text).execute(t.db)
    await sql.raw(text).execute(t.db) // a second run changes nothing
    for (const tenant of ['1', '2', '3', '4', '5']) await s.rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await sql`update ${sql.table(source)} set amount = amount + 2 where tenant_id in ('1', '4') and paid_at < '2025-04-01'`.execute(t.db)
    await app.as(async (db) => {
      const { rollup } = declare(name, { minMax: false, isolation: 'rls', source, deferred })
      while ((await rollup.refreshDirty(db, { limit: 40 })).remaining > 0);
      await rollup.refreshAt(db, { tenantId: '2', moment: '2025-03-15' })
      if (deferred) {
        // As the role with tenant 1 set: its own pending buckets only; the fleet level's pending months not at all.
        const marks = await db.transaction().execute(async (trx) => {
          await sql`select set_config('pgscale.tenant_id', '1', true)`.execute(trx)
          const own = await sql<{ bad: number; n: number }>`
            select count(*) filter (where tenant_id <> '1')::int as bad, count(*)::int as n from ${sql.table(`${name}_by_tenant_pending`)}`.execute(
            trx,
          )
          const months = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${name}_fleet_pending`)}`.execute(trx)
          return { ...own.rows[0]!, months: months.rows[0]!.n }
        })
        expect(marks).toMatchObject({ bad: 0, months: 0 })
        expect(marks.n).toBeGreaterThan(0)
        // The views are exact with everything pending, then the role brings the levels up to date.
        const pendingTop = await rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: [], top: { by: 'total', n: 2 } })
        expect(norm(pendingTop)).toEqual(
          norm(await s.plain.readAcross(t.db, { from: '2025-01', to: '2025-12', groupBy: [], top: { by: 'total', n: 2 } })),
        )
        expect((await rollup.refreshFleet(db, { limit: 10_000 })).remaining).toBe(0)
      }
      const top = await rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: [], top: { by: 'total', n: 2 } })
      const plain = await s.plain.readAcross(t.db, { from: '2025-01', to: '2025-12', groupBy: [], top: { by: 'total', n: 2 } })
      expect(norm(top)).toEqual(norm(plain))
      const seen = await db.transaction().execute(async (trx) => {
        await sql`select set_config('pgscale.tenant_id', '1', true)`.execute(trx)
        return (
          await sql<{ bad: number; n: number }>`
          select count(*) filter (where tenant_id <> '1')::int as bad, count(*)::int as n from ${sql.table(`${name}_by_tenant`)}`.execute(
            trx,
          )
        ).rows[0]!
      })
      expect(seen.bad).toBe(0)
      expect(seen.n).toBeGreaterThan(0)
      const none = await db
        .transaction()
        .execute(
          async (trx) => (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${name}_by_tenant`)}`.execute(trx)).rows[0]!,
        )
      expect(none.n).toBe(0)
    })
    expect(await stored(t.db, s)).toEqual(await truth(t.db, s, false, source))
  })
})

describe('pgscale migrate (the ops CLI) creates every declared level', () => {
  const needsUrl = itUnless(!t.target.url && 'the ops CLI connects by URL (--pg / DATABASE_URL); PGlite lives in one process')
  afterAll(() => removeTempDirs())

  needsUrl('both levels made and filled by migrate, then kept by the rollup', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url))
    const file = join(tempDir('pgscale-tl-'), 'pgscale.config.ts')
    writeFileSync(
      file,
      `import { sql } from ${JSON.stringify(join(root, 'node_modules/kysely/dist/esm/index.js'))}
import { defineConfig, fleetTable, MonthlyRollup, rollupTable } from ${JSON.stringify(join(root, 'src/index.ts'))}
const target = rollupTable('tl_cli', { groupBy: { category: 'text', channel: 'text' }, measures: { total: 'numeric(14,2)', n: 'integer' }, tenantType: 'bigint' })
const rollup = new MonthlyRollup({
  source: 'spend', target, at: 'paid_at', tenant: 'tenant_id', groupBy: ['category', 'channel'],
  measures: { total: sql\`sum(amount)\`, n: sql\`count(*)\` }, zone: ${JSON.stringify(ZONE)},
  fleet: [fleetTable('tl_cli_fleet', { of: target, groupBy: ['category'] }), fleetTable('tl_cli_by_tenant', { of: target, perTenant: true })],
})
export default defineConfig({ rollups: [rollup] })
`,
    )
    const s = declare('tl_cli', { minMax: false })
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    try {
      expect(await pgscale(['migrate', '--pg', t.url!, '--config', file])).toBe(0)
    } finally {
      vi.restoreAllMocks()
    }
    for (let tenant = 1; tenant <= 6; tenant++) await s.rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    expect(await stored(t.db, s)).toEqual(await truth(t.db, s, false))
  })
})
