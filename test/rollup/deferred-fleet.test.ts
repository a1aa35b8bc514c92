import { sql, type Kysely } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { connect, InvalidArgumentError, MigrationRequiredError, MonthlyRollup, rollupTable, SchemaMismatchError } from '../../src/index.js'
import { fleetTable, type FleetTable, type RollupTable } from '../../src/bench-kit.js'
import { itWithServer } from '../support/skip.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'
import { createSpend, insertSpend } from './spend-fixture.js'
import { canonicalRows } from './canonical-rows.js'
import { countingHandle } from './counting-handle.js'
import { heldOpen } from './held-transaction.js'

/**
 * A fleet level kept by the drain (`fleetTable(…, { deferred: true })`): writes only mark their
 * months pending under a shared month lock; `readAcross` reads the level for the other months and
 * the rollup table for the pending ones, so it equals plain SQL GROUP BY over the source at every
 * step; `refreshFleet` (and the drain loop) recompute the pending months. Against the truth after
 * every kind of write; two refreshes of one month at once (neither waits); `refreshFleet` beside a
 * refresh of the same month, both orders; a failure inside each; the refusals.
 */
const t = useTestDatabase()
const withServer = itWithServer(testTarget())
const ZONE = 'Europe/Madrid'

interface Setup {
  target: RollupTable
  fleet: FleetTable
  /** A deferred per-tenant level (tenant × month, the groups dropped), when declared. */
  byTenant?: FleetTable
  rollup: MonthlyRollup
}

/**
 * A rollup of `spend` into `<name>` with a deferred level `<name>_fleet` by category (min/max, which a
 * level kept by writes would recompute); with `byTenant`, a deferred per-tenant level `<name>_by_tenant`
 * beside it, or (`byTenant: 'alone'`) instead of it.
 */
function declare(name: string, options: { fleet?: { deferred?: boolean }; byTenant?: boolean | 'alone' } = {}): Setup {
  const target: RollupTable = rollupTable(name, {
    groupBy: { category: 'text', channel: 'text' },
    measures: { total: 'numeric(14,2)', n: 'integer', lo: 'numeric(10,2)', hi: 'numeric(10,2)' },
    tenantType: 'bigint',
  })
  const fleet = fleetTable(`${name}_fleet`, { of: target, groupBy: ['category'], deferred: options.fleet?.deferred ?? true })
  const byTenant = options.byTenant
    ? fleetTable(`${name}_by_tenant`, { of: target, groupBy: [], perTenant: true, deferred: true })
    : undefined
  const rollup = new MonthlyRollup({
    source: 'spend',
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category', 'channel'],
    measures: { total: sql`sum(amount)`, n: sql`count(*)`, lo: sql`min(amount)`, hi: sql`max(amount)` },
    zone: ZONE,
    fleet: options.byTenant === 'alone' ? byTenant! : byTenant ? [fleet, byTenant] : fleet,
  })
  return { target, fleet, ...(byTenant ? { byTenant } : {}), rollup }
}

const month = sql`date_trunc('month', paid_at at time zone ${sql.lit(ZONE)})::date`

/** The fleet by month and the kept groups, from the source. */
async function truth(db: Kysely<any>, keep: string[], skipMonths: ReadonlySet<string> = new Set()) {
  const groups = keep.map((g) => sql.raw(`"${g}"`))
  const { rows } = await sql<Record<string, unknown>>`
    select to_char(${month}, 'YYYY-MM') as month${groups.length ? sql`, ${sql.join(groups)}` : sql``},
      sum(amount)::text as total, count(*)::int as n, min(amount)::text as lo, max(amount)::text as hi
    from spend where ${month} between '2025-01-01' and '2025-12-01' group by ${sql.join([month, ...groups])}`.execute(db)
  return canonicalRows(rows.filter((r) => !skipMonths.has(String(r.month))))
}

/** Per tenant and month (the groups combined), or the top 2 tenants per month by total, from the source. */
async function truthPerTenant(db: Kysely<any>, top: boolean) {
  const { rows } = await sql<Record<string, unknown>>`
    select * from (
      select to_char(${month}, 'YYYY-MM') as month, tenant_id::text as tenant_id, sum(amount)::text as total, count(*)::int as n,
        min(amount)::text as lo, max(amount)::text as hi,
        row_number() over (partition by ${month} order by sum(amount) desc nulls last, tenant_id)::int as rank
      from spend where ${month} between '2025-01-01' and '2025-12-01' group by ${month}, tenant_id
    ) x ${top ? sql`where rank <= 2` : sql``}`.execute(db)
  return canonicalRows(rows.map(({ rank, ...r }) => (top ? { ...r, rank } : r)))
}

/** readAcross (which reads the level, and the rollup table for pending months) equals the truth. */
async function expectAcrossTruth(s: Setup, db: Kysely<any> = t.db) {
  for (const keep of [['category'], []]) {
    const query = s.rollup.readAcrossQuery(db, { from: '2025-01', to: '2025-12', groupBy: keep }).compile(db).sql
    expect(query).toContain(s.fleet.qualified)
    expect(query).toContain(s.fleet.pending!)
    expect(canonicalRows(await s.rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: keep }))).toEqual(await truth(db, keep))
  }
  if (!s.byTenant) return
  // Views with tenant detail read the deferred per-tenant level, and the rollup table for its pending buckets.
  for (const top of [false, true]) {
    const o = { from: '2025-01', to: '2025-12', groupBy: [], ...(top ? { top: { by: 'total', n: 2 } } : { perTenant: true }) } as const
    const query = s.rollup.readAcrossQuery(db, o).compile(db).sql
    expect(query).toContain(s.byTenant.pending!)
    const rows = (await s.rollup.readAcross(db, o)).map((r) => ({ ...r, tenant_id: String(r.tenant_id) }))
    expect(canonicalRows(rows)).toEqual(await truthPerTenant(db, top))
  }
}

/** The level's own rows (months not pending) equal the truth of those months. */
async function expectStoredLevel(s: Setup) {
  const { rows } = await sql<Record<string, unknown>>`
    select to_char(month, 'YYYY-MM') as month, category, total::text, n, lo::text, hi::text from ${sql.raw(s.fleet.qualified)}
    where month between '2025-01-01' and '2025-12-01' and month <> all(array(select month from ${sql.raw(s.fleet.pending!)}))`.execute(t.db)
  expect(canonicalRows(rows)).toEqual(await truth(t.db, ['category'], new Set(await pendingMonths(s))))
}

/** The deferred per-tenant level's rows of buckets not pending equal the truth of those buckets. */
async function expectStoredTenantLevel(s: Setup) {
  if (!s.byTenant) return
  const { rows } = await sql<Record<string, unknown>>`
    select to_char(month, 'YYYY-MM') as month, tenant_id::text as tenant_id, total::text, n, lo::text, hi::text
    from ${sql.raw(s.byTenant.qualified)} as l where month between '2025-01-01' and '2025-12-01'
      and not exists (select from ${sql.raw(s.byTenant.pending!)} as p where p.tenant_id = l.tenant_id and p.month = l.month)`.execute(t.db)
  const { rows: pending } = await sql<{ k: string }>`
    select distinct tenant_id::text || '|' || to_char(month, 'YYYY-MM') as k from ${sql.raw(s.byTenant.pending!)}`.execute(t.db)
  const skip = new Set(pending.map((p) => p.k))
  const truthRows = (await truthPerTenant(t.db, false)).filter((r) => {
    const row = Object.fromEntries(JSON.parse(r) as Array<[string, unknown]>)
    return !skip.has(`${String(row.tenant_id)}|${String(row.month)}`)
  })
  expect(canonicalRows(rows)).toEqual(truthRows)
}

/** `refreshFleet` (its default limit), then the levels' own rows equal the truth of everything not still pending. */
async function expectCaughtUp(s: Setup) {
  await s.rollup.refreshFleet(t.db)
  await expectStoredLevel(s)
  await expectStoredTenantLevel(s)
}

async function pendingBuckets(s: Setup): Promise<number> {
  const { rows } = await sql<{
    n: number
  }>`select count(distinct (tenant_id, month))::int as n from ${sql.raw(s.byTenant!.pending!)}`.execute(t.db)
  return rows[0]!.n
}

async function pendingMonths(s: Setup): Promise<string[]> {
  const { rows } = await sql<{
    m: string
  }>`select distinct to_char(month, 'YYYY-MM') as m from ${sql.raw(s.fleet.pending!)} order by 1`.execute(t.db)
  return rows.map((r) => r.m)
}

beforeAll(() => createSpend(t.db))

describe('a fleet level kept by the drain (deferred), with a deferred per-tenant level beside it', () => {
  const s = declare('spend_def', { byTenant: true })

  it('writes mark their months; readAcross equals the truth before and after refreshFleet; refreshFleet empties the marks', async () => {
    await s.target.create(t.db)
    await s.fleet.create(t.db)
    await s.byTenant!.create(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await s.rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    expect(await pendingMonths(s)).toHaveLength(12) // every month rebuilt is pending
    expect(await pendingBuckets(s)).toBe(72) // and every bucket of the per-tenant level (6 tenants × 12 months)
    await expectAcrossTruth(s)
    const partial = await s.rollup.refreshFleet(t.db, { limit: 5 }) // oldest months first; buckets in tenant order
    expect(partial).toEqual({ months: 5, buckets: 5, remaining: 7 + 67 })
    expect(await pendingMonths(s)).toEqual(['2025-06', '2025-07', '2025-08', '2025-09', '2025-10', '2025-11', '2025-12'])
    await expectAcrossTruth(s)
    await expectStoredLevel(s)
    await expectStoredTenantLevel(s)
    expect(await s.rollup.refreshFleet(t.db, { limit: 10_000 })).toEqual({ months: 7, buckets: 67, remaining: 0 })
    await expectStoredLevel(s)
    await expectStoredTenantLevel(s)
    // A write the app announces (one month marked), one that moves rows to another tenant, month and group, a bucket emptied.
    await insertSpend(t.db, 2, '2025-03-31T23:30:00Z', 'a', '12.34')
    await s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-04-01T00:30:00+02:00' })
    expect(await pendingMonths(s)).toEqual(['2025-04'])
    await expectAcrossTruth(s)
    await sql`update spend set tenant_id = 6, paid_at = paid_at - interval '40 days', category = 'z' where id in (7, 8)`.execute(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await s.rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await sql`delete from spend where tenant_id = 3 and category is null`.execute(t.db)
    await s.rollup.rebuild(t.db, { tenantId: 3, since: '2025-01', until: '2025-12' })
    await expectAcrossTruth(s)
    await s.rollup.refreshFleet(t.db)
    await expectAcrossTruth(s)
    await expectStoredLevel(s)
    await expectStoredTenantLevel(s)
    // Tracked writes: a drain marks what it refreshed; the drain loop brings the level up to date once the log is empty.
    await s.rollup.track(t.db)
    try {
      await insertSpend(t.db, 4, '2025-06-15T10:00:00Z', 'c', null)
      await sql`update spend set amount = amount + 1 where tenant_id = 5 and paid_at < '2025-03-01'`.execute(t.db)
      await sql`delete from spend where tenant_id = 1 and paid_at >= '2025-11-01'`.execute(t.db)
      await s.rollup.refreshDirty(t.db, { limit: 2 })
      expect((await pendingMonths(s)).length).toBeGreaterThan(0) // what the drain refreshed is marked
      const stop = new AbortController()
      const draining = s.rollup.drain(t.db, { intervalMs: 20, signal: stop.signal })
      while ((await s.rollup.dirtyStats(t.db)).rows > 0 || (await pendingMonths(s)).length > 0 || (await pendingBuckets(s)) > 0)
        await new Promise((r) => setTimeout(r, 20))
      stop.abort()
      expect((await draining).buckets).toBeGreaterThan(0)
    } finally {
      await s.rollup.untrack(t.db)
    }
    expect(await pendingMonths(s)).toEqual([])
    await expectAcrossTruth(s)
    await expectStoredLevel(s)
    await expectStoredTenantLevel(s)
    // Rebuilt from its record (what `pgscale drain` runs): still deferred.
    const [recorded] = (await MonthlyRollup.tracked(t.db)).filter((r) => r.parts.target.name === 'spend_def')
    expect(recorded?.parts.fleet?.deferred ?? false).toBe(false) // untracked: no record left
  })

  it('a refresh costs the level one mark: no level row is written', async () => {
    const versions = async () => {
      const { rows } = await sql<{ v: string }>`select string_agg(xmin::text || ctid::text, ',' order by month, category) as v
        from ${sql.raw(s.fleet.qualified)}`.execute(t.db)
      return rows[0]!.v
    }
    await s.rollup.refreshFleet(t.db)
    const before = await versions()
    await insertSpend(t.db, 4, '2025-05-15T10:00:00Z', 'b', '3.50')
    await s.rollup.refreshAt(t.db, { tenantId: 4, moment: '2025-05-15T12:00:00Z' })
    expect(await versions()).toEqual(before) // the level's rows untouched
    expect(await pendingMonths(s)).toEqual(['2025-05'])
    await expectAcrossTruth(s)
    await expectCaughtUp(s)
  })

  withServer('two refreshes of one month by different tenants at once: neither waits for the other, none is lost', async () => {
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      for (let round = 0; round < 3; round++) {
        await insertSpend(t.db, 1, '2025-08-10T12:00:00Z', 'a', `${round + 1}.00`)
        await insertSpend(t.db, 3, '2025-08-11T12:00:00Z', 'a', `${round + 10}.00`)
        // The first refresh holds its transaction (and its shared month lock) open; the second, on
        // another connection, finishes meanwhile: writers of a deferred level do not take turns.
        const first = heldOpen(t.db, (trx) => s.rollup.refreshAt(trx, { tenantId: 1, moment: '2025-08-10' }))
        await first.started
        // The open refresh holds its month's fleet lock shared (and no exclusive advisory lock).
        const { rows: locks } = await sql<{ mode: string }>`select mode from pg_locks
          where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())`.execute(other)
        // (One shared: the month's fleet lock; one exclusive: the tenant's bucket lock.)
        expect(locks.map((l) => l.mode).sort()).toEqual(['ExclusiveLock', 'ShareLock'])
        await s.rollup.refreshAt(other, { tenantId: 3, moment: '2025-08-11' }) // would hang here under an exclusive lock
        first.release()
        await first.done
        await expectAcrossTruth(s)
        await expectCaughtUp(s)
      }
    } finally {
      await other.close()
    }
  })

  withServer('refreshFleet beside a refresh of the same month, in both orders, loses no update', async () => {
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      // A refresh in flight (its month marked, not committed): refreshFleet waits for it, then recomputes with it.
      await s.rollup.refreshFleet(t.db)
      await insertSpend(t.db, 2, '2025-09-10T12:00:00Z', 'b', '40.00')
      // An earlier mark of the month, committed: the refresh's own mark is then a no-op, and the
      // fleet refresh must not take the month while the refresh is open.
      await sql`insert into ${sql.raw(s.fleet.pending!)} (month) values ('2025-09-01')`.execute(t.db)
      const refresh = heldOpen(t.db, (trx) => s.rollup.refreshAt(trx, { tenantId: 2, moment: '2025-09-10' }))
      await refresh.started
      const fleet = s.rollup.refreshFleet(other)
      await new Promise((r) => setTimeout(r, 150))
      refresh.release()
      await Promise.all([refresh.done, fleet])
      await s.rollup.refreshFleet(t.db)
      expect(await pendingMonths(s)).toEqual([])
      await expectStoredLevel(s)
      await expectStoredTenantLevel(s)
      // refreshFleet in flight (an app transaction holding its locks): a refresh of the month waits, then marks it again.
      await insertSpend(t.db, 5, '2025-09-12T12:00:00Z', 'c', '41.00')
      await s.rollup.refreshAt(t.db, { tenantId: 5, moment: '2025-09-12' })
      const inFlight = heldOpen(t.db, async (trx) => expect((await s.rollup.refreshFleet(trx)).months).toBe(1))
      await inFlight.started
      await insertSpend(other, 5, '2025-09-13T12:00:00Z', 'c', '42.00')
      const late = s.rollup.refreshAt(other, { tenantId: 5, moment: '2025-09-13' })
      await new Promise((r) => setTimeout(r, 150))
      inFlight.release()
      await Promise.all([inFlight.done, late])
      expect(await pendingMonths(s)).toEqual(['2025-09'])
      await expectAcrossTruth(s)
      await expectCaughtUp(s)
    } finally {
      await other.close()
    }
  })

  it('a failure inside refreshFleet or after a refresh’s tenant statement leaves nothing; the next call works', async () => {
    const name = 'spend_def'
    await sql
      .raw(
        `create function ${name}_fail() returns trigger language plpgsql as $$ begin raise exception 'level write refused'; end $$;
      create trigger ${name}_fail before insert on ${s.fleet.qualified} for each statement execute function ${name}_fail()`,
      )
      .execute(t.db)
    await insertSpend(t.db, 2, '2025-10-05T12:00:00Z', 'b', '99.00')
    await s.rollup.refreshAt(t.db, { tenantId: 2, moment: '2025-10-05' })
    const level = await sql`select * from ${sql.raw(s.fleet.qualified)} order by 1, 2`.execute(t.db)
    await expect(s.rollup.refreshFleet(t.db)).rejects.toThrow(/level write refused/)
    expect((await sql`select * from ${sql.raw(s.fleet.qualified)} order by 1, 2`.execute(t.db)).rows).toEqual(level.rows)
    expect(await pendingMonths(s)).toEqual(['2025-10']) // the claim rolled back with it
    await expectAcrossTruth(s)
    await sql.raw(`drop trigger ${name}_fail on ${s.fleet.qualified}`).execute(t.db)
    expect(await s.rollup.refreshFleet(t.db)).toEqual({ months: 1, buckets: 1, remaining: 0 })
    await expectStoredLevel(s)
    await expectStoredTenantLevel(s)
    // The mark refused: the refresh's tenant rows roll back with it.
    await sql
      .raw(`create trigger ${name}_fail before insert on ${s.fleet.pending!} for each statement execute function ${name}_fail()`)
      .execute(t.db)
    const rollupRows = await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)
    await insertSpend(t.db, 3, '2025-10-06T12:00:00Z', 'a', '7.00')
    await expect(s.rollup.refreshAt(t.db, { tenantId: 3, moment: '2025-10-06' })).rejects.toThrow(/level write refused/)
    expect((await sql`select * from ${sql.table(name)} order by 1, 2, 3, 4`.execute(t.db)).rows).toEqual(rollupRows.rows)
    await sql.raw(`drop trigger ${name}_fail on ${s.fleet.pending!}`).execute(t.db)
    await s.rollup.refreshAt(t.db, { tenantId: 3, moment: '2025-10-06' })
    await expectAcrossTruth(s)
  })
})

describe('a deferred per-tenant level alone (no month lock: its buckets are locked)', () => {
  const s = declare('spend_def_pt', { byTenant: 'alone' })
  const { target, rollup } = s
  const byTenant = s.byTenant!

  withServer('refreshFleet beside an open refresh of the same bucket waits for it, and loses no update', async () => {
    await target.create(t.db)
    await byTenant.create(t.db)
    for (let tenant = 1; tenant <= 6; tenant++) await rollup.rebuild(t.db, { tenantId: tenant, since: '2025-01', until: '2025-12' })
    await rollup.refreshFleet(t.db, { limit: 10_000 })
    await expectStoredTenantLevel(s)
    const other = await connect(t.url!, { maxConnections: 1 })
    try {
      await insertSpend(t.db, 2, '2025-07-10T12:00:00Z', 'b', '50.00')
      // The bucket already marked (committed): the refresh's own mark is a no-op, and refreshFleet must not take it while the refresh is open.
      await sql`insert into ${sql.raw(byTenant.pending!)} (tenant_id, month) values (2, '2025-07-01')`.execute(t.db)
      const refresh = heldOpen(t.db, (trx) => rollup.refreshAt(trx, { tenantId: 2, moment: '2025-07-10' }))
      await refresh.started
      const fleet = rollup.refreshFleet(other)
      await new Promise((r) => setTimeout(r, 150))
      refresh.release()
      await Promise.all([refresh.done, fleet])
      expect((await rollup.refreshFleet(t.db)).remaining).toBe(0)
      await expectStoredTenantLevel(s)
      const per = (await rollup.readAcross(t.db, { from: '2025-01', to: '2025-12', groupBy: [], perTenant: true })).map((r) => ({
        ...r,
        tenant_id: String(r.tenant_id),
      }))
      expect(canonicalRows(per)).toEqual(await truthPerTenant(t.db, false))
    } finally {
      await other.close()
    }
  })
})

describe('deferred level refusals', () => {
  it('bad declarations and options are typed, and nothing is sent', async () => {
    const target = rollupTable('def_decl_monthly', { groupBy: { category: 'text' }, measures: { n: 'integer' } })
    expect(() => fleetTable('def_decl_fleet', { of: target, deferred: 'yes' as unknown as boolean })).toThrow(InvalidArgumentError)
    // Min/max under row-level security: a level kept by writes is refused, a deferred one is not (fleet-wide recomputation).
    const rls = rollupTable('def_decl_rls', { groupBy: {}, measures: { lo: 'numeric' }, isolation: 'rls' })
    const declared = (deferred: boolean) =>
      new MonthlyRollup({
        source: 'spend',
        target: rls,
        at: 'paid_at',
        tenant: 'tenant_id',
        groupBy: [],
        measures: { lo: sql`min(amount)` },
        zone: ZONE,
        fleet: fleetTable('def_decl_rls_fleet', { of: rls, deferred }),
      })
    expect(() => declared(false)).toThrow(/row-level security/)
    expect(() => declared(true)).not.toThrow()
    const s = declare('spend_def_opts')
    const counted = countingHandle(t.db)
    for (const options of [{ limit: 0 }, { limit: 1.5 }, { limit: 10_001 }, null])
      await expect(s.rollup.refreshFleet(counted.handle, options as never)).rejects.toThrow(InvalidArgumentError)
    expect(counted.statements).toBe(0)
  })

  it('a missing pending table is a MigrationRequiredError; a level of the other kind is a SchemaMismatchError', async () => {
    const s = declare('spend_def_kind')
    await s.target.create(t.db)
    await expect(s.rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(MigrationRequiredError)
    await s.fleet.create(t.db)
    await sql.raw(`drop table ${s.fleet.pending!}`).execute(t.db)
    await expect(s.rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(MigrationRequiredError)
    await expect(declare('spend_def_kind').rollup.refreshFleet(t.db)).rejects.toThrow(/pending table/)
    // The same table declared kept by writes: refused (its months may be stale), and the other way round.
    await expect(
      declare('spend_def_kind', { fleet: { deferred: false } }).rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' }),
    ).rejects.toThrow(SchemaMismatchError)
    const inline = declare('spend_inline_kind', { fleet: { deferred: false } })
    await inline.target.create(t.db)
    await inline.fleet.create(t.db)
    await expect(declare('spend_inline_kind').rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-02-02' })).rejects.toThrow(
      /cannot change kind in place/,
    )
    // A rollup without a deferred level: refreshFleet does nothing.
    expect(await inline.rollup.refreshFleet(t.db)).toEqual({ months: 0, buckets: 0, remaining: 0 })
  })
})
