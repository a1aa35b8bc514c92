import type pg from 'pg'
import { describe, expectTypeOf, it } from 'vitest'
import {
  connect,
  type FieldOperators,
  type Filter,
  type FilterOf,
  type MetadataFilter,
  type StoreFilter,
  type TenantStore,
} from '../../src/index.js'

/**
 * Type-level tests: what an app's compiler accepts and refuses. They run in `npm run typecheck`
 * (an unused `@ts-expect-error` is an error there) and as empty tests in `npm test`.
 */
type SearchFilter = NonNullable<NonNullable<Parameters<TenantStore['search']>[1]>['filter']>

describe('Filter: every documented operator compiles, unknown ones do not', () => {
  it('accepts the whole language', () => {
    const filters: Filter[] = [
      { kind: 'invoice', n: 1, ok: true, gone: null, at: new Date() },
      { owner: { team: 'x', lead: 'ana' }, tags: ['red', 'blue'] },
      { 'owner.team': 'x', 'stock.loc': { $in: ['A', 'B'] } },
      { n: { $eq: 1, $ne: 2, $gt: 0, $gte: 0, $lt: 5, $lte: 5 } },
      { s: { $gt: 'a' }, at: { $lt: new Date('2024-01-01T00:00:00Z') } },
      { c: { $in: [1, 'x', null] }, d: { $nin: [] }, tags: { $all: ['red'] }, e: { $size: 2 }, f: { $exists: false } },
      { tags: { $elemMatch: { $gte: 'b', $lt: 'r' } }, stock: { $elemMatch: { loc: 'B', qty: { $lt: 1 } } } },
      { price: { $not: { $gt: 4 } } },
      { $and: [{ a: 1 }], $or: [{ kind: 'item' }, { n: { $gte: 2 } }], $nor: [{ price: 12 }] },
      { source: { $eq: { in: ['refunds'] } } }, // an object with an operator-looking key, matched literally
      {},
    ]
    expectTypeOf(filters).toEqualTypeOf<Filter[]>()
  })

  it('refuses unknown operators, misplaced ones and operands of the wrong kind', () => {
    // @ts-expect-error $inn is not an operator
    const typo: Filter = { source: { $inn: ['refunds'] } }
    // @ts-expect-error $regex is not in the language
    const regex: Filter = { source: { $regex: '^re' } }
    // @ts-expect-error a comparison takes a number, a string or a Date
    const objectOperand: Filter = { a: { $gt: { b: 1 } } }
    // @ts-expect-error $exists takes a boolean
    const existsNumber: Filter = { a: { $exists: 1 } }
    // @ts-expect-error $size takes a number
    const sizeString: Filter = { a: { $size: '2' } }
    // @ts-expect-error $in takes an array
    const inScalar: Filter = { a: { $in: 'x' } }
    // @ts-expect-error $not takes operators
    const notValue: Filter = { a: { $not: 5 } }
    // @ts-expect-error $and takes an array of filters
    const andObject: Filter = { $and: { a: 1 } }
    // @ts-expect-error an unknown operator inside $or is refused too
    const nested: Filter = { $or: [{ a: { $gtt: 1 } }] }
    expectTypeOf([typo, regex, objectOperand, existsNumber, sizeString, inScalar, notValue, andObject, nested]).toBeArray()
  })

  it('is what search, find, count and deleteWhere take', () => {
    expectTypeOf<Filter>().toExtend<MetadataFilter>()
    expectTypeOf<Filter>().toExtend<SearchFilter>()
    expectTypeOf<FilterOf<{ source: string }>>().toExtend<SearchFilter>()
  })
})

describe('FilterOf<M>: fields and operands checked against a declared metadata shape', () => {
  type Doc = { source: string; year: number; tags: string[]; owner: { team: string } }

  it('accepts values and operators of each field type', () => {
    const filters: FilterOf<Doc>[] = [
      { source: 'refunds', year: 2024, tags: 'billing', owner: { team: 'x' } },
      { source: { $in: ['refunds', 'faq'] }, year: { $gte: 2024, $lt: 2026 } },
      { tags: { $all: ['a', 'b'], $size: 2 }, source: { $exists: true } },
      { tags: ['a', 'b'], 'owner.team': 'x', source: null },
      { source: { $gt: new Date('2024-01-01T00:00:00Z') } },
      { $or: [{ source: 'a' }, { year: { $not: { $gt: 2000 } } }] },
    ]
    expectTypeOf(filters).toEqualTypeOf<FilterOf<Doc>[]>()
  })

  it('refuses a misspelt field, a wrong operand type and an unknown operator', () => {
    // @ts-expect-error sourc is not a field of Doc
    const field: FilterOf<Doc> = { sourc: 'refunds' }
    // @ts-expect-error year is a number
    const value: FilterOf<Doc> = { year: 'twenty' }
    // @ts-expect-error year compares with numbers
    const order: FilterOf<Doc> = { year: { $gt: 'x' } }
    // @ts-expect-error tags holds strings
    const all: FilterOf<Doc> = { tags: { $all: [1] } }
    // @ts-expect-error $inn is not an operator
    const op: FilterOf<Doc> = { source: { $inn: ['a'] } }
    // @ts-expect-error sub-filters are checked too
    const sub: FilterOf<Doc> = { $or: [{ yaer: 2024 }] }
    expectTypeOf([field, value, order, all, op, sub]).toBeArray()
  })

  it('StoreFilter<M>: FilterOf<M> for a declared shape, MetadataFilter (as today) without one', () => {
    expectTypeOf<StoreFilter<Doc>>().toEqualTypeOf<FilterOf<Doc>>()
    expectTypeOf<StoreFilter>().toEqualTypeOf<MetadataFilter>()
    expectTypeOf<StoreFilter<Record<string, string>>>().toEqualTypeOf<MetadataFilter>()
    expectTypeOf<StoreFilter<Doc>>().toExtend<SearchFilter>()
    // @ts-expect-error a declared shape checks its fields
    const typo: StoreFilter<Doc> = { sourc: 'a' }
    const loose: StoreFilter = { sourc: { $anything: 1 } } // untyped: the parser refuses it at run time
    expectTypeOf([typo, loose]).toBeArray()
  })

  it('with an index signature it is Filter', () => {
    expectTypeOf<FilterOf<Record<string, unknown>>>().toEqualTypeOf<Filter>()
    expectTypeOf<FieldOperators<number>['$gt']>().toEqualTypeOf<number | undefined>()
  })
})

describe("connect takes pg's PoolConfig, not any", () => {
  it('its source is a URL, a PoolConfig, a Pool, or an unset DATABASE_URL', () => {
    expectTypeOf(connect).parameter(0).toEqualTypeOf<string | pg.PoolConfig | pg.Pool | undefined>()
    expectTypeOf(connect).parameter(0).not.toBeAny()
  })

  it('refuses a misspelt option and an option of the wrong type', () => {
    const typo = () =>
      // @ts-expect-error conectionString is not a PoolConfig option
      connect({ conectionString: 'postgres://localhost/app' })
    const wrongType = () =>
      // @ts-expect-error max is a number
      connect({ connectionString: 'postgres://localhost/app', max: 'twenty' })
    expectTypeOf(typo).toBeFunction()
    expectTypeOf(wrongType).toBeFunction()
  })
})
