import { beforeAll, expect, it } from 'vitest'
import type { Metadata } from '@llamaindex/core/schema'
import type { MetadataFilter, MetadataFilters, VectorStoreQuery } from '@llamaindex/core/vector-store'
import { PgVectorStore } from '../../../src/index.js'
import { seededRandom } from '../../../src/bench-kit.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { LLAMAINDEX_MISSING, loadLlamaIndex, sortedIds, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * The seeded differential test of the LlamaIndex filter translator: seeded random `MetadataFilters`
 * (every operator the adapter maps, `and`/`or`, empty lists) over nodes with seeded random metadata
 * (strings, numbers, arrays, nulls, empty values, missing keys, values that collide so filters
 * match), asked of the adapter and of LlamaIndex's own SimpleVectorStore (llamaindex 0.12.1, the
 * reference of docs/adapters/llamaindex.md "Filters") on the same nodes with `similarityTopK` past
 * the corpus: the matched node ids must be the same set, on a plain table, on one with metadata
 * indexes (the indexed form of the compiler) and through `docIds` (pgscale's reference evaluator).
 * A second tenant holds a copy of every node under other ids, so whatever a filter matches it also
 * matches there: none of them ever appears, and that tenant's own answer is the mirror image.
 *
 * What the generator leaves out, each a documented difference (docs/adapters/llamaindex.md,
 * "Where SimpleVectorStore's JavaScript differs, the adapter is exact"):
 * - "comparisons do not coerce": `<`, `<=`, `>`, `>=` only on keys whose values are numbers and
 *   non-numeric, non-empty strings (never null, an array, `""` or a numeric string), with a number
 *   or a non-numeric, non-empty string as the operand;
 * - "a found `0` or `""` counts in `in`, `nin` and `contains`": no `0` or `""` in their operands
 *   (`any` and `all` use `includes`, and take them);
 * - "a node without a source document is filtered on its metadata": every node has one;
 * - "`contains` on an array holding objects or booleans is evaluated (SimpleVectorStore throws)":
 *   arrays hold strings and numbers only.
 * Refused by the adapter, so never generated: `text_match`, nested `MetadataFilters` (LlamaIndex.TS's
 * filters are flat: `MetadataFilters.filters` is `MetadataFilter[]`), booleans and null as values.
 *
 * `PGSCALE_ADAPTER_FILTER_SEED` and `PGSCALE_ADAPTER_FILTER_CASES` replay another seed or run more cases.
 */
const t = useTestDatabase()
const SEED = process.env.PGSCALE_ADAPTER_FILTER_SEED ?? 'llamaindex-filter-differential'
const CASES = Number(process.env.PGSCALE_ADAPTER_FILTER_CASES ?? 300)
const NODES = 60
const DIM = 8

type Rng = { next(): number; int(n: number): number }
type Scalar = string | number
type Op = MetadataFilter['operator']

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[r.int(xs.length)]!
const some = <T>(r: Rng, xs: readonly T[], max: number): T[] => Array.from({ length: r.int(max + 1) }, () => pick(r, xs))

/**
 * The keys, each with the values a node may hold there (`undefined`: the key is missing). The
 * comparable keys hold only numbers and non-numeric, non-empty strings (see above); the others
 * hold what SimpleVectorStore reads exactly with every other operator. Few values per key, so
 * filters and nodes collide.
 */
const GENRES = ['drama', 'comedy', 'Drama', 'horror', 'a b', 'ab', 'é']
const YEARS = [1985, 1999, 2005, 2010, 2020, 0, -1, 2001.5]
const AUTHORS = ['ann', 'bob', 'Bob', 'cy']
const TAGS = ['a', 'b', 'c', 'd', '']
const NUMS = [0, 1, 2, 3]
const NOTES: Scalar[] = ['hello', 'x', '', '1', 1, 0]

const KEYS: Record<string, (r: Rng) => unknown> = {
  genre: (r) => (r.next() < 0.85 ? pick(r, GENRES) : r.next() < 0.5 ? 7 : undefined),
  year: (r) => (r.next() < 0.85 ? pick(r, YEARS) : r.next() < 0.5 ? 'unknown' : undefined),
  author: (r) => (r.next() < 0.75 ? pick(r, AUTHORS) : undefined),
  tags: (r) => {
    const x = r.next()
    if (x < 0.55) return some(r, TAGS, 3)
    if (x < 0.65) return pick(r, TAGS)
    if (x < 0.75) return null
    if (x < 0.8) return []
    return undefined
  },
  nums: (r) => {
    const x = r.next()
    if (x < 0.5) return some(r, NUMS, 3)
    if (x < 0.6) return [pick(r, NUMS), pick(r, TAGS)]
    if (x < 0.75) return pick(r, NUMS)
    if (x < 0.8) return '2'
    return undefined
  },
  note: (r) => {
    const x = r.next()
    if (x < 0.6) return pick(r, NOTES)
    if (x < 0.7) return null
    if (x < 0.8) return ['hello']
    return undefined
  },
  flag: (r) => (r.next() < 0.7 ? r.next() < 0.5 : undefined),
}
/**
 * LlamaIndex's own keys, which `nodeToMetadata` writes into every node's metadata (strings: each
 * node's source document, its class name).
 */
const LLAMAINDEX_KEYS = ['ref_doc_id', 'doc_id', 'document_id', '_node_type']
/** Keys whose values compare without coercion in SimpleVectorStore. */
const COMPARABLE = ['genre', 'year', 'author', ...LLAMAINDEX_KEYS]
/** The keys filters name: the nodes' own keys twice as often as LlamaIndex's, and one no node has. */
const FILTER_KEYS = [...Object.keys(KEYS), ...Object.keys(KEYS), ...LLAMAINDEX_KEYS, 'missing']
const REF_DOCS = ['d1', 'd2', 'd3', 'd4']

/** Operands: the values nodes hold, so filters match, and some they do not. */
const OPERANDS: Record<string, Scalar[]> = {
  genre: [...GENRES, 7, 'zzz'],
  year: [...YEARS, 2004, 'unknown', 'm'],
  author: [...AUTHORS, 'b', 'carl'],
  tags: [...TAGS, 'z', 1],
  nums: [...NUMS, '2', 5, 'a'],
  note: [...NOTES, 'hi'],
  flag: [1, 0, 'true'],
  ref_doc_id: [...REF_DOCS, 'd', 'None'],
  doc_id: [...REF_DOCS, 'd5'],
  document_id: [...REF_DOCS, 'None'],
  _node_type: ['TextNode', 'Document', 'T'],
  missing: ['x', 1],
}
/** A comparison's operand: a number or a non-numeric, non-empty string. */
const ordered = (v: Scalar) => typeof v === 'number' || (v !== '' && Number.isNaN(Number(v)))
/** No `0` or `""` in the operands of `in`, `nin` and `contains`. */
const found = (v: Scalar) => v !== 0 && v !== ''

const OPERATORS: Op[] = ['==', '!=', '<', '<=', '>', '>=', 'in', 'nin', 'any', 'all', 'contains', 'is_empty']

function randomMetadata(r: Rng): Metadata {
  const metadata: Metadata = {}
  for (const [key, value] of Object.entries(KEYS)) {
    const v = value(r)
    if (v !== undefined) metadata[key] = v
  }
  return metadata
}

function randomCondition(r: Rng): MetadataFilter {
  const key = pick(r, FILTER_KEYS)
  const operators =
    COMPARABLE.includes(key) || key === 'missing' ? OPERATORS : OPERATORS.filter((op) => !['<', '<=', '>', '>='].includes(op))
  const operator = pick(r, operators)
  const operands = OPERANDS[key]!
  switch (operator) {
    case 'is_empty':
      return { key, operator }
    case '<':
    case '<=':
    case '>':
    case '>=':
      return { key, operator, value: pick(r, operands.filter(ordered)) }
    case 'contains':
      return { key, operator, value: pick(r, operands.filter(found)) }
    case 'in':
    case 'nin':
      return { key, operator, value: some(r, operands.filter(found), 3) as string[] }
    case 'any':
    case 'all':
      return { key, operator, value: some(r, operands, 3) as string[] }
    default:
      return { key, operator, value: pick(r, operands) }
  }
}

function randomFilters(r: Rng): MetadataFilters {
  const n = r.next() < 0.05 ? 0 : 1 + r.int(4)
  const filters = Array.from({ length: n }, () => randomCondition(r))
  const x = r.next()
  return x < 0.2 ? { filters } : { filters, condition: x < 0.6 ? 'and' : 'or' }
}

describeUnless(LLAMAINDEX_MISSING)('LlamaIndex filters: seeded random filters, the same node ids as SimpleVectorStore', () => {
  let kit: LlamaIndexKit
  let plain: PgScaleVectorStore
  let indexed: PgScaleVectorStore
  let other: PgScaleVectorStore
  let simple: InstanceType<LlamaIndexKit['llamaindex']['SimpleVectorStore']>
  const r: Rng = seededRandom(`${SEED}:nodes`)
  const metadata = Array.from({ length: NODES }, () => randomMetadata(r))
  const ids = metadata.map((_, i) => `n${String(i).padStart(2, '0')}`)
  const refDocs = ids.map(() => pick(r, REF_DOCS))
  const embeddings = ids.map(() => Array.from({ length: DIM }, () => r.next() - 0.3))

  const query = (filters: MetadataFilters, docIds?: string[]): VectorStoreQuery => ({
    queryEmbedding: [1, 0.5, 0, 0, 0.25, 0, 0, 0],
    similarityTopK: 2 * NODES,
    mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT,
    filters,
    ...(docIds ? { docIds } : {}),
  })

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    const nodes = (prefix = '') =>
      ids.map((id, i) => kit.node(`${prefix}${id}`, `node ${id}`, embeddings[i]!, structuredClone(metadata[i]!), refDocs[i]))
    const embedModel = kit.hashEmbedding(DIM)
    const plainStore = await PgVectorStore.open(t.db, { table: 'li_filter_diff', dimensions: DIM })
    const indexedStore = await PgVectorStore.open(t.db, { table: 'li_filter_diff_indexed', dimensions: DIM })
    for (const [path, type] of [
      ['genre', 'string'],
      ['year', 'number'],
      ['author', 'string'],
      ['ref_doc_id', 'string'],
      ['note', 'string'],
    ] as const) {
      await indexedStore.createMetadataIndex(path, type)
    }
    plain = kit.adapter.PgScaleVectorStore.forTenant(plainStore, 'tenant-a', { embedModel })
    indexed = kit.adapter.PgScaleVectorStore.forTenant(indexedStore, 'tenant-a', { embedModel })
    // The second tenant: the same nodes (so the same filters match them) under other ids.
    other = kit.adapter.PgScaleVectorStore.forTenant(plainStore, 'tenant-b', { embedModel })
    simple = new kit.llamaindex.SimpleVectorStore({ embedModel })
    for (const s of [plain, indexed, simple]) await s.add(nodes())
    await other.add(nodes('b-'))
  })

  it(`${CASES} random filters (seed ${JSON.stringify(SEED)}): the adapter matches SimpleVectorStore's node ids, never another tenant's`, async () => {
    const r = seededRandom(SEED)
    const seen = new Map<string, number>()
    let matchedSome = 0
    for (let c = 0; c < CASES; c++) {
      const filters = randomFilters(r)
      for (const f of filters.filters) seen.set(f.operator, (seen.get(f.operator) ?? 0) + 1)
      const docIds = c % 3 === 0 ? ids.filter(() => r.next() < 0.5) : undefined
      const expected = sortedIds(await simple.query(query(filters)))
      const answers: Array<[string, string[], string[]]> = [
        ['plain table', sortedIds(await plain.query(query(filters))), expected],
        ['indexed table', sortedIds(await indexed.query(query(filters))), expected],
        ['second tenant', sortedIds(await other.query(query(filters))), expected.map((id) => `b-${id}`)],
      ]
      if (docIds) {
        const theirs = sortedIds(await simple.query(query(filters, docIds)))
        answers.push(['docIds', sortedIds(await plain.query(query(filters, docIds))), theirs])
      }
      for (const [where, got, want] of answers) {
        if (JSON.stringify(got) === JSON.stringify(want)) continue
        const wrong = [...new Set([...got, ...want])].filter((id) => got.includes(id) !== want.includes(id)).slice(0, 4)
        throw new Error(
          `seed ${JSON.stringify(SEED)}, case ${c} (${where}): ${JSON.stringify(filters)}` +
            (docIds ? ` docIds ${JSON.stringify(docIds)}` : '') +
            '\n' +
            wrong
              .map((id) => {
                const i = ids.indexOf(id.replace(/^b-/, ''))
                return `  ${id} ${JSON.stringify(metadata[i])} (ref doc ${refDocs[i]}): adapter ${got.includes(id)}, SimpleVectorStore ${want.includes(id)}`
              })
              .join('\n'),
        )
      }
      expect(answers[0]![1].some((id) => id.startsWith('b-'))).toBe(false)
      if (expected.length > 0 && expected.length < NODES) matchedSome++
    }
    // The generator is useful: every operator is drawn often, most filters select some nodes but not all.
    for (const op of OPERATORS) expect(seen.get(op) ?? 0, op).toBeGreaterThan(CASES / 20)
    expect(matchedSome / CASES).toBeGreaterThan(0.4)
  }, 600_000)
})
