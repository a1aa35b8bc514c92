import { beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, matchesFilter, PgVectorStore, type MetadataFilter } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * Operator-looking keys without their `$` (`{ source: { in: [...] } }`, LangChain's style): as every
 * key of a field's object value they would be an equality with that object and match nothing,
 * silently; each of the 13 is refused with the spelling to use, by every filtered read and write and
 * by the reference evaluator, and nothing is sent. `$eq` matches such an object literally, on the
 * server and in the reference alike.
 */
const t = useTestDatabase()

/** Each bare key, the operator it suggests, and an operand of the kind that operator takes. */
const BARE: Array<[string, string, unknown]> = [
  ['in', '$in', ['refunds']],
  ['nin', '$nin', ['refunds']],
  ['gt', '$gt', 1],
  ['gte', '$gte', 1],
  ['lt', '$lt', 10],
  ['lte', '$lte', 10],
  ['ne', '$ne', 'refunds'],
  ['eq', '$eq', 'refunds'],
  ['exists', '$exists', true],
  ['and', '$and', [{ a: 1 }]],
  ['or', '$or', [{ a: 1 }]],
  ['not', '$not', { $gt: 1 }],
  ['contains', '$all', 'refunds'],
]

const docs: Record<string, Record<string, unknown>> = {
  plain: { source: 'refunds', n: 5 },
  ...Object.fromEntries(BARE.map(([key, , operand]) => [`literal-${key}`, { source: { [key]: operand } }])),
  both: { source: { gte: 1, lte: 10 } },
  logical: { or: [{ a: 1 }] },
}
const ids = Object.keys(docs)
let store: PgVectorStore

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'bare_ops', dimensions: 4, fullText: false })
  await store.forTenant('t').replaceDocument(
    'doc',
    ids.map((id, i) => ({ content: id, embedding: axisVector(4, i % 4), metadata: docs[id] })),
  )
})

/** Every filtered call refuses `filter` with an InvalidArgumentError matching `message`, and deletes nothing. */
async function expectRefused(filter: MetadataFilter, message: RegExp): Promise<void> {
  const acme = store.forTenant('t')
  const before = await acme.count()
  for (const call of [
    () => acme.search(axisVector(4, 0), { filter }),
    () => acme.exactSearch(axisVector(4, 0), { filter }),
    () => acme.find({ filter }),
    () => acme.count(filter),
    () => acme.deleteWhere(filter),
    async () => matchesFilter({}, filter),
  ]) {
    const err = await call().then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(InvalidArgumentError)
    expect((err as Error).message).toMatch(message)
  }
  expect(await acme.count()).toBe(before)
}

/** What `filter` matches on the server (`find`), checked against the reference evaluator. */
async function matched(filter: MetadataFilter): Promise<string[]> {
  const { rows } = await store.forTenant('t').find({ filter })
  const server = rows.map((r) => r.content).sort()
  expect(ids.filter((id) => matchesFilter(docs[id]!, filter)).sort()).toEqual(server)
  return server
}

describe('operator-looking keys without $: refused with the spelling to use', () => {
  for (const [key, op, operand] of BARE) {
    it(`{ source: { ${key}: … } } → did you mean ${op}?`, async () => {
      const escaped = op.replace('$', '\\$')
      await expectRefused({ source: { [key]: operand } }, new RegExp(`"${key}" is not an operator: did you mean ${escaped}`))
      await expectRefused({ $or: [{ n: 5 }, { 'source.kind': { [key]: operand } }] }, new RegExp(`did you mean ${escaped}`))
    })
  }

  it('every key of the object operator-looking is refused too, naming each', async () => {
    await expectRefused({ n: { gte: 1, lte: 10 } }, /"gte", "lte" are not operators: did you mean \$gte, \$lte\?/)
  })

  it('inside $elemMatch, a field of the elements is checked the same way', async () => {
    await expectRefused({ stock: { $elemMatch: { loc: { in: ['A'] } } } }, /did you mean \$in\?/)
  })

  it('and / or with an array of filters at the query level → did you mean $and / $or?', async () => {
    await expectRefused({ or: [{ n: 5 }, { source: 'x' }] }, /"or" is not an operator: did you mean \$or\?/)
    await expectRefused({ and: [{ n: 5 }] }, /"and" is not an operator: did you mean \$and\?/)
  })

  it('the message names the literal spelling', async () => {
    await expectRefused({ source: { in: ['refunds'] } }, /write \{ \$eq: \{ in: … \} \}/)
  })
})

describe('literal matching: $eq (and $in, $ne) take such an object as a value', () => {
  for (const [key, , operand] of BARE) {
    it(`{ source: { $eq: { ${key}: … } } } matches the document holding that object`, async () => {
      expect(await matched({ source: { $eq: { [key]: operand } } })).toEqual([`literal-${key}`])
      expect(await matched({ source: { $in: [{ [key]: operand }] } })).toEqual([`literal-${key}`])
    })
  }

  it('several keys, and $ne', async () => {
    expect(await matched({ source: { $eq: { lte: 10, gte: 1 } } })).toEqual(['both'])
    expect(await matched({ source: { $ne: { gte: 1, lte: 10 } } })).toEqual(ids.filter((i) => i !== 'both').sort())
  })

  it('a field named or, and, in … is still a field', async () => {
    expect(await matched({ or: { $eq: [{ a: 1 }] } })).toEqual(['logical'])
    expect(await matched({ 'or.a': 1 })).toEqual(['logical'])
    expect(await matched({ in: 'x' })).toEqual([])
  })

  it('an object with an operator-looking key among other keys is an equality, as before', async () => {
    expect(await matched({ source: { in: ['refunds'], kind: 'x' } })).toEqual([])
  })

  it('the operators themselves still work', async () => {
    expect(await matched({ source: { $in: ['refunds'] } })).toEqual(['plain'])
    expect(await matched({ n: { $gte: 1, $lte: 10 } })).toEqual(['plain'])
  })
})
