import { beforeAll, describe, expect, it } from 'vitest'
import { matchesFilter, PgVectorStore } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'
import { randomFilter, randomMetadata, rng, showFilter } from './random-filters.js'

/**
 * The differential property test of the filter language: on seeded random metadata and seeded
 * random filter trees, the server's answer (`find` and `count`) equals the TypeScript reference
 * evaluator's, on a store without metadata indexes and on one with every field type declared (the
 * indexed form must be exact too). `PGSCALE_FILTER_CASES` sets how many filters (default 1,500).
 */
const t = useTestDatabase()
const CASES = Number(process.env.PGSCALE_FILTER_CASES ?? 1500)
const DOCS = 160
const metadata = (() => {
  const r = rng('filter-docs')
  return Array.from({ length: DOCS }, () => randomMetadata(r))
})()

async function openStore(table: string): Promise<PgVectorStore> {
  const store = await PgVectorStore.open(t.db, { table, dimensions: 4, fullText: false })
  const chunks = metadata.map((m, i) => ({ content: String(i), embedding: axisVector(4, i, 0.1), metadata: m }))
  await store.forTenant('tenant-a').replaceDocument('doc', chunks)
  return store
}

let plain: PgVectorStore
let indexed: PgVectorStore

beforeAll(async () => {
  plain = await openStore('diff_plain')
  indexed = await openStore('diff_indexed')
  for (const [path, type] of [
    ['n', 'number'],
    ['s', 'string'],
    ['a', 'string'],
    ['a', 'number'],
    ['d', 'timestamp'],
    ['b', 'boolean'],
    ["q'uote", 'string'],
    ['ü😀', 'number'],
    ['a.n', 'number'],
  ] as const) {
    await indexed.createMetadataIndex(path, type)
  }
  expect((await indexed.stats()).metadataIndexes).toHaveLength(9)
}, 120_000)

async function check(store: PgVectorStore, seed: string, cases: number): Promise<void> {
  const r = rng(seed)
  const tenant = store.forTenant('tenant-a')
  let matchedSome = 0
  for (let c = 0; c < cases; c++) {
    const filter = randomFilter(r)
    const expected = metadata.flatMap((m, i) => (matchesFilter(m, filter) ? [i] : []))
    const { rows } = await tenant.find({ filter, limit: DOCS })
    const got = rows.map((row) => Number(row.content)).sort((a, b) => a - b)
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      const wrong = [...new Set([...got, ...expected])].filter((i) => got.includes(i) !== expected.includes(i)).slice(0, 3)
      throw new Error(
        `case ${c} of seed ${seed}: ${showFilter(filter)}\n` +
          wrong
            .map((i) => `  doc ${i} ${JSON.stringify(metadata[i])}: server ${got.includes(i)}, reference ${expected.includes(i)}`)
            .join('\n'),
      )
    }
    if (c % 10 === 0) expect(await tenant.count(filter)).toBe(expected.length)
    if (expected.length > 0 && expected.length < DOCS) matchedSome++
  }
  // The generator is useful: most filters select some rows but not all.
  expect(matchedSome / cases).toBeGreaterThan(0.3)
}

describe('filters: the server agrees with the reference evaluator', () => {
  it(`${CASES} random filters on a store without metadata indexes`, async () => {
    await check(plain, 'filters-plain', CASES)
  }, 600_000)

  it(`${CASES} random filters on a store with every field type indexed`, async () => {
    await check(indexed, 'filters-indexed', CASES)
  }, 600_000)
})
