import { Kysely, PostgresDialect, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  adoptDatabase,
  DatabaseError,
  InvalidArgumentError,
  InvalidIdentifierError,
  MigrationRequiredError,
  MonthlyRollup,
  PgScaleError,
  rollupTable,
} from '../../src/index.js'
import { countingPool } from '../support/query-counter.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { countingHandle } from './counting-handle.js'
import { expensesRollup, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

/**
 * Every public rollup method × every malformed argument → the documented error class, with 0
 * statements sent (counted on the wire: an app's Kysely and a pgscale Database over it on every
 * provider, a pg.Pool on a server) and nothing written. Then: the one month grammar, shared by
 * every method; server errors through any handle as a `DatabaseError` with the SQLSTATE and the
 * driver's error as `cause`; tracking-only calls on an untracked rollup a `MigrationRequiredError`.
 */
const t = useTestDatabase()
type ErrorClass = new (...args: any[]) => PgScaleError

/** Month inputs every method refuses (the issue's, and their neighbours). */
const BAD_MONTHS: unknown[] = [
  '2025-3',
  '2025/03',
  'March 2025',
  '2025-3-1',
  '10000-01',
  '202501',
  '-001-01',
  '0000-12',
  '2025-13',
  '2025-02-30',
  '2025-03-01T25:00:00Z',
  '2025-03-01T10:00:00+05:75',
  'yesterday',
  '',
  Number.NaN,
  Number.POSITIVE_INFINITY,
  new Date(Number.NaN),
  new Date('0000-06-01T00:00:00Z'),
  {},
  [],
  null,
  undefined,
  true,
]
/** Tenant ids a bigint tenant refuses. */
const BAD_TENANTS: unknown[] = ['abc', '', '1.5', 1.5, '1e3', '9223372036854775808', Number.NaN, null, undefined, {}, [], true, 2 ** 60]

type Call = (rollup: MonthlyRollup, db: Kysely<any>) => unknown
const ok = { tenantId: 1, from: '2025-01', to: '2025-12' }

/** The table: [method and argument, the call, the documented error class]. */
function cases(): Array<[string, Call, ErrorClass]> {
  const out: Array<[string, Call, ErrorClass]> = []
  const add = (name: string, call: Call, error: ErrorClass = InvalidArgumentError) => out.push([name, call, error])
  for (const m of BAD_MONTHS) {
    const v = m as string
    const shown = m instanceof Date ? 'Invalid/BC Date' : (JSON.stringify(m) ?? String(m))
    add(`read from ${shown}`, (r, db) => r.read(db, { ...ok, from: v }))
    add(`read to ${shown}`, (r, db) => r.read(db, { ...ok, to: v }))
    add(`read fresh from ${shown}`, (r, db) => r.read(db, { ...ok, from: v, fresh: true }))
    add(`readAcross from ${shown}`, (r, db) => r.readAcross(db, { from: v, to: '2025-12' }))
    add(`readAcross fresh to ${shown}`, (r, db) => r.readAcross(db, { from: '2025-01', to: v, fresh: true }))
    add(`refreshAt moment ${shown}`, (r, db) => r.refreshAt(db, { tenantId: 1, moment: v }))
    add(`rebuild since ${shown}`, (r, db) => r.rebuild(db, { tenantId: 1, since: v, until: '2025-12' }))
    add(`rebuild until ${shown}`, (r, db) => r.rebuild(db, { tenantId: 1, since: '2025-01', until: v }))
    add(`markDirty at [${shown}]`, (r, db) => r.markDirty(db, { tenantId: 1, at: ['2025-05-01', v] }))
    add(`readQuery from ${shown}`, (r, db) => r.readQuery(db, { ...ok, from: v }))
    add(`readAcrossQuery to ${shown}`, (r, db) => r.readAcrossQuery(db, { from: '2025-01', to: v }))
  }
  add(`markDirty at ['2025-05'] (a month, not a row's moment)`, (r, db) => r.markDirty(db, { tenantId: 1, at: ['2025-05'] }))
  add(`markDirty at '2025-05-01' (not an array)`, (r, db) => r.markDirty(db, { tenantId: 1, at: '2025-05-01' as never }))
  for (const tenant of BAD_TENANTS) {
    const v = tenant as number
    const shown = JSON.stringify(tenant) ?? String(tenant)
    add(`read tenantId ${shown}`, (r, db) => r.read(db, { ...ok, tenantId: v }))
    add(`read fresh tenantId ${shown}`, (r, db) => r.read(db, { ...ok, tenantId: v, fresh: true }))
    add(`refreshAt tenantId ${shown}`, (r, db) => r.refreshAt(db, { tenantId: v, moment: '2025-03' }))
    add(`rebuild tenantId ${shown}`, (r, db) => r.rebuild(db, { tenantId: v, since: '2025-01', until: '2025-03' }))
    add(`markDirty tenantId ${shown}`, (r, db) => r.markDirty(db, { tenantId: v, at: ['2025-05-01'] }))
    add(`readAcross tenants [${shown}]`, (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', tenants: [1, v] }))
    if (tenant !== undefined) add(`refreshDirty tenantId ${shown}`, (r, db) => r.refreshDirty(db, { tenantId: v }))
  }
  add(`read groupBy 'category' (a string)`, (r, db) => r.read(db, { ...ok, groupBy: 'category' as never }))
  add(`readAcross groupBy 'category' (a string)`, (r, db) =>
    r.readAcross(db, { from: '2025-01', to: '2025-03', groupBy: 'category' as never }),
  )
  add(`readAcross groupBy {}`, (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', groupBy: {} as never }))
  add(`read groupBy ['status'] (not a group)`, (r, db) => r.read(db, { ...ok, groupBy: ['status'] }))
  add(`read groupBy twice`, (r, db) => r.read(db, { ...ok, groupBy: ['category', 'category'] }))
  add(
    `readAcross groupBy ['Bad-Name']`,
    (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', groupBy: ['Bad-Name'] }),
    InvalidIdentifierError,
  )
  add(`read from after to`, (r, db) => r.read(db, { ...ok, from: '2025-06', to: '2025-01' }))
  add(`readAcross from after to`, (r, db) => r.readAcross(db, { from: '2025-06', to: '2025-01' }))
  add(`rebuild since after until`, (r, db) => r.rebuild(db, { tenantId: 1, since: '2025-06', until: '2025-01' }))
  add(`read fresh 'yes'`, (r, db) => r.read(db, { ...ok, fresh: 'yes' as never }))
  add(`read combineMonths 1`, (r, db) => r.read(db, { ...ok, combineMonths: 1 as never }))
  add(`read percentiles of a plain measure`, (r, db) => r.read(db, { ...ok, percentiles: { total: [0.5] } }))
  add(`readAcross perTenant 'x'`, (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', perTenant: 'x' as never }))
  add(`readAcross tenants []`, (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', tenants: [] }))
  add(`readAcross top.by unknown`, (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', top: { by: 'nope', n: 3 } }))
  add(`readAcross top.n 0`, (r, db) => r.readAcross(db, { from: '2025-01', to: '2025-03', top: { by: 'total', n: 0 } }))
  add(`readAcross top.order 'up'`, (r, db) =>
    r.readAcross(db, { from: '2025-01', to: '2025-03', top: { by: 'total', n: 3, order: 'up' as never } }),
  )
  add(`readAcross options null`, (r, db) => r.readAcross(db, null as never))
  add(`read options null`, (r, db) => r.read(db, null as never))
  add(`refreshAt options null`, (r, db) => r.refreshAt(db, null as never))
  add(`rebuild options null`, (r, db) => r.rebuild(db, null as never))
  add(`markDirty options null`, (r, db) => r.markDirty(db, null as never))
  add(`refreshDirty limit 0`, (r, db) => r.refreshDirty(db, { limit: 0 }))
  add(`refreshDirty limit 1.5`, (r, db) => r.refreshDirty(db, { limit: 1.5 }))
  add(`drain intervalMs -1`, (r, db) => r.drain(db, { intervalMs: -1 }))
  add(`drain limit 0`, (r, db) => r.drain(db, { limit: 0 }))
  add(
    `migrationSql runtimeRole 'app; drop role x'`,
    (r, db) => r.migrationSql(db, { runtimeRole: 'app; drop role x' }),
    InvalidIdentifierError,
  )
  add(`migrationSql track 'no'`, (r, db) => r.migrationSql(db, { track: 'no' as never }))
  add(
    `trackingMigration runtimeRole 'Bad Role'`,
    (r, db) => r.trackingMigration({ runtimeRole: 'Bad Role' }).up(db),
    InvalidIdentifierError,
  )
  add(
    `rollupTable(…).migration runtimeRole 'Bad Role'`,
    (_r, db) => target.migration({ runtimeRole: 'Bad Role' }).up(db),
    InvalidIdentifierError,
  )
  add(`sourceIndex concurrently 'yes'`, (r, db) => r.sourceIndex(db, { concurrently: 'yes' as never }))
  return out
}

const { target, rollup: validated } = expensesRollup('America/Mexico_City', 'bad_input_monthly')
let handles: Array<{ name: string; db: Kysely<any>; statements: () => number; reset: () => void }> = []
const closers: Array<() => Promise<void>> = []

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'bad-input', rows: 600, tenants: 3, bigTenantRows: 200, months: 6 })
  await target.create(t.db)
  await validated.rebuild(t.db, { tenantId: 1, since: '2024-01', until: '2026-12' })
  const app = countingHandle(t.db)
  handles = [
    { name: "an app's Kysely", db: app.handle, statements: () => app.statements, reset: () => app.reset() },
    { name: 'a pgscale Database', db: adoptDatabase(app.handle), statements: () => app.statements, reset: () => app.reset() },
  ]
  if (t.url) {
    const counted = countingPool({ connectionString: t.url, max: 2 })
    const kysely = new Kysely<any>({ dialect: new PostgresDialect({ pool: counted.pool }) })
    handles.push({ name: 'a pg.Pool', db: adoptDatabase(counted.pool), statements: () => counted.queries, reset: () => counted.reset() })
    handles.push({ name: "an app's Kysely on a pg.Pool", db: kysely, statements: () => counted.queries, reset: () => counted.reset() })
    closers.push(() => counted.pool.end())
  }
})

afterAll(async () => {
  for (const close of closers) await close()
})

describe('bad input: every method × every malformed argument → the documented class, 0 statements, nothing written', () => {
  const table = cases()
  it(`${table.length} cases on every handle`, async () => {
    const before = await rollupSnapshot(t.db, 'bad_input_monthly', 1)
    const wrong: string[] = []
    for (const h of handles) {
      // A rollup never validated: a check on the server would be a statement.
      const { rollup } = expensesRollup('America/Mexico_City', 'bad_input_monthly')
      for (const [name, call, errorClass] of table) {
        h.reset()
        const err = await (async () => call(rollup, h.db))().then(
          () => undefined,
          (e: unknown) => e,
        )
        if (!(err instanceof errorClass) || h.statements() !== 0)
          wrong.push(`${h.name}: ${name}: ${String(err)} (${(err as object)?.constructor?.name}), ${h.statements()} statements`)
      }
      // The counter counts: a good call sends statements.
      h.reset()
      await rollup.read(h.db, ok)
      expect(h.statements()).toBeGreaterThan(0)
    }
    expect(wrong).toEqual([])
    expect(await rollupSnapshot(t.db, 'bad_input_monthly', 1)).toBe(before)
  }, 120_000)
})

describe('one month grammar, shared by every method', () => {
  const q = (from: unknown) => validated.readQuery(t.db, { tenantId: 1, from: from as string, to: '9999-12' }).compile(t.db).parameters
  it.each([
    ['2025-03', '2025-03-01'],
    ['2025-03-31', '2025-03-01'],
    ['2025-03-01T00:00:00', '2025-03-01'], // a wall-clock time in the zone, whatever TZ says
    ['2025-03-01 00:00', '2025-03-01'],
    ['2025-03-01T05:59:59Z', '2025-02-01'], // an instant: still February in Mexico City
    ['2025-03-01T06:00:00Z', '2025-03-01'],
    ['2025-03-01T00:00:00-06:00', '2025-03-01'],
    ['2025-03-01T06:00:00+0000', '2025-03-01'],
    [new Date('2025-03-01T05:59:59Z'), '2025-02-01'],
    [Date.UTC(2025, 2, 1, 6), '2025-03-01'],
    ['0001-01', '0001-01-01'],
    ['9999-12', '9999-12-01'],
  ])('%s is the local month %s', (input, month) => {
    expect(q(input)).toContain(month)
  })

  it('the same months whatever the process TZ (Asia/Tokyo, Pacific/Kiritimati, America/Adak)', () => {
    const saved = process.env.TZ
    try {
      for (const tz of ['Asia/Tokyo', 'Pacific/Kiritimati', 'America/Adak']) {
        process.env.TZ = tz
        expect([tz, q('2025-03'), q('2025-03-01T00:00:00'), q('2025-03-01T05:59:59Z')]).toEqual([
          tz,
          expect.arrayContaining(['2025-03-01']),
          expect.arrayContaining(['2025-03-01']),
          expect.arrayContaining(['2025-02-01']),
        ])
      }
    } finally {
      if (saved === undefined) delete process.env.TZ
      else process.env.TZ = saved
    }
  })

  it("readAcross({ from: '2025-3', to: '2025-3' }) is refused, naming the value (it used to read February)", async () => {
    const err = await validated.readAcross(t.db, { from: '2025-3', to: '2025-3' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(InvalidArgumentError)
    expect((err as Error).message).toContain('"2025-3"')
  })
})

describe('server errors through any handle: a DatabaseError with the SQLSTATE and the original as cause', () => {
  const tiny = rollupTable('tiny_monthly', { groupBy: {}, measures: { total: 'numeric(3,0)' }, tenantType: 'bigint' })
  const overflowing = new MonthlyRollup({
    source: 'expenses',
    target: tiny,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: [],
    measures: { total: sql`sum(amount) * 1000` },
    zone: 'America/Mexico_City',
  })

  async function expectOverflow(db: Kysely<any>) {
    const err = await overflowing.rebuild(db, { tenantId: 1, since: '2024-01', until: '2026-12' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DatabaseError)
    expect((err as DatabaseError).sqlState).toBe('22003')
    expect((err as Error).cause).toBeDefined()
    expect((err as Error).cause).not.toBeInstanceOf(PgScaleError)
  }

  it("through pgscale's Database and an app's Kysely over it", async () => {
    await tiny.create(t.db)
    await expectOverflow(t.db)
    await expectOverflow(countingHandle(t.db).handle)
  })

  itWithServer(t.target)("through an app's Kysely on a pg.Pool (the driver's raw error) and the pool itself", async () => {
    const counted = countingPool({ connectionString: t.url!, max: 2 })
    try {
      await expectOverflow(new Kysely<any>({ dialect: new PostgresDialect({ pool: counted.pool }) }))
      await expectOverflow(adoptDatabase(counted.pool))
    } finally {
      await counted.pool.end()
    }
  })
})

describe('tracking-only calls on a rollup never tracked: MigrationRequiredError naming rollup.track', () => {
  const { target: untrackedTable, rollup: untracked } = expensesRollup('America/Mexico_City', 'never_tracked_monthly')
  const calls: Array<[string, (db: Kysely<any>) => Promise<unknown>]> = [
    ['read({ fresh: true })', (db) => untracked.read(db, { ...ok, fresh: true })],
    ['readAcross({ fresh: true })', (db) => untracked.readAcross(db, { from: '2025-01', to: '2025-03', fresh: true })],
    ['refreshDirty', (db) => untracked.refreshDirty(db)],
    ['drain', (db) => untracked.drain(db, { intervalMs: 0 })],
    ['markDirty', (db) => untracked.markDirty(db, { tenantId: 1, at: ['2025-03-10'] })],
  ]
  it.each(calls)('%s', async (_name, call) => {
    await untrackedTable.create(t.db)
    for (const db of [t.db, countingHandle(t.db).handle]) {
      const err = await call(db).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(MigrationRequiredError)
      expect((err as Error).message).toMatch(/never_tracked_monthly_dirty.*rollup\.track/)
    }
  })
})
