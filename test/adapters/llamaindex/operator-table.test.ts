import { beforeAll, expect, it } from 'vitest'
import type { MetadataFilters, VectorStoreQuery, VectorStoreQueryResult } from '@llamaindex/core/vector-store'
import { PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import {
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
import { LLAMAINDEX_MISSING, loadLlamaIndex, sortedIds, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * LlamaIndex.TS's filter operators × {present, missing, null, wrong type}, asked of
 * SimpleVectorStore (llamaindex 0.12.1, in memory: the reference of docs/adapters/llamaindex.md
 * "Filters", so it runs on PGlite too) and of pgscale/llamaindex on the same nodes. Every cell must
 * agree, or the adapter refuse the filter with a typed error; the table is docs/adapters/llamaindex.md's
 * (`PGSCALE_WRITE_OPERATOR_TABLES=1` writes it). LlamaIndex.TS has no filtered delete (only
 * `delete(refDocId)`), so reads are what filters reach.
 */
const t = useTestDatabase()
const DIM = 4

const CASES: Record<string, OperatorCase & { operator: string; value: unknown }> = {
  eq: { label: '== 4', operator: '==', value: 4, yes: 4, no: 3, wrong: '4' },
  eqString: { label: "== 'a'", operator: '==', value: 'a', yes: 'a', no: 'b', wrong: ['a'] },
  ne: { label: '!= 4', operator: '!=', value: 4, yes: 3, no: 4, wrong: '4' },
  gt: { label: '> 4', operator: '>', value: 4, yes: 5, no: 3, wrong: 'x' },
  gte: { label: '>= 4', operator: '>=', value: 4, yes: 4, no: 3, wrong: 'x' },
  lt: { label: '< 4', operator: '<', value: 4, yes: 3, no: 5, wrong: 'x' },
  lte: { label: '<= 4', operator: '<=', value: 4, yes: 4, no: 5, wrong: 'x' },
  in: { label: "in [4, 'a']", operator: 'in', value: [4, 'a'], yes: 4, no: 3, wrong: '4' },
  nin: { label: "nin [4, 'a']", operator: 'nin', value: [4, 'a'], yes: 3, no: 4, wrong: '4' },
  any: { label: "any ['a']", operator: 'any', value: ['a'], yes: ['a', 'b'], no: ['b'], wrong: 'a' },
  all: { label: "all ['a', 'b']", operator: 'all', value: ['a', 'b'], yes: ['a', 'b'], no: ['a'], wrong: 'a' },
  contains: { label: "contains 'a'", operator: 'contains', value: 'a', yes: ['a'], no: ['b'], wrong: 'a' },
  isEmpty: { label: 'is_empty', operator: 'is_empty', value: '', yes: '', no: 'a', wrong: [] },
  textMatch: { label: "text_match 'a'", operator: 'text_match', value: 'a', yes: 'xa', no: 'b', wrong: 1 },
}

describeUnless(LLAMAINDEX_MISSING)('pgscale/llamaindex: the operator table against SimpleVectorStore', () => {
  let kit: LlamaIndexKit
  let adapter: PgScaleVectorStore
  let simple: InstanceType<LlamaIndexKit['llamaindex']['SimpleVectorStore']>

  const query = (key: string): VectorStoreQuery => {
    const c = CASES[key]!
    const filters = {
      filters: [
        { key: 'c', operator: '==', value: key },
        { key: 'f', operator: c.operator, value: c.value },
      ],
      condition: 'and',
    } as unknown as MetadataFilters
    return { queryEmbedding: [1, 0.5, 0.25, 0], similarityTopK: 200, mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT, filters }
  }

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    const nodes = () =>
      Object.entries(CASES).flatMap(([key, c]) =>
        KINDS.flatMap((kind, k) => {
          const metadata = metadataFor(c, kind, key)
          return metadata ? [kit.node(`${key}-${k}`, `${key} ${k}`, [1, k / 5, 0.5, 0.25], metadata, `doc-${key}`)] : []
        }),
      )
    const embedModel = kit.hashEmbedding(DIM)
    adapter = kit.adapter.PgScaleVectorStore.forTenant(await PgVectorStore.open(t.db, { table: 'li_optable', dimensions: DIM }), 'acme', {
      embedModel,
    })
    simple = new kit.llamaindex.SimpleVectorStore({ embedModel })
    await adapter.add(nodes())
    await simple.add(nodes())
  })

  async function answers(store: { query(q: VectorStoreQuery): Promise<VectorStoreQueryResult> }, key: string): Promise<Answer[]> {
    let found: Set<string>
    try {
      found = new Set(sortedIds(await store.query(query(key))))
    } catch {
      return KINDS.map(() => 'refused')
    }
    return KINDS.map((kind, k) => (metadataFor(CASES[key]!, kind, key) === undefined ? 'none' : found.has(`${key}-${k}`) ? 'yes' : 'no'))
  }

  it('every operator × {present, missing, null, wrong type}: the same nodes as SimpleVectorStore, or refused', async () => {
    const lines: TableLine[] = []
    for (const [key, c] of Object.entries(CASES)) {
      lines.push({ filter: `f ${c.label}`, reference: await answers(simple, key), adapter: await answers(adapter, key) })
    }
    const rendered = renderTable(lines, 'llamaindex 0.12.1 `SimpleVectorStore`')
    if (WRITE_TABLES) writeDocumentedTable('llamaindex', rendered)
    const differing = lines.filter((l) => l.reference.some((r, i) => r !== l.adapter[i] && l.adapter[i] !== 'refused'))
    expect(differing.map((l) => `${l.filter}: ${l.reference.join(',')} vs ${l.adapter.join(',')}`)).toEqual([])
    expect(rendered).toBe(documentedTable('llamaindex'))
  })
})
