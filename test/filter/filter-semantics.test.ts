import { beforeAll, describe, expect, it } from 'vitest'
import { FILTER_LIMITS, InvalidArgumentError, matchesFilter, PgVectorStore, type MetadataFilter } from '../../src/index.js'
import { countingPool } from '../support/query-counter.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * The filter language's rules, one example each: which of a few documents a filter matches, on the
 * server (`find`) and in the reference evaluator, both against the expected answer.
 */
const t = useTestDatabase()
const docs: Record<string, Record<string, unknown>> = {
  stock: {
    stock: [
      { loc: 'A', qty: 5 },
      { loc: 'B', qty: 0 },
    ],
    kind: 'item',
  },
  owner: { owner: { team: 'x', lead: 'ana' }, n: 1, kind: 'memo' },
  tags: { tags: ['red', 'blue'], n: 1.0, price: '5' },
  nested: { tags: [['red'], 'green'], n: '1', at: '2024-01-01T00:30:00+01:00' },
  nulls: { owner: null, n: 2.5, at: '2023-12-31T23:30:00Z', price: 12 },
  strings: { s: 'é', t: 'B', at: '2024-01-01T01:00:00+01:00', price: 3 },
  empty: {},
}
const ids = Object.keys(docs)
let store: PgVectorStore

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'semantics', dimensions: 4, fullText: false })
  await store.forTenant('t').replaceDocument(
    'doc',
    ids.map((id, i) => ({ content: id, embedding: axisVector(4, i), metadata: docs[id] })),
  )
})

const cases: Array<[string, MetadataFilter, string[]]> = [
  ['a field value is $eq', { kind: 'memo' }, ['owner']],
  ['dotted paths walk arrays of objects element-wise', { 'stock.loc': 'B' }, ['stock']],
  ['…and each element is tested on its own', { 'stock.qty': { $gt: 3 } }, ['stock']],
  ['$eq is deep equality, object key order ignored', { owner: { lead: 'ana', team: 'x' } }, ['owner']],
  ['…and never containment: a sub-object does not equal', { owner: { team: 'x' } }, []],
  ['$eq is type-strict: 1 is not "1"', { n: 1 }, ['owner', 'tags']],
  ['…and 1 equals 1.0', { n: { $eq: 1.0 } }, ['owner', 'tags']],
  ['on an array field: any element equals', { tags: 'red' }, ['tags']],
  ['…or the whole array does', { tags: ['red', 'blue'] }, ['tags']],
  ['…one level: an element that is an array is matched whole, not entered', { tags: ['red'] }, ['nested']],
  ['…so [["red"]] does not equal "red"', { tags: { $in: ['red'] } }, ['tags']],
  ['null matches JSON null and a missing field', { owner: null }, ['stock', 'tags', 'nested', 'nulls', 'strings', 'empty']],
  ['$ne matches a missing field', { kind: { $ne: 'item' } }, ['owner', 'tags', 'nested', 'nulls', 'strings', 'empty']],
  ['$nin matches a missing field', { kind: { $nin: ['item', 'memo'] } }, ['tags', 'nested', 'nulls', 'strings', 'empty']],
  ['$gt compares numbers with numbers only', { price: { $gt: 4 } }, ['nulls']],
  ['…and strings with strings', { price: { $gt: '4' } }, ['tags']],
  ['strings compare in code-point order, not a linguistic collation', { s: { $gt: 'z' } }, ['strings']],
  ['…upper case before lower case', { t: { $lt: 'a' } }, ['strings']],
  ['a Date compares, as an instant, with ISO-8601 strings', { at: { $lt: new Date('2024-01-01T00:00:00Z') } }, ['nested', 'nulls']],
  ['…$eq with a Date is the same instant in any offset', { at: new Date('2024-01-01T00:00:00Z') }, ['strings']],
  ['$in: [] matches nothing', { kind: { $in: [] } }, []],
  ['$nin: [] matches everything', { kind: { $nin: [] } }, ids],
  ['$exists is about the key: a JSON null is present', { owner: { $exists: true } }, ['owner', 'nulls']],
  [
    '$exists: false on a nested path matches only where it is missing',
    { 'owner.team': { $exists: false } },
    ids.filter((i) => i !== 'owner'),
  ],
  ['$all: every value is in the array', { tags: { $all: ['blue', 'red'] } }, ['tags']],
  ['$all: [] matches nothing', { tags: { $all: [] } }, []],
  ['$size counts an array', { tags: { $size: 2 } }, ['tags', 'nested']],
  [
    '$elemMatch with operators: one scalar element satisfies all',
    { tags: { $elemMatch: { $gte: 'blue', $lt: 'red' } } },
    ['tags', 'nested'],
  ],
  ['$elemMatch with fields: one object element satisfies all', { stock: { $elemMatch: { loc: 'B', qty: { $lt: 1 } } } }, ['stock']],
  ['…not two elements between them', { stock: { $elemMatch: { loc: 'B', qty: 5 } } }, []],
  ['$not negates its operators and matches a missing field', { price: { $not: { $gt: 4 } } }, ids.filter((i) => i !== 'nulls')],
  ['$and, $or and $nor over sub-filters', { $or: [{ kind: 'item' }, { n: { $gte: 2 } }], $nor: [{ price: 12 }] }, ['stock']],
  ['several fields and several operators on one field AND', { n: { $gte: 1, $lt: 2 }, kind: 'memo' }, ['owner']],
  ['the empty filter matches everything', {}, ids],
]

describe('filter semantics: server and reference agree with the rules', () => {
  for (const [rule, filter, expected] of cases) {
    it(rule, async () => {
      const { rows } = await store.forTenant('t').find({ filter })
      expect(rows.map((r) => r.content).sort()).toEqual([...expected].sort())
      expect(ids.filter((id) => matchesFilter(docs[id]!, filter)).sort()).toEqual([...expected].sort())
    })
  }
})

describe('bad filters: an InvalidArgumentError before anything is sent', () => {
  const deep = (n: number): MetadataFilter => (n === 0 ? { a: 1 } : { $and: [deep(n - 1)] })
  const wide = Object.fromEntries(Array.from({ length: FILTER_LIMITS.nodes + 1 }, (_, i) => [`k${i}`, i]))
  const bad: Array<[string, unknown]> = [
    ['an unknown operator', { a: { $regex: 'x' } }],
    ['$where', { $where: 'sleep(1)' }],
    ['a field operator at the top', { $gt: 1 }],
    ['an empty $or', { $or: [] }],
    ['$and not an array', { $and: { a: 1 } }],
    ['$in not an array', { a: { $in: 'x' } }],
    ['$size negative', { a: { $size: -1 } }],
    ['$size fractional', { a: { $size: 1.5 } }],
    ['an object as a comparison operand', { a: { $gt: { b: 1 } } }],
    ['a boolean as a comparison operand', { a: { $lt: true } }],
    ['NaN', { a: { $gte: Number.NaN } }],
    ['Infinity', { a: Infinity }],
    ['an empty key', { '': 1 }],
    ['an empty path segment', { 'a..b': 1 }],
    ['undefined', { a: undefined }],
    ['undefined inside an array', { a: { $in: [1, undefined] } }],
    ['an invalid Date', { a: { $lt: new Date('nope') } }],
    ['operators mixed with fields', { a: { $gt: 1, b: 2 } }],
    ['$exists not a boolean', { a: { $exists: 1 } }],
    ['$not of a value', { a: { $not: 5 } }],
    ['NUL in a value', { a: 'x\u0000y' }],
    ['a lone surrogate in a key', { '\ud800': 1 }],
    ['a Map', new Map([['a', 1]])],
    ['an array as the filter', [{ a: 1 }]],
    ['a bigint', { a: 1n }],
    [`more than ${FILTER_LIMITS.depth} levels`, deep(FILTER_LIMITS.depth + 1)],
    [`more than ${FILTER_LIMITS.nodes} conditions`, wide],
  ]
  for (const [what, filter] of bad) {
    it(what, async () => {
      const acme = store.forTenant('t')
      const f = filter as MetadataFilter
      const before = await acme.count()
      for (const call of [
        () => acme.search(axisVector(4, 0), { filter: f }),
        () => acme.exactSearch(axisVector(4, 0), { filter: f }),
        () => acme.find({ filter: f }),
        () => acme.count(f),
        () => acme.deleteWhere(f),
        async () => matchesFilter({}, f),
      ]) {
        await expect(call()).rejects.toBeInstanceOf(InvalidArgumentError)
      }
      expect(await acme.count()).toBe(before)
    })
  }

  it(`a filter at the limits (${FILTER_LIMITS.depth} levels, ${FILTER_LIMITS.nodes} conditions) is accepted`, async () => {
    expect(await store.forTenant('t').count(deep(FILTER_LIMITS.depth - 1))).toBe(0)
    const widest = Object.fromEntries(Array.from({ length: FILTER_LIMITS.nodes - 1 }, (_, i) => [`k${i}`, i]))
    expect(await store.forTenant('t').count(widest)).toBe(0)
  })

  it('deleteWhere refuses the empty filter, and deletes nothing', async () => {
    const acme = store.forTenant('t')
    for (const empty of [{}, { $and: [{}] }]) await expect(acme.deleteWhere(empty)).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(await acme.count()).toBe(ids.length)
  })

  itWithServer(t.target)('a rejected filter sends nothing: no query reaches the server', async () => {
    const counted = countingPool({ connectionString: t.url, max: 1 })
    try {
      const acme = (await PgVectorStore.open(counted.pool, { table: 'semantics', dimensions: 4, fullText: false })).forTenant('t')
      counted.reset()
      for (const [, filter] of bad) {
        const f = filter as MetadataFilter
        await expect(acme.search(axisVector(4, 0), { filter: f })).rejects.toBeInstanceOf(InvalidArgumentError)
        await expect(acme.hybridSearch({ embedding: axisVector(4, 0), text: 'x', filter: f })).rejects.toBeInstanceOf(InvalidArgumentError)
        await expect(acme.deleteWhere(f)).rejects.toBeInstanceOf(InvalidArgumentError)
      }
      expect(counted.queries).toBe(0)
    } finally {
      await counted.pool.end()
    }
  })
})
