import { beforeAll, expect, it } from 'vitest'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import {
  documentedAdapterAnswers,
  documentedTable,
  KINDS,
  metadataFor,
  renderTable,
  WRITE_TABLES,
  writeDocumentedTable,
  type Answer,
  type OperatorCase,
  type TableLine,
} from '../support/operator-table.js'
import { DIM, indexName, loadMastra, MASTRA_MISSING, pad, type MastraKit, type PgScaleVector } from './mastra-kit.js'

/**
 * Mastra's filter operators × {present, missing, null, wrong type}, each plain and under each
 * negation Mastra has (`$not` on the field, `$not` at the top, `$nor`), asked of @mastra/pg's
 * `PgVector` (the reference: Mastra's PostgreSQL store, installed in examples/mastra) and of
 * pgscale/mastra on the same rows in the same database. Every cell must agree (or the filter be
 * refused by pgscale with a typed error naming its operator); the table is docs/adapters/mastra.md's
 * (`PGSCALE_WRITE_OPERATOR_TABLES=1` writes it). Without a server URL (PGlite) there is no
 * @mastra/pg: the adapter is held to the documented table. Deletes and updates take the same
 * translation: the rows (`{rating: 4.5}`, `{rating: 3}`, `{}`) are deleted and updated
 * under `$not` in both stores.
 */
const t = useTestDatabase()

/** @mastra/pg, from examples/mastra at run time (its types are not part of the adapters' typecheck). */
const MASTRA_PG: string = '@mastra/pg'

const CASES: Record<string, OperatorCase & { op: Record<string, unknown> }> = {
  eqNumber: { label: '$eq 4', op: { $eq: 4 }, yes: 4, no: 3, wrong: '4' },
  eqString: { label: "$eq 'a'", op: { $eq: 'a' }, yes: 'a', no: 'b', wrong: 1 },
  eqBoolean: { label: '$eq true', op: { $eq: true }, yes: true, no: false, wrong: 'true' },
  eqNull: { label: '$eq null', op: { $eq: null }, no: 1 },
  ne: { label: '$ne 4', op: { $ne: 4 }, yes: 3, no: 4, wrong: '4' },
  neNull: { label: '$ne null', op: { $ne: null }, yes: 1 },
  gt: { label: '$gt 4', op: { $gt: 4 }, yes: 5, no: 3, wrong: '5' },
  gte: { label: '$gte 4', op: { $gte: 4 }, yes: 4, no: 3, wrong: '5' },
  lt: { label: '$lt 4', op: { $lt: 4 }, yes: 3, no: 5, wrong: '3' },
  lte: { label: '$lte 4', op: { $lte: 4 }, yes: 4, no: 5, wrong: '3' },
  gtString: { label: "$gt 'm'", op: { $gt: 'm' }, yes: 'x', no: 'c', wrong: 5 },
  in: { label: "$in [4, 'a']", op: { $in: [4, 'a'] }, yes: 4, no: 3, wrong: '4' },
  nin: { label: "$nin [4, 'a']", op: { $nin: [4, 'a'] }, yes: 3, no: 4, wrong: '4' },
  all: { label: "$all ['a']", op: { $all: ['a'] }, yes: ['a', 'b'], no: ['b'], wrong: 1 },
  contains: { label: "$contains ['a']", op: { $contains: ['a'] }, yes: ['a', 'b'], no: ['b'], wrong: 1 },
  size: { label: '$size 2', op: { $size: 2 }, yes: ['a', 'b'], no: ['a'], wrong: 'ab' },
  existsTrue: { label: '$exists true', op: { $exists: true }, yes: 1 },
  existsFalse: { label: '$exists false', op: { $exists: false }, no: 1 },
  elemMatch: {
    label: '$elemMatch { s: { $gt: 4 } }',
    op: { $elemMatch: { s: { $gt: 4 } } },
    yes: [{ s: 5 }],
    no: [{ s: 3 }],
    wrong: { s: 5 },
  },
  elemMatchScalar: { label: '$elemMatch { $gt: 4 }', op: { $elemMatch: { $gt: 4 } }, yes: [5], no: [3], wrong: 5 },
  containsEmpty: { label: '$contains []', op: { $contains: [] }, yes: ['a'], wrong: 1 },
  inEmpty: { label: '$in []', op: { $in: [] }, no: 1 },
}

/** The forms a field condition `{ f: op }` is asked in. */
const FORMS: Record<string, (op: Record<string, unknown>) => Record<string, unknown>> = {
  '{ f: op }': (op) => ({ f: op }),
  '{ f: { $not: op } }': (op) => ({ f: { $not: op } }),
  '{ $not: { f: op } }': (op) => ({ $not: { f: op } }),
  '{ $nor: [{ f: op }] }': (op) => ({ $nor: [{ f: op }] }),
}

interface Store {
  query(filter: Record<string, unknown>): Promise<string[]>
}

const rowId = (key: string, kind: number) => `${key}-${kind}`

/** Every case's rows, as ids, vectors and metadata. */
function rows(): { ids: string[]; vectors: number[][]; metadata: Record<string, unknown>[] } {
  const out = { ids: [] as string[], vectors: [] as number[][], metadata: [] as Record<string, unknown>[] }
  for (const [key, c] of Object.entries(CASES)) {
    KINDS.forEach((kind, k) => {
      const metadata = metadataFor(c, kind, key)
      if (!metadata) return
      out.ids.push(rowId(key, k))
      out.vectors.push(pad([1, (out.ids.length % 7) / 7, 0.5, 0.25]))
      out.metadata.push(metadata)
    })
  }
  return out
}

async function answers(store: Store, key: string, filter: Record<string, unknown>): Promise<Answer[]> {
  let found: Set<string>
  try {
    found = new Set(await store.query({ c: key, ...filter }))
  } catch {
    return KINDS.map(() => 'refused')
  }
  return KINDS.map((kind, k) => (metadataFor(CASES[key]!, kind, key) === undefined ? 'none' : found.has(rowId(key, k)) ? 'yes' : 'no'))
}

async function table(reference: Store | undefined, adapter: Store): Promise<TableLine[]> {
  const documented = reference ? undefined : documentedAdapterAnswers('mastra')
  const lines: TableLine[] = []
  for (const [form, shape] of Object.entries(FORMS)) {
    for (const [key, c] of Object.entries(CASES)) {
      const filter = form.replace('op', c.label)
      const ours = await answers(adapter, key, shape(c.op))
      lines.push({ filter, adapter: ours, reference: reference ? await answers(reference, key, shape(c.op)) : documented!.get(filter)! })
    }
  }
  return lines
}

describeUnless(MASTRA_MISSING)('pgscale/mastra: the operator table against @mastra/pg', () => {
  let kit: MastraKit
  let vector: PgScaleVector
  let reference: (Store & { raw: any }) | undefined
  const INDEX = indexName('optable')

  beforeAll(async () => {
    kit = await loadMastra(t.db)
    vector = kit.vector('acme')
    const data = rows()
    await vector.createIndex({ indexName: INDEX, dimension: DIM })
    await vector.upsert({ indexName: INDEX, ...data })
    if (t.url) {
      const { PgVector } = (await import(MASTRA_PG)) as { PgVector: any }
      const pg = new PgVector({ id: 'optable-reference', connectionString: t.url })
      await pg.createIndex({ indexName: INDEX, dimension: DIM })
      await pg.upsert({ indexName: INDEX, ...data })
      const query = async (filter: Record<string, unknown>) =>
        (await pg.query({ indexName: INDEX, queryVector: pad([1, 0, 0, 0]), topK: 1000, filter: filter as never })).map(
          (r: { id: string }) => r.id,
        )
      reference = { raw: pg, query }
    }
  })

  it('every operator × {present, missing, null, wrong type}, plain and negated: the same rows as @mastra/pg', async () => {
    const adapter: Store = {
      query: async (filter) =>
        (await vector.query({ indexName: INDEX, queryVector: pad([1, 0, 0, 0]), topK: 1000, filter: filter as never })).map((r) => r.id),
    }
    const lines = await table(reference, adapter)
    const rendered = renderTable(lines, '@mastra/pg 1.27.1 `PgVector`, PostgreSQL 15')
    if (WRITE_TABLES && reference) writeDocumentedTable('mastra', rendered)
    const differing = lines.filter((l) => l.reference.some((r, i) => r !== l.adapter[i] && l.adapter[i] !== 'refused'))
    expect(differing.map((l) => `${l.filter}: ${l.reference.join(',')} vs ${l.adapter.join(',')}`)).toEqual([])
    if (reference) expect(rendered).toBe(documentedTable('mastra'))
  })
})

describeUnless(MASTRA_MISSING)('pgscale/mastra: deletes and updates under negation, beside @mastra/pg', () => {
  let kit: MastraKit
  const RATINGS = [{ rating: 4.5 }, { rating: 3 }, {}]
  const ids = ['r45', 'r3', 'none']
  const vectors = ids.map((_, i) => pad([1, i / 3, 0.5, 0.25]))
  const NEGATED = { rating: { $not: { $lt: 4 } } }

  beforeAll(async () => {
    kit = await loadMastra(t.db)
  })

  /** The ids left, and each one's metadata, after `act` on a fresh index of the three rows. */
  async function after(store: any, act: (store: any, index: string) => Promise<void>): Promise<Record<string, unknown>> {
    const index = indexName('negation')
    await store.createIndex({ indexName: index, dimension: DIM })
    await store.upsert({ indexName: index, ids, vectors, metadata: RATINGS })
    await act(store, index)
    const rows = await store.query({ indexName: index, queryVector: pad([1, 0, 0, 0]), topK: 10 })
    return Object.fromEntries(rows.map((r: { id: string; metadata?: unknown }) => [r.id, r.metadata]).sort())
  }

  const remove = (store: any, index: string) => store.deleteVectors({ indexName: index, filter: NEGATED })
  const update = (store: any, index: string) =>
    store.updateVector({ indexName: index, filter: NEGATED, update: { metadata: { rating: 4.5, touched: true } } })

  it('{ rating: { $not: { $lt: 4 } } }: query returns, deleteVectors deletes and updateVector updates only { rating: 4.5 }', async () => {
    const vector = kit.vector('acme')
    const index = indexName('negation')
    await vector.createIndex({ indexName: index, dimension: DIM })
    await vector.upsert({ indexName: index, ids, vectors, metadata: RATINGS })
    const found = await vector.query({ indexName: index, queryVector: pad([1, 0, 0, 0]), topK: 10, filter: NEGATED })
    expect(found.map((r) => r.id)).toEqual(['r45'])
    expect(Object.keys(await after(vector, remove))).toEqual(['none', 'r3'])
    expect((await after(vector, update)).none).toEqual({})
  })

  it('the same rows left and changed as @mastra/pg (server only)', async (ctx) => {
    if (!t.url) return ctx.skip('needs a PostgreSQL server for @mastra/pg; PGlite (embedded) has none to connect to')
    const { PgVector } = (await import(MASTRA_PG)) as { PgVector: any }
    const pg = new PgVector({ id: 'negation-reference', connectionString: t.url })
    const vector = kit.vector('acme')
    expect(await after(vector, remove)).toEqual(await after(pg, remove))
    expect(await after(vector, update)).toEqual(await after(pg, update))
  })
})
