import { sql, type Kysely } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { runDrain } from '../../cli/pgscale-drain.js'
import {
  fleetTable,
  MonthlyRollup,
  recordedObjects,
  rollupTable,
  type FleetTable,
  type RecordedRollup,
  type RollupTable,
} from '../../src/index.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { useTestDatabase } from '../support/test-database.js'
import { canonicalRows } from './canonical-rows.js'

/**
 * The fleet level (`fleetTable`) outside the app's process (issue #43): kept in the rollup's
 * record so `pgscale drain` from the records keeps it exact (and a record written before fleet
 * levels were recorded finds it in the catalog); created by `migrationSql`'s plain SQL, which a
 * runtime role then refreshes and reads through; and under row-level security, where the fleet
 * table (no tenant column, every row a combination of tenants) is seen only by pgscale's
 * fleet-wide work and a tenant refresh's own delta, never by the app's tenant-scoped SQL.
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'fleet_ops')
const ZONE = 'Europe/Madrid'
const month = sql`date_trunc('month', paid_at at time zone ${sql.lit(ZONE)})::date`

interface Declared {
  target: RollupTable
  fleet: FleetTable
  rollup: MonthlyRollup
}

/** A rollup of `source` into `name` (sums and counts: a delta-kept level) with a fleet level by category. */
function declare(name: string, source: string, options: { isolation?: 'rls'; tenantType?: string } = {}): Declared {
  const target = rollupTable(name, {
    groupBy: { category: 'text', channel: 'text' },
    measures: { total: 'numeric(14,2)', n: 'integer' },
    tenantType: options.tenantType ?? 'bigint',
    ...(options.isolation ? { isolation: options.isolation } : {}),
  })
  const fleet = fleetTable(`${name}_fleet`, { of: target, groupBy: ['category'] })
  const rollup = new MonthlyRollup({
    source,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category', 'channel'],
    measures: { total: sql`sum(amount)`, n: sql`count(*)` },
    zone: ZONE,
    fleet,
  })
  return { target, fleet, rollup }
}

/** `source`'s fleet by month (and category), from scratch. */
async function truth(db: Kysely<any>, source: string, keep: string[]) {
  const groups = keep.map((g) => sql.raw(`"${g}"`))
  const { rows } = await sql<Record<string, unknown>>`
    select to_char(${month}, 'YYYY-MM') as month${groups.length ? sql`, ${sql.join(groups)}` : sql``},
      sum(amount)::numeric(14,2)::text as total, count(*)::int as n
    from ${sql.table(source)} where ${month} between '2025-01-01' and '2025-12-01' group by ${sql.join([month, ...groups])}`.execute(db)
  return canonicalRows(rows)
}

/** readAcross through the fleet level (checked to read it) equals the from-scratch aggregate, by category and by month. */
async function expectFleetTruth(db: Kysely<any>, d: Declared, source: string) {
  for (const keep of [['category'], []]) {
    const query = d.rollup.readAcrossQuery(db, { from: '2025-01', to: '2025-12', groupBy: keep }).compile(db).sql
    expect(query).toContain(d.fleet.qualified)
    const rows = await d.rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: keep })
    expect(canonicalRows(rows), `fleet by [${keep}]`).toEqual(await truth(t.db, source, keep))
  }
}

async function createSource(name: string, tenant: 'bigint' | 'text') {
  await sql`create table ${sql.table(name)} (id bigserial primary key, tenant_id ${sql.raw(tenant)} not null, paid_at timestamptz not null,
    category text, channel text, amount numeric(10,2))`.execute(t.db)
  await sql`create index on ${sql.table(name)} (tenant_id, paid_at)`.execute(t.db)
}

/** Writes from plain SQL: rows of 4 tenants over the year, an update that moves rows, a delete. */
async function plainWrites(source: string, seed: number) {
  const tenant = sql.raw(`(1 + (i + ${seed}) % 4)`)
  await sql`insert into ${sql.table(source)} (tenant_id, paid_at, category, channel, amount)
    select ${tenant}, timestamptz '2025-01-01 00:00+00' + ((i * 7 + ${seed}) % 330) * interval '1 day',
      case when i % 9 = 0 then null else (array['a', 'b', 'c'])[1 + i % 3] end, (array['web', 'shop'])[1 + i % 2], (i % 50) - 5
    from generate_series(1, 160) as g(i)`.execute(t.db)
  await sql`update ${sql.table(source)} set tenant_id = 4, paid_at = paid_at - interval '35 days' where id % 17 = ${seed % 17}`.execute(
    t.db,
  )
  await sql`delete from ${sql.table(source)} where id % 23 = ${seed % 23}`.execute(t.db)
}

const quiet = { log: () => {}, print: () => {}, onInterrupt: () => {} }

describe('the fleet level in the rollup record: pgscale drain from the records', () => {
  const d = declare('rec_monthly', 'rec_spend')
  beforeAll(async () => {
    await createSource('rec_spend', 'bigint')
    await d.target.create(t.db)
    await d.fleet.create(t.db)
    await d.rollup.track(t.db)
  })

  it('track records the level; drain from the records (no app code) keeps the fleet table exact; doctor knows its table', async () => {
    const [record] = await MonthlyRollup.tracked(t.db)
    expect(record!.parts.fleet).toMatchObject({ name: 'rec_monthly_fleet', groupBy: ['category'] })
    const { rows } = await sql<{
      config: { fleet?: unknown }
    }>`select config from pgscale_object_version where object = 'rollup:public.rec_monthly'`.execute(t.db)
    expect(rows[0]!.config.fleet).toEqual({ name: 'rec_monthly_fleet', groupBy: ['category'] })
    await plainWrites('rec_spend', 1)
    const outcome = await runDrain(t.db, {}, { once: true, limit: 50 }, quiet)
    expect(outcome.exitCode).toBe(0)
    expect((outcome.report as { rollups: Record<string, number> }).rollups.rec_monthly).toBeGreaterThan(0)
    await expectFleetTruth(t.db, d, 'rec_spend')
    const objects = await recordedObjects(t.db)
    expect(objects.find((o) => o.key === 'rollup:public.rec_monthly')).toMatchObject({
      relations: ['"public"."rec_monthly"', 'rec_spend', 'rec_monthly_fleet'],
      missing: [],
    })
  })

  it('a record written before fleet levels were recorded still reads: the level is found from its table in the catalog', async () => {
    await sql`update pgscale_object_version set config = config - 'fleet' where object = 'rollup:public.rec_monthly'`.execute(t.db)
    const [rebuilt] = await MonthlyRollup.tracked(t.db)
    expect(rebuilt!.parts.fleet).toMatchObject({ name: 'rec_monthly_fleet', groupBy: ['category'] })
    await plainWrites('rec_spend', 2)
    await runDrain(t.db, {}, { once: true, limit: 1000 }, quiet)
    await expectFleetTruth(t.db, d, 'rec_spend')
    // The old record itself still reads: rebuilt from it alone (no catalog), the rollup has no level.
    const { rows } = await sql<{
      config: RecordedRollup
    }>`select config from pgscale_object_version where object = 'rollup:public.rec_monthly'`.execute(t.db)
    expect(rows[0]!.config.fleet).toBeUndefined()
    expect(MonthlyRollup.fromRecord(rows[0]!.config).parts.fleet).toBeUndefined()
  })
})

describe('migrationSql creates the fleet level (plain SQL run by the owner), and the runtime role works through it', () => {
  const d = declare('mig_monthly', 'mig_spend', { isolation: 'rls', tenantType: 'text' })

  it('the owner runs the script (twice: nothing changes); the runtime role refreshes, drains and reads the fleet exactly', async () => {
    await app.create()
    await createSource('mig_spend', 'text')
    await sql.raw(`grant select, insert, update, delete on mig_spend to ${app.name}`).execute(t.db)
    await sql.raw(`grant usage on sequence mig_spend_id_seq to ${app.name}`).execute(t.db)
    const text = await d.rollup.migrationSql(t.db, { runtimeRole: app.name })
    expect(text).toMatch(/create table if not exists "mig_monthly_fleet"/)
    expect(text).toMatch(/lock table "mig_monthly" in share mode/)
    expect(text).toMatch(new RegExp(`grant select, insert, update, delete on "mig_monthly_fleet" to "${app.name}"`))
    await sql.raw(text).execute(t.db)
    await sql.raw(text).execute(t.db)
    await plainWrites('mig_spend', 3) // tracked by the script's triggers
    await app.as(async (db) => {
      const { rollup } = declare('mig_monthly', 'mig_spend', { isolation: 'rls', tenantType: 'text' })
      await rollup.refreshAt(db, { tenantId: '2', moment: '2025-03-15' })
      while ((await rollup.refreshDirty(db, { limit: 40 })).remaining > 0);
      await expectFleetTruth(db, { ...d, rollup }, 'mig_spend')
      // A tenant's refresh as the role, after a write of its own: the fleet stays exact.
      await sql`insert into mig_spend (tenant_id, paid_at, category, channel, amount) values ('3', '2025-05-05T10:00:00Z', 'a', 'web', 42)`.execute(
        t.db,
      )
      await rollup.refreshAt(db, { tenantId: '3', moment: '2025-05-05T10:00:00Z' })
      await rollup.rebuild(db, { tenantId: '1', since: '2025-01', until: '2025-12' })
      await expectFleetTruth(db, { ...d, rollup }, 'mig_spend')
    })
  })

  it('as the runtime role, pgscale drain from the records (isolation from the catalog, the level from the record) keeps the fleet exact', async () => {
    await plainWrites('mig_spend', 5)
    await app.as(async (db) => {
      const found = (await MonthlyRollup.tracked(db)).find((r) => r.parts.target.name === 'mig_monthly')
      expect(found?.parts.target.isolation).toBe('rls')
      expect(found?.parts.fleet?.name).toBe('mig_monthly_fleet')
      const outcome = await runDrain(db, {}, { once: true, limit: 1000, rollup: 'mig_monthly' }, quiet)
      expect((outcome.report as { rollups: Record<string, number> }).rollups.mig_monthly).toBeGreaterThan(0)
      await expectFleetTruth(db, d, 'mig_spend')
    })
  })

  it("under row-level security the fleet table is fleet-wide admin data: the app's tenant-scoped SQL as the role sees no row of it", async () => {
    const { rows: all } = await sql<{ n: number }>`select count(*)::int as n from mig_monthly_fleet`.execute(t.db)
    expect(all[0]!.n).toBeGreaterThan(0)
    await app.as(async (db) => {
      const seen = async (settings: Record<string, string>) =>
        db.transaction().execute(async (trx) => {
          for (const [k, v] of Object.entries(settings)) await sql`select set_config(${k}, ${v}, true)`.execute(trx)
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from mig_monthly_fleet`.execute(trx)
          return rows[0]!.n
        })
      expect(await seen({ 'pgscale.tenant_id': '1' }), 'a tenant set').toBe(0)
      expect(await seen({}), 'no setting').toBe(0)
      // Its own tenant rows in the rollup table stay visible; pgscale's fleet-wide work sees the fleet.
      const { rows: mine } = await db.transaction().execute(async (trx) => {
        await sql`select set_config('pgscale.tenant_id', '1', true)`.execute(trx)
        return sql<{
          bad: number
          n: number
        }>`select count(*) filter (where tenant_id <> '1')::int as bad, count(*)::int as n from mig_monthly`.execute(trx)
      })
      expect(mine[0]).toMatchObject({ bad: 0 })
      expect(mine[0]!.n).toBeGreaterThan(0)
      expect(await seen({ 'pgscale.all_tenants': 'on' })).toBe(all[0]!.n)
      // Writing the fleet table from the app's tenant-scoped SQL is refused.
      const err = await db
        .transaction()
        .execute(async (trx) => {
          await sql`select set_config('pgscale.tenant_id', '1', true)`.execute(trx)
          await sql`insert into mig_monthly_fleet (month, category, total, n, pgscale_nn_total, pgscale_nn_n, pgscale_buckets) values ('2025-01-01', 'x', 1, 1, 1, 1, 1)`.execute(
            trx,
          )
        })
        .catch((e: unknown) => e)
      expect(String((err as Error)?.message)).toMatch(/row-level security/)
    })
  })
})
