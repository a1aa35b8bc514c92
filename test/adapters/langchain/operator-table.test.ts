import { afterAll, beforeAll, expect, it } from 'vitest'
import { PgVectorStore } from '../../../src/index.js'
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
import { LANGCHAIN_MISSING, loadLangChain, type LangChainKit } from './langchain-kit.js'

/**
 * LangChain's community `PGVectorStore` filter dialect (`in notIn arrayContains gt gte lt lte neq`
 * and a plain equality) × {present, missing, null, wrong type}, asked of `PGVectorStore`
 * (@langchain/community, installed in examples/langchain: the reference) and of pgscale/langchain on
 * the same rows in the same database. Every cell agrees except the documented ones (DIFFERENCES);
 * the table is docs/adapters/langchain.md's (`PGSCALE_WRITE_OPERATOR_TABLES=1` writes it). Without a
 * server URL (PGlite) there is no PGVectorStore: the adapter is held to the documented table. The
 * adapter's `delete({ filter })` takes the same translation: `notIn` deletes no row without the key.
 */
const t = useTestDatabase()
const COMMUNITY: string = '@langchain/community/vectorstores/pgvector'
const PG: string = 'pg'

const CASES: Record<string, OperatorCase & { op: unknown }> = {
  eq: { label: '4', op: 4, yes: 4, no: 3, wrong: '4' },
  eqString: { label: "'a'", op: 'a', yes: 'a', no: 'b', wrong: 1 },
  in: { label: "{ in: [4, 'a'] }", op: { in: [4, 'a'] }, yes: 4, no: 3, wrong: '4' },
  notIn: { label: "{ notIn: [4, 'a'] }", op: { notIn: [4, 'a'] }, yes: 3, no: 4, wrong: '4' },
  arrayContains: { label: "{ arrayContains: ['a'] }", op: { arrayContains: ['a'] }, yes: ['a', 'b'], no: ['b'], wrong: 1 },
  gt: { label: '{ gt: 4 }', op: { gt: 4 }, yes: 5, no: 3, wrong: '5' },
  gte: { label: '{ gte: 4 }', op: { gte: 4 }, yes: 4, no: 3, wrong: '5' },
  lt: { label: '{ lt: 4 }', op: { lt: 4 }, yes: 3, no: 5, wrong: '3' },
  lte: { label: '{ lte: 4 }', op: { lte: 4 }, yes: 4, no: 5, wrong: '3' },
  neq: { label: '{ neq: 4 }', op: { neq: 4 }, yes: 3, no: 4, wrong: '4' },
  rangeOfString: { label: "{ gt: 'm' }", op: { gt: 'm' }, yes: 'x', no: 'c', wrong: 5 },
}

/**
 * Where pgscale/langchain differs from PGVectorStore, each documented in docs/adapters/langchain.md:
 * a plain equality is pgscale's own (type-strict: 4 is not '4'; PGVectorStore compares texts), and
 * a range reads only numbers (PGVectorStore casts the text to numeric: a numeric string compares).
 */
const DIFFERENCES = ['{ f: 4 }', '{ f: { gt: 4 } }', '{ f: { gte: 4 } }', '{ f: { lt: 4 } }', '{ f: { lte: 4 } }']

interface Store {
  search(filter: Record<string, unknown>): Promise<string[]>
}

async function answers(store: Store, key: string, op: unknown): Promise<Answer[]> {
  let found: Set<string>
  try {
    found = new Set(await store.search({ c: key, f: op }))
  } catch {
    return KINDS.map(() => 'refused')
  }
  return KINDS.map((kind, k) => (metadataFor(CASES[key]!, kind, key) === undefined ? 'none' : found.has(`${key}-${k}`) ? 'yes' : 'no'))
}

describeUnless(LANGCHAIN_MISSING)('pgscale/langchain: the PGVectorStore dialect against PGVectorStore', () => {
  let kit: LangChainKit
  let adapter: Store
  let reference: Store | undefined
  /** PGVectorStore holds a client of its pool: `end()` releases it and ends the pool. */
  let pool: { end(): Promise<void> } | undefined
  const vector = (i: number) => [1, (i % 7) / 7, 0.5, 0.25, 0, 0]
  const documents: Array<{ pageContent: string; metadata: Record<string, unknown> }> = []
  for (const [key, c] of Object.entries(CASES)) {
    KINDS.forEach((kind, k) => {
      const metadata = metadataFor(c, kind, key)
      if (metadata) documents.push({ pageContent: `${key}-${k}`, metadata: { ...metadata, row: `${key}-${k}` } })
    })
  }

  beforeAll(async () => {
    kit = await loadLangChain()
    const store = await PgVectorStore.open(t.db, { table: 'lc_optable', dimensions: 6 })
    const vs = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.synthetic())
    await vs.addVectors(
      documents.map((_, i) => vector(i)),
      documents.map((d) => new kit.Document(d)),
    )
    adapter = { search: async (filter) => (await vs.similaritySearchVectorWithScore(vector(0), 200, filter)).map(([d]) => d.metadata.row) }
    if (t.url) {
      const { PGVectorStore } = (await import(COMMUNITY)) as { PGVectorStore: any }
      const { default: pg } = (await import(PG)) as {
        default: { Pool: new (o: object) => { end(): Promise<void>; on(event: 'error', f: () => void): unknown } }
      }
      // The test database is dropped after the file (its connections terminated): an idle client's
      // error then is expected, not an unhandled one.
      const lcPool = new pg.Pool({ connectionString: t.url, max: 2 })
      lcPool.on('error', () => {})
      const lc = await PGVectorStore.initialize(kit.synthetic(), {
        pool: lcPool,
        tableName: 'lc_optable_reference',
        dimensions: 6,
      })
      await lc.addVectors(
        documents.map((_, i) => vector(i)),
        documents.map((d) => new kit.Document(d)),
      )
      pool = lc
      reference = {
        search: async (filter) =>
          ((await lc.similaritySearchVectorWithScore(vector(0), 200, filter)) as Array<[{ metadata: { row: string } }, number]>).map(
            ([d]) => d.metadata.row,
          ),
      }
    }
  })

  afterAll(async () => {
    await pool?.end()
  })

  it('every operator × {present, missing, null, wrong type}: the same rows as PGVectorStore, but where documented', async () => {
    const documented = reference ? undefined : documentedAdapterAnswers('langchain')
    const lines: TableLine[] = []
    for (const [key, c] of Object.entries(CASES)) {
      const filter = `{ f: ${c.label} }`
      const ours = await answers(adapter, key, c.op)
      lines.push({ filter, adapter: ours, reference: reference ? await answers(reference, key, c.op) : documented!.get(filter)! })
    }
    const rendered = renderTable(
      lines,
      '@langchain/community 1.1.29 `PGVectorStore`, PostgreSQL 15; "refused" in its column: the query failed',
    )
    if (WRITE_TABLES && reference) writeDocumentedTable('langchain', rendered)
    const differing = lines.filter((l) => l.reference.some((r, i) => r !== l.adapter[i] && l.adapter[i] !== 'refused')).map((l) => l.filter)
    if (reference) {
      expect(differing).toEqual(DIFFERENCES)
      expect(rendered).toBe(documentedTable('langchain'))
    } else {
      expect(lines.map((l) => l.adapter)).toEqual(lines.map((l) => documentedAdapterAnswers('langchain').get(l.filter)))
    }
  })

  it('delete({ filter: { f: { notIn } } }) deletes what PGVectorStore would: no row without f', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'lc_optable_delete', dimensions: 6 })
    const vs = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.synthetic())
    const rows = [{ rating: 4.5 }, { rating: 3 }, {}, { rating: null }]
    await vs.addVectors(
      rows.map((_, i) => vector(i)),
      rows.map((metadata, i) => new kit.Document({ pageContent: `r${i}`, metadata })),
      { ids: ['r45', 'r3', 'none', 'null'] },
    )
    await vs.delete({ filter: { rating: { notIn: [3] } } })
    expect((await vs.getByIds(['r45', 'r3', 'none', 'null'])).map((d) => d.id).sort()).toEqual(['none', 'null', 'r3'])
  })
})
