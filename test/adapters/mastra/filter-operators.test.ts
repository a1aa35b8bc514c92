import { beforeAll, describe, expect, it } from 'vitest'
import { matchesFilter } from '../../../src/index.js'
import { useTestDatabase } from '../../support/test-database.js'
import { describeUnless } from '../../support/skip.js'
import {
  createUnitVector,
  createVector,
  DIM,
  indexName,
  loadMastra,
  MASTRA_MISSING,
  type MastraKit,
  type PgScaleVector,
} from './mastra-kit.js'

/**
 * Mastra's filter operators through pgscale/mastra, on the products of Mastra's shared suite
 * (mastra-ai/mastra stores/_test-utils/src/domains/vector/filter-operators.ts: products A–H, and I
 * with a null price). Every case is checked three ways: the ids the adapter returns, the ids a
 * predicate written from the operator's meaning gives, and the ids pgscale's reference evaluator
 * (`matchesFilter`) gives for the translated filter. Where the suite counts before product I is
 * added, the counts here include it. The operators pgscale does not evaluate are refused with a
 * MastraError naming them; what the translation maps (implicit `$in`, nested objects as paths,
 * single values for `$in`, `$contains` with an array) has cases of its own.
 */
const t = useTestDatabase()

type Meta = Record<string, any>

const PRODUCTS: Meta[] = [
  { name: 'Product A', price: 10, rating: 4.5, category: 'electronics', tags: ['new', 'sale'], available: true },
  { name: 'Product B', price: 25, rating: 3.8, category: 'electronics', tags: ['featured'], available: true },
  { name: 'Product C', price: 50, rating: 4.9, category: 'home', tags: ['premium', 'sale'], available: false },
  { name: 'Product D', price: 100, rating: 4.2, category: 'home', tags: ['premium'], available: true },
  { name: 'Product E', price: 15, rating: 3.5, category: 'books', tags: ['new'], available: true },
  { name: 'Product F', price: 75, rating: 4.7, category: 'electronics', tags: ['featured', 'premium'], available: true },
  {
    name: 'Product G',
    price: 30,
    rating: 4.1,
    category: 'books',
    tags: ['sale'],
    available: false,
    description: 'Classic novel',
    reviews: [
      { score: 3, author: 'user1' },
      { score: 5, author: 'user2' },
    ],
  },
  {
    name: 'Product H',
    price: 200,
    rating: 4.95,
    category: 'home',
    tags: ['premium', 'luxury'],
    available: true,
    reviews: [
      { score: 5, author: 'user3' },
      { score: 4, author: 'user4' },
      { score: 5, author: 'user5' },
    ],
  },
  { name: 'Product I', price: null, category: 'test', tags: [], available: true },
]

const has = (m: Meta, key: string) => Object.hasOwn(m, key)
const reviews = (m: Meta): Array<{ score: number; author: string }> => m.reviews ?? []

/** [case, Mastra filter, what it means, how many of the 9 products match]. */
const CASES: Array<[string, object, (m: Meta) => boolean, number]> = [
  ['$gt', { price: { $gt: 50 } }, (m) => m.price > 50, 3],
  ['$gte', { price: { $gte: 50 } }, (m) => m.price >= 50, 4],
  ['$lt', { price: { $lt: 30 } }, (m) => m.price !== null && m.price < 30, 3],
  ['$lte', { price: { $lte: 30 } }, (m) => m.price !== null && m.price <= 30, 4],
  ['a range', { price: { $gte: 20, $lte: 80 } }, (m) => m.price >= 20 && m.price <= 80, 4],
  ['$gte on a decimal', { rating: { $gte: 4.5 } }, (m) => m.rating >= 4.5, 4],
  ['$ne on a string (missing or other)', { category: { $ne: 'electronics' } }, (m) => m.category !== 'electronics', 6],
  ['$ne on a boolean', { available: { $ne: true } }, (m) => m.available !== true, 2],
  [
    '$ne on a number (a null price is unknown: left out, as @mastra/pg does)',
    { price: { $ne: 50 } },
    (m) => m.price !== null && m.price !== 50,
    7,
  ],
  ['$not $gt (a null price left out)', { price: { $not: { $gt: 50 } } }, (m) => m.price !== null && !(m.price > 50), 5],
  ['$in of strings', { category: { $in: ['electronics', 'books'] } }, (m) => ['electronics', 'books'].includes(m.category), 5],
  ['$nin', { category: { $nin: ['electronics', 'books'] } }, (m) => !['electronics', 'books'].includes(m.category), 4],
  ['$in of numbers', { price: { $in: [10, 25, 50] } }, (m) => [10, 25, 50].includes(m.price), 3],
  ['$all on an array', { tags: { $all: ['premium', 'sale'] } }, (m) => m.tags.includes('premium') && m.tags.includes('sale'), 1],
  ['$in on an array (any element)', { tags: { $in: ['luxury'] } }, (m) => m.tags.includes('luxury'), 1],
  ['$exists true', { description: { $exists: true } }, (m) => has(m, 'description'), 1],
  ['$exists false', { description: { $exists: false } }, (m) => !has(m, 'description'), 8],
  ['$eq null', { price: { $eq: null } }, (m) => m.price === null, 1],
  ['$ne null', { price: { $ne: null } }, (m) => m.price !== null, 8],
  [
    'ranges on two fields',
    { price: { $gte: 20, $lte: 100 }, rating: { $gte: 4.0 } },
    (m) => m.price >= 20 && m.price <= 100 && m.rating >= 4,
    4,
  ],
  [
    '$in and $lt',
    { category: { $in: ['electronics', 'home'] }, price: { $lt: 100 } },
    (m) => ['electronics', 'home'].includes(m.category) && m.price < 100,
    4,
  ],
  [
    '$ne and $exists',
    { category: { $ne: 'books' }, description: { $exists: false } },
    (m) => m.category !== 'books' && !has(m, 'description'),
    7,
  ],
  [
    '$nor of equalities',
    { $nor: [{ category: 'electronics' }, { category: 'books' }] },
    (m) => !['electronics', 'books'].includes(m.category),
    4,
  ],
  [
    '$nor of ranges',
    { $nor: [{ price: { $lt: 20 } }, { price: { $gt: 100 } }] },
    (m) => m.price !== null && m.price >= 20 && m.price <= 100,
    5,
  ],
  [
    '$nor of $or',
    { $nor: [{ $or: [{ category: 'electronics' }, { price: { $gt: 150 } }] }] },
    (m) => m.price !== null && !(m.category === 'electronics' || m.price > 150),
    4,
  ],
  [
    '$nor of $and',
    { $nor: [{ $and: [{ category: 'electronics' }, { available: true }] }] },
    (m) => !(m.category === 'electronics' && m.available === true),
    6,
  ],
  ['$not $in', { category: { $not: { $in: ['electronics', 'books'] } } }, (m) => !['electronics', 'books'].includes(m.category), 4],
  [
    'a top-level $not of $and',
    { $not: { $and: [{ price: { $gt: 50 } }, { rating: { $gte: 4.5 } }] } },
    (m) => (m.price !== null && !(m.price > 50)) || (has(m, 'rating') && !(m.rating >= 4.5)),
    6,
  ],
  [
    'a top-level $not of $or',
    { $not: { $or: [{ category: 'electronics' }, { available: false }] } },
    (m) => !(m.category === 'electronics' || m.available === false),
    4,
  ],
  ['$not $eq on a boolean', { available: { $not: { $eq: false } } }, (m) => m.available !== false, 7],
  ['$not of a range', { price: { $not: { $gte: 20, $lte: 80 } } }, (m) => m.price !== null && !(m.price >= 20 && m.price <= 80), 4],
  ['$not $ne (double negation)', { category: { $not: { $ne: 'electronics' } } }, (m) => m.category === 'electronics', 3],
  [
    '$not $lt (a missing rating is left out, as @mastra/pg does)',
    { rating: { $not: { $lt: 4.0 } } },
    (m) => has(m, 'rating') && !(m.rating < 4),
    6,
  ],
  [
    'a top-level $not of $and (home, ≥ 100)',
    { $not: { $and: [{ category: 'home' }, { price: { $gte: 100 } }] } },
    (m) => !(m.category === 'home' && m.price >= 100),
    7,
  ],
  [
    '$or of two $not',
    { $or: [{ price: { $not: { $gt: 50 } } }, { rating: { $not: { $lt: 4.5 } } }] },
    (m) => (m.price !== null && !(m.price > 50)) || (has(m, 'rating') && !(m.rating < 4.5)),
    7,
  ],
  ['$not $exists', { description: { $not: { $exists: true } } }, (m) => !has(m, 'description'), 8],
  ['$not $all', { tags: { $not: { $all: ['premium'] } } }, (m) => !m.tags.includes('premium'), 5],
  ['$elemMatch with a comparison', { reviews: { $elemMatch: { score: { $gte: 5 } } } }, (m) => reviews(m).some((r) => r.score >= 5), 2],
  ['$elemMatch with an equality', { reviews: { $elemMatch: { author: 'user3' } } }, (m) => reviews(m).some((r) => r.author === 'user3'), 1],
  [
    '$elemMatch with two conditions',
    { reviews: { $elemMatch: { score: { $gte: 4 }, author: { $in: ['user3', 'user4', 'user5'] } } } },
    (m) => reviews(m).some((r) => r.score >= 4 && ['user3', 'user4', 'user5'].includes(r.author)),
    1,
  ],
  ['$elemMatch with no match', { reviews: { $elemMatch: { score: { $gt: 10 } } } }, () => false, 0],
  [
    '$elemMatch with a range',
    { reviews: { $elemMatch: { score: { $gte: 3, $lte: 4 } } } },
    (m) => reviews(m).some((r) => r.score >= 3 && r.score <= 4),
    2,
  ],
  ['$size of tags', { tags: { $size: 2 } }, (m) => m.tags.length === 2, 4],
  ['$size of reviews', { reviews: { $size: 3 } }, (m) => reviews(m).length === 3, 1],
  [
    '$and beside a field at the top',
    { $and: [{ category: { $in: ['electronics', 'home'] } }], price: { $gte: 50 } },
    (m) => ['electronics', 'home'].includes(m.category) && m.price >= 50,
    4,
  ],
  // What the translation maps, as @mastra/pg does.
  ['an array value is $in', { category: ['books', 'home'] }, (m) => ['books', 'home'].includes(m.category), 5],
  ['$in of one value not in a list', { category: { $in: 'home' } }, (m) => m.category === 'home', 3],
  [
    '$contains with an array is $all',
    { tags: { $contains: ['premium', 'sale'] } },
    (m) => m.tags.includes('premium') && m.tags.includes('sale'),
    1,
  ],
  ['an $or of nothing matches nothing', { $or: [] }, () => false, 0],
]

describeUnless(MASTRA_MISSING)('pgscale/mastra: filter operators', () => {
  let kit: MastraKit
  let vector: PgScaleVector
  const name = indexName('filter_ops_test')
  const ids = PRODUCTS.map((p) => p.name)
  const query = (filter: object) => vector.query({ indexName: name, queryVector: createUnitVector(0), topK: 10, filter: filter as never })

  beforeAll(async () => {
    kit = await loadMastra(t.db)
    vector = kit.vector('acme')
    await vector.createIndex({ indexName: name, dimension: DIM })
    await vector.upsert({ indexName: name, vectors: PRODUCTS.map((_, i) => createVector(i + 1)), metadata: PRODUCTS, ids })
  })

  it.each(CASES)('%s', async (_, filter, meaning, count) => {
    const translated = new kit.adapter.PgScaleFilterTranslator().translate(filter as never)
    const expected = PRODUCTS.filter(meaning).map((p) => p.name)
    expect(expected).toHaveLength(count)
    expect(PRODUCTS.filter((p) => matchesFilter(p, translated ?? {})).map((p) => p.name)).toEqual(expected)
    expect((await query(filter)).map((r) => r.id).sort()).toEqual(expected)
  })

  it('the same filters select the same rows in a metadata-only query, updateVector and deleteVectors', async () => {
    const filter = { $nor: [{ price: { $lt: 20 } }, { price: { $gt: 100 } }] }
    const matching = PRODUCTS.filter((m) => m.price !== null && m.price >= 20 && m.price <= 100).map((p) => p.name)
    expect((await vector.query({ indexName: name, filter, topK: 100 })).map((r) => r.id)).toEqual(matching)
    const copy = indexName('filter_ops_copy')
    await vector.createIndex({ indexName: copy, dimension: DIM })
    await vector.upsert({ indexName: copy, vectors: PRODUCTS.map((_, i) => createVector(i + 1)), metadata: PRODUCTS, ids })
    await vector.updateVector({ indexName: copy, filter, update: { metadata: { touched: true } } })
    expect((await vector.query({ indexName: copy, filter: { touched: true }, topK: 100 })).map((r) => r.id)).toEqual(matching)
    await vector.deleteVectors({ indexName: copy, filter: { touched: true } })
    expect((await vector.describeIndex({ indexName: copy })).count).toBe(PRODUCTS.length - matching.length)
  })

  describe('what pgscale does not evaluate is refused, naming the operator', () => {
    it.each([
      ['$regex', { name: { $regex: '^Product [A-C]' } }],
      ['$regex', { category: { $regex: '(?i)ELECTRONICS' } }],
      ['$regex', { category: { $regex: 'electronics', $options: 'i' } }],
      ['$options', { category: { $options: 'i' } }],
      ['$regex', { name: /^Product/ }],
      ['$regex', { name: { $not: /^Product/ } }],
      ['$regex', { $or: [{ tags: ['sale'] }, { name: { $regex: 'A' } }] }],
      ['$contains', { description: { $contains: 'novel' } }],
    ])('%s in %j', async (operator, filter) => {
      const err = await query(filter).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(kit.MastraError)
      const mastra = err as InstanceType<MastraKit['MastraError']>
      expect(mastra.id).toBe('MASTRA_VECTOR_PGSCALE_QUERY_INVALID_FILTER')
      expect(mastra.category).toBe('USER')
      expect(mastra.message).toContain(`Unsupported operator: ${operator}`)
      expect(mastra.details).toMatchObject({ operator })
      for (const refused of [
        vector.deleteVectors({ indexName: name, filter: filter as never }),
        vector.updateVector({ indexName: name, filter: filter as never, update: { metadata: {} } }),
        vector.upsert({ indexName: name, vectors: [createVector(1)], ids: ['new'], deleteFilter: filter as never }),
      ]) {
        await expect(refused).rejects.toThrow(`Unsupported operator: ${operator}`)
      }
      expect((await vector.describeIndex({ indexName: name })).count).toBe(PRODUCTS.length)
    })
  })

  it('translates what the dialects write differently, and passes the rest through', () => {
    const translate = (filter: object) => new kit.adapter.PgScaleFilterTranslator().translate(filter as never)
    // Equality compares texts as in @mastra/pg (4 is '4'); negations leave out what is missing or null.
    expect(translate({ tags: ['a', 'b'], owner: { team: 'x', level: { $gt: 1 } } })).toEqual({
      tags: { $in: ['a', 'b'] },
      'owner.team': 'x',
      'owner.level': { $gt: 1 },
    })
    expect(translate({ $not: { a: 1 }, $nor: [{ b: 'x' }] })).toEqual({ a: { $nin: [1, '1', null] }, b: { $nin: ['x', null] } })
    expect(translate({ rating: { $not: { $lt: 4 } } })).toEqual({ rating: { $gte: 4 } })
    expect(translate({ a: { $in: 'x', $nin: 1, $contains: ['p'], $all: ['q'] } })).toEqual({
      $and: [{ a: 'x' }, { a: { $nin: [1, '1', null] } }, { a: { $all: ['p', 'q'] } }],
    })
    expect(translate({ r: { $elemMatch: { score: [4, 5] } } })).toEqual({ r: { $elemMatch: { score: { $in: [4, '4', 5, '5'] } } } })
    expect(translate({ $and: [], $nor: [] })).toEqual({})
    for (const empty of [undefined, null, {}]) expect(translate(empty as never)).toBeUndefined()
  })

  describe('nested objects, dates and values the dialects treat alike', () => {
    const nested = indexName('filter_nested')
    const rows: Meta[] = [
      { owner: { team: 'search', level: 2 }, created_at: '2025-01-10T12:00:00Z', size: 5 },
      { owner: { team: 'search', level: 3 }, created_at: '2025-03-01T00:00:00+02:00', size: '5' },
      { owner: { team: 'infra', level: 2 }, created_at: '2024-12-31T23:59:59Z', size: 7 },
    ]
    beforeAll(async () => {
      await vector.createIndex({ indexName: nested, dimension: DIM })
      await vector.upsert({ indexName: nested, vectors: rows.map((_, i) => createVector(i + 1)), metadata: rows, ids: ['n0', 'n1', 'n2'] })
    })
    const ids = async (filter: object) => (await vector.query({ indexName: nested, filter: filter as never, topK: 10 })).map((r) => r.id)

    it('a nested object without operators is a nested path; dotted keys are paths too', async () => {
      expect(await ids({ owner: { team: 'search' } })).toEqual(['n0', 'n1'])
      expect(await ids({ owner: { team: 'search', level: { $gte: 3 } } })).toEqual(['n1'])
      expect(await ids({ 'owner.level': 2 })).toEqual(['n0', 'n2'])
      expect(await ids({ owner: { team: 'search' }, 'owner.team': 'infra' })).toEqual([])
    })

    it('a Date compares as an instant with ISO-8601 timestamps; ranges are type-strict, equality compares texts', async () => {
      expect(await ids({ created_at: { $gte: new Date('2025-01-01T00:00:00Z') } })).toEqual(['n0', 'n1'])
      expect(await ids({ created_at: { $lt: new Date('2025-02-28T23:00:00Z') } })).toEqual(['n0', 'n1', 'n2'])
      expect(await ids({ size: 5 })).toEqual(['n0', 'n1']) // equality compares texts in @mastra/pg: 5 is '5'
      expect(await ids({ size: '5' })).toEqual(['n0', 'n1'])
      expect(await ids({ size: { $gt: 4 } })).toEqual(['n0', 'n2'])
    })
  })
})
