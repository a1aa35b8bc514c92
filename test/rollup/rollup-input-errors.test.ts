import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  InvalidArgumentError,
  InvalidIdentifierError,
  InvalidTimeZoneError,
  MonthlyRollup,
  PgScaleError,
  rollupTable,
} from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { expensesRollup, rollupSnapshot, seedExpenses } from './rollup-fixture.js'

const t = useTestDatabase()
const { target, rollup } = expensesRollup()
const base = {
  source: 'expenses',
  target,
  at: 'paid_at',
  tenant: 'tenant_id',
  groupBy: ['category'],
  measures: { total: sql`sum(amount)`, count: sql`count(*)` },
  zone: 'America/Mexico_City',
}

beforeAll(async () => {
  await seedExpenses(t.db, { seed: 'errors', rows: 2_000, tenants: 3, bigTenantRows: 1_000, months: 6 })
  await target.create(t.db)
  await rollup.refreshAt(t.db, { tenantId: 1, moment: '2025-12-15T00:00:00Z' })
})

describe('bad input: a typed PgScaleError, nothing written', () => {
  const cases: Array<[string, () => unknown, new (...args: any[]) => PgScaleError]> = [
    ['unknown zone', () => new MonthlyRollup({ ...base, zone: 'Mars/Olympus_Mons' }), InvalidTimeZoneError],
    ['zone with SQL in it', () => new MonthlyRollup({ ...base, zone: "UTC'; drop table expenses; --" }), InvalidTimeZoneError],
    ['source that is not an identifier', () => new MonthlyRollup({ ...base, source: 'expenses; drop table x' }), InvalidIdentifierError],
    ['at column that is not an identifier', () => new MonthlyRollup({ ...base, at: 'paid_at)' }), InvalidIdentifierError],
    [
      'rollup table name that is not an identifier',
      () => rollupTable('Monthly-Totals', { groupBy: {}, measures: { n: 'integer' } }),
      InvalidIdentifierError,
    ],
    [
      'column type that is not allowed',
      // @ts-expect-error not a column type: refused at compile time, and at run time (under test)
      () => rollupTable('m', { groupBy: {}, measures: { n: 'integer; drop table x' } }),
      InvalidArgumentError,
    ],
    ['groupBy that differs from the target', () => new MonthlyRollup({ ...base, groupBy: ['status'] }), InvalidArgumentError],
    [
      'measure that is not a sql fragment',
      () => new MonthlyRollup({ ...base, measures: { total: 'sum(amount)' as never, count: sql`count(*)` } }),
      InvalidArgumentError,
    ],
    [
      'measure missing for a target column',
      () => new MonthlyRollup({ ...base, measures: { total: sql`sum(amount)` } as never }),
      InvalidArgumentError,
    ],
    [
      'measure that is not an aggregate',
      () =>
        new MonthlyRollup({ ...base, measures: { total: sql`amount`, count: sql`count(*)` } }).refreshAt(t.db, {
          tenantId: 1,
          moment: '2025-12-15T00:00:00Z',
        }),
      InvalidArgumentError,
    ],
    [
      'measure that is a constant',
      () =>
        new MonthlyRollup({ ...base, measures: { total: sql`amount * 2`, count: sql`count(*)` } }).rebuild(t.db, {
          tenantId: 1,
          since: '2025-01-01',
          until: '2025-12-01',
        }),
      InvalidArgumentError,
    ],
    ['since after until', () => rollup.rebuild(t.db, { tenantId: 1, since: '2025-12-01', until: '2025-01-01' }), InvalidArgumentError],
    ['a moment that is not a date', () => rollup.refreshAt(t.db, { tenantId: 1, moment: 'yesterday' }), InvalidArgumentError],
    ['a moment that is NaN', () => rollup.refreshAt(t.db, { tenantId: 1, moment: Number.NaN }), InvalidArgumentError],
    ['a moment that is an object', () => rollup.refreshAt(t.db, { tenantId: 1, moment: {} as Date }), InvalidArgumentError],
    ['an empty tenant id', () => rollup.refreshAt(t.db, { tenantId: '', moment: '2025-12-15T00:00:00Z' }), InvalidArgumentError],
    [
      'read of a group column that does not exist',
      () => rollup.read(t.db, { tenantId: 1, from: '2025-01', to: '2025-12', groupBy: ['status'] }),
      InvalidArgumentError,
    ],
  ]
  it.each(cases)('%s', async (_name, call, errorClass) => {
    const before = await rollupSnapshot(t.db)
    const err = await (async () => call())().catch((e: unknown) => e)
    expect(err).toBeInstanceOf(errorClass)
    expect(await rollupSnapshot(t.db)).toBe(before)
  })
})
