import { sql, type Kysely } from 'kysely'
import { describe, expectTypeOf, it } from 'vitest'
import {
  approxCountDistinct,
  approxPercentiles,
  MonthlyRollup,
  rollupTable,
  type MonthlyRollupConfig,
  type ReadAcrossOptions,
  type ReadOptions,
  type RollupAcrossRow,
  type RollupRow,
  type RollupRowOf,
  type RollupTable,
  type RollupTableConfig,
} from '../../src/index.js'

/**
 * Type-level tests of the rollup's typed tables, configs and rows: what an app's compiler accepts
 * and refuses. They run in `npm run typecheck` (an unused `@ts-expect-error` is an error there) and
 * as tests in `npm test` that never touch a database: `db` exists only for the compiler, so every
 * read is inside a function that is never called.
 */
declare const db: Kysely<any>

const expensesMonthly = rollupTable('expenses_monthly', {
  groupBy: { category: 'varchar(64)', status: 'text' },
  measures: { total: 'numeric(14,2)', count: 'integer', users: 'hll', latency: 'tdigest', big: 'bigint', avg: 'double precision' },
  tenantType: 'bigint',
})
const base = { source: 'expenses', at: 'paid_at', tenant: 'tenant_id', zone: 'UTC' }
const measures = {
  total: sql`sum(amount)`,
  count: sql`count(*)`,
  users: approxCountDistinct(sql`user_id`),
  latency: approxPercentiles(sql`latency_ms`),
  big: sql`count(*)`,
  avg: sql`max(amount)`,
}
const rollup = new MonthlyRollup({ ...base, target: expensesMonthly, groupBy: ['category', 'status'], measures })
const range = { tenantId: 42, from: '2025-01', to: '2025-12' }

describe('rollupTable: the columns in its type, their types checked', () => {
  it('carries the group and measure columns, types normalized as at run time', () => {
    expectTypeOf(expensesMonthly.groupBy[0]!.name).toEqualTypeOf<'category' | 'status'>()
    expectTypeOf(expensesMonthly.tenantType).toEqualTypeOf<'bigint'>()
    const shouting = rollupTable('m', { groupBy: {}, measures: { total: 'NUMERIC(14,  2)' } })
    expectTypeOf(shouting.measures[0]!.type).toEqualTypeOf<'numeric(14, 2)'>()
    expectTypeOf(rollupTable('m', { groupBy: {}, measures: { n: 'integer' } }).tenantType).toEqualTypeOf<'text'>()
    expectTypeOf(expensesMonthly).toExtend<RollupTable>()
  })

  it('refuses a column type the declaration does not accept', () => {
    const typos = () => [
      // @ts-expect-error numerci is not a column type
      rollupTable('m', { groupBy: {}, measures: { total: 'numerci(14,2)' } }),
      // @ts-expect-error a group cannot hold a sketch
      rollupTable('m', { groupBy: { users: 'hll' }, measures: { n: 'integer' } }),
      // @ts-expect-error json is not a rollup column type
      rollupTable('m', { groupBy: { doc: 'json' }, measures: { n: 'integer' } }),
      // @ts-expect-error the tenant type is a column type too
      rollupTable('m', { groupBy: {}, measures: { n: 'integer' }, tenantType: 'bigserial' }),
      // @ts-expect-error isolation is 'none' or 'rls'
      rollupTable('m', { groupBy: {}, measures: { n: 'integer' }, isolation: 'row' }),
    ]
    expectTypeOf(typos).toBeFunction()
  })

  it('declared from a Record<string, string> it is the loose RollupTable, as before', () => {
    const config: RollupTableConfig = { groupBy: { category: 'text' }, measures: { total: 'numeric' } }
    const loose = rollupTable('m', config)
    expectTypeOf(loose.groupBy[0]!.name).toEqualTypeOf<string>()
    const looseRollup = new MonthlyRollup({ ...base, target: loose, groupBy: ['category'], measures: { total: sql`sum(amount)` } })
    expectTypeOf(() => looseRollup.read(db, range)).returns.resolves.toEqualTypeOf<RollupRow[]>()
    expectTypeOf(() => looseRollup.readAcross(db, { from: '2025-01', to: '2025-12' })).returns.resolves.toEqualTypeOf<RollupAcrossRow[]>()
  })
})

describe('MonthlyRollup: groupBy and measures checked against the target', () => {
  it('refuses unknown, missing or duplicate groups and measures', () => {
    const wrong = () => [
      // @ts-expect-error kind is not a group column of expenses_monthly
      new MonthlyRollup({ ...base, target: expensesMonthly, groupBy: ['category', 'kind'], measures }),
      // @ts-expect-error status is missing
      new MonthlyRollup({ ...base, target: expensesMonthly, groupBy: ['category'], measures }),
      // @ts-expect-error category twice
      new MonthlyRollup({ ...base, target: expensesMonthly, groupBy: ['category', 'category'], measures }),
      // @ts-expect-error the measure avg has no expression
      new MonthlyRollup({ ...base, target: expensesMonthly, groupBy: ['category', 'status'], measures: { ...measures, avg: undefined } }),
      new MonthlyRollup({
        ...base,
        target: expensesMonthly,
        groupBy: ['category', 'status'],
        measures: {
          total: sql`sum(amount)`,
          count: sql`count(*)`,
          users: approxCountDistinct(sql`user_id`),
          latency: approxPercentiles(sql`latency_ms`),
          big: sql`count(*)`,
          avg: sql`max(amount)`,
          // @ts-expect-error amount is not a measure column of expenses_monthly
          amount: sql`sum(amount)`,
        },
      }),
      new MonthlyRollup({
        ...base,
        target: expensesMonthly,
        groupBy: ['category', 'status'],
        // @ts-expect-error a measure is a Kysely sql fragment, not SQL text
        measures: { ...measures, total: 'sum(amount)' },
      }),
    ]
    expectTypeOf(wrong).toBeFunction()
  })

  it('accepts the groups in any order at compile time (the declaration order is checked at run time)', () => {
    const swapped = () => new MonthlyRollup({ ...base, target: expensesMonthly, groupBy: ['status', 'category'], measures })
    expectTypeOf(swapped).toBeFunction()
  })

  it('still takes a MonthlyRollupConfig, and a typed rollup is a MonthlyRollup', () => {
    const config: MonthlyRollupConfig = { ...base, target: expensesMonthly, groupBy: ['category', 'status'], measures }
    expectTypeOf(new MonthlyRollup(config)).toEqualTypeOf<MonthlyRollup>()
    const all: MonthlyRollup[] = [rollup, new MonthlyRollup(config)]
    expectTypeOf(all).toBeArray()
  })
})

describe('read and readAcross rows: typed by the target, as the drivers return them', () => {
  it('types each column: numeric as string, integer as number, bigint as string | number, groups nullable', () => {
    type Row = Awaited<ReturnType<typeof rollup.read<'category' | 'status'>>>[number]
    expectTypeOf<Row>().toEqualTypeOf<{
      readonly month: string
      readonly category: string | null
      readonly status: string | null
      readonly total: string
      readonly count: number
      readonly users: string | number
      readonly big: string | number
      readonly avg: number
      readonly latency?: number[]
    }>()
    const read = async () => {
      const rows = await rollup.read(db, range)
      const total: string = rows[0]!.total
      const count: number = rows[0]!.count
      // @ts-expect-error numeric comes back as a string (exact decimals), not a number
      const asNumber: number = rows[0]!.total
      // @ts-expect-error no such column
      const missing = rows[0]!.totl
      return [total, count, asNumber, missing]
    }
    expectTypeOf(read).toBeFunction()
  })

  it('keeps only the groups a read keeps', () => {
    expectTypeOf(() => rollup.read(db, { ...range, groupBy: ['category'] })).returns.resolves.toEqualTypeOf<
      RollupRowOf<typeof expensesMonthly, 'category'>[]
    >()
    const byCategory = async () => {
      const [row] = await rollup.read(db, { ...range, groupBy: ['category'] })
      expectTypeOf(row!).toHaveProperty('category')
      expectTypeOf(row!).not.toHaveProperty('status')
      const [month] = await rollup.read(db, { ...range, groupBy: [] })
      expectTypeOf(month!).not.toHaveProperty('category')
      expectTypeOf(month!.total).toEqualTypeOf<string>()
    }
    expectTypeOf(byCategory).toBeFunction()
  })

  it('refuses a group the table does not have and percentiles of what is not a tdigest', () => {
    const wrong = () => [
      // @ts-expect-error kind is not a group column
      rollup.read(db, { ...range, groupBy: ['kind'] }),
      // @ts-expect-error users is an hll, not a tdigest
      rollup.read(db, { ...range, percentiles: { users: [0.5] } }),
      // @ts-expect-error misspelt option
      rollup.read(db, { ...range, frsh: true }),
    ]
    expectTypeOf(wrong).toBeFunction()
    expectTypeOf(() => rollup.read(db, { ...range, percentiles: { latency: [0.5, 0.95] } })).returns.resolves.toBeArray()
  })

  it('readAcross: tenant_id with perTenant, tenant_id and rank with top, neither otherwise', () => {
    const across = async () => {
      const [fleet] = await rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: [] })
      expectTypeOf(fleet!).not.toHaveProperty('tenant_id')
      expectTypeOf(fleet!).not.toHaveProperty('category')
      expectTypeOf(fleet!.count).toEqualTypeOf<number>()
      const [perTenant] = await rollup.readAcross(db, { from: '2025-01', to: '2025-12', perTenant: true })
      expectTypeOf(perTenant!.tenant_id).toEqualTypeOf<string | number>() // bigint
      expectTypeOf(perTenant!.category).toEqualTypeOf<string | null>()
      expectTypeOf(perTenant!).not.toHaveProperty('rank')
      const [top] = await rollup.readAcross(db, { from: '2025-10', to: '2025-12', combineMonths: true, top: { by: 'total', n: 20 } })
      expectTypeOf(top!.rank).toEqualTypeOf<number>()
      expectTypeOf(top!.tenant_id).toEqualTypeOf<string | number>()
    }
    expectTypeOf(across).toBeFunction()
    const wrong = () => [
      // @ts-expect-error a tdigest cannot rank tenants
      rollup.readAcross(db, { from: '2025-01', to: '2025-12', top: { by: 'latency', n: 5 } }),
      // @ts-expect-error not a measure
      rollup.readAcross(db, { from: '2025-01', to: '2025-12', top: { by: 'totl', n: 5 } }),
      // @ts-expect-error not a group column
      rollup.readAcross(db, { from: '2025-01', to: '2025-12', groupBy: ['kind'] }),
    ]
    expectTypeOf(wrong).toBeFunction()
  })

  it('a text tenant type gives string tenant ids; loosely typed options still compile', () => {
    const byText = rollupTable('t', { groupBy: {}, measures: { n: 'integer' } })
    const textRollup = new MonthlyRollup({ ...base, target: byText, groupBy: [], measures: { n: sql`count(*)` } })
    const perTenant = async () => (await textRollup.readAcross(db, { from: '2025-01', to: '2025-12', perTenant: true }))[0]!.tenant_id
    expectTypeOf(perTenant).returns.resolves.toEqualTypeOf<string>()
    const options: ReadOptions = range
    expectTypeOf(() => textRollup.read(db, options)).returns.resolves.toBeArray()
    const across: ReadAcrossOptions = { from: '2025-01', to: '2025-12', top: { by: 'n', n: 3 } }
    const maybeRanked = async () => (await rollup.readAcross(db, across))[0]!
    expectTypeOf(maybeRanked).returns.resolves.toHaveProperty('rank').toEqualTypeOf<number | undefined>()
  })
})
