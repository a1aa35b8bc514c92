import { CompiledQuery, sql } from 'kysely'
import { PgVectorStore, type Database, type LocalSettings } from '../../src/index.js'
import { compileFilter, isoInstantFunction, parseFilter, renderFilteredStatements, renderStatements } from '../../src/bench-kit.js'
import { monthsBetween } from '../../src/bench-kit.js'
import { rebuildStatement, refreshStatement } from '../../src/bench-kit.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec } from '../../bench/synthetic/corpus.js'
import { expensesRollup, seedExpenses } from '../rollup/rollup-fixture.js'

/** One statement whose plan shape the suite records. */
export interface PlanCase {
  name: string
  statement: CompiledQuery
  settings?: LocalSettings
}

/**
 * The datasets of the plan-regression suite: deterministic, ANALYZEd, each table under 30,000 rows
 * so ANALYZE reads every row and the statistics (hence the plans) are the same on every run.
 * - a store with 150 small tenants (40 chunks), a large tenant (8,000) on the shared HNSW index and
 *   a promoted tenant (6,000) with its own partial index;
 * - an expenses table with one huge tenant (15,000 of 25,000 rows) and its rollup.
 */
export const corpus: CorpusSpec = {
  seed: 'plans',
  dim: 32,
  tenants: [
    { id: 'large', chunks: 8000 },
    { id: 'promoted', chunks: 6000 },
    ...Array.from({ length: 150 }, (_, i) => ({ id: `small-${i}`, chunks: 40 })),
  ],
}

export async function seedPlanData(db: Database): Promise<PlanCase[]> {
  const store = await PgVectorStore.open(db, { table: 'plan_chunks', dimensions: corpus.dim })
  await store.bulkIngest(generateCorpus(corpus))
  await store.createIndex()
  await store.createTenantIndex('promoted')
  // VACUUM too: it empties the GIN pending list, whose size moves the full-text branch's cost (on
  // Citus's small shards, between a seq scan and the GIN index from run to run).
  await sql`vacuum analyze plan_chunks`.execute(db)

  await seedExpenses(db, { seed: 'plans', rows: 25_000, tenants: 40, bigTenantRows: 15_000, months: 24 })
  const { target, rollup } = expensesRollup('America/Mexico_City')
  await target.create(db)
  await rollup.rebuild(db, { tenantId: 1, since: '2024-01-01T12:00:00Z', until: '2025-12-31T12:00:00Z' })
  await rollup.rebuild(db, { tenantId: 2, since: '2024-01-01T12:00:00Z', until: '2025-12-31T12:00:00Z' })
  await sql`analyze expenses_monthly`.execute(db)

  const s = renderStatements(store.config)
  const filtered = renderFilteredStatements(store.config)
  const invoice = compileFilter(parseFilter({ kind: 'invoice' }, 'plan case'), { first: 5, instantFunction: isoInstantFunction(undefined) })
  const q = (tenant: string) => `[${Array.from(queryVectors(corpus, tenant, 1)[0]!).join(',')}]`
  const search: LocalSettings = { 'hnsw.ef_search': 100, 'hnsw.iterative_scan': 'relaxed_order' }
  const raw = (text: string, params: unknown[]): CompiledQuery => CompiledQuery.raw(text, params)
  return [
    { name: 'store.search small tenant', statement: raw(s.search, ['small-7', q('small-7'), 10]), settings: search },
    { name: 'store.search large tenant (shared index)', statement: raw(s.search, ['large', q('large'), 10]), settings: search },
    { name: 'store.search promoted tenant (own index)', statement: raw(s.search, ['promoted', q('promoted'), 10]), settings: search },
    {
      name: 'store.search with a metadata filter',
      statement: raw(filtered.knn(invoice.sql), ['large', q('large'), 10, 40, ...invoice.params]),
      settings: search,
    },
    { name: 'store.exactSearch large tenant', statement: raw(s.exactSearch, ['large', q('large'), 10]) },
    {
      name: 'store.hybridSearch small tenant',
      statement: raw(s.hybridSearch, ['small-7', q('small-7'), queryTexts(corpus, 'small-7', 1)[0], 10, 40, 60]),
      settings: search,
    },
    {
      name: 'store.hybridSearch large tenant',
      statement: raw(s.hybridSearch, ['large', q('large'), queryTexts(corpus, 'large', 1)[0], 10, 40, 60]),
      settings: search,
    },
    { name: 'store.deleteDocument', statement: raw(s.deleteDocument, ['large', 'large/doc-3']) },
    { name: 'store.replaceDocument', statement: raw(s.replaceDocument, ['large', 'large/doc-3', [0], ['x'], ['{}'], [q('large')]]) },
    { name: 'rollup.refreshAt big tenant', statement: refreshStatement(rollup.parts, 1, '2025-06-01').compile(db) },
    { name: 'rollup.refreshAt typical tenant', statement: refreshStatement(rollup.parts, 2, '2025-06-01').compile(db) },
    {
      name: 'rollup.rebuild big tenant, 24 months',
      statement: rebuildStatement(rollup.parts, 1, monthsBetween('2024-01-01', '2025-12-01')).compile(db),
      settings: { jit: 'off' },
    },
    { name: 'rollup.read by group', statement: rollup.readQuery(db, { tenantId: 1, from: '2025-01', to: '2025-12' }).compile(db) },
    {
      name: 'rollup.read totals',
      statement: rollup.readQuery(db, { tenantId: 1, from: '2025-01', to: '2025-12', groupBy: [] }).compile(db),
    },
  ]
}
