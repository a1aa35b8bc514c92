import { CompiledQuery, sql } from 'kysely'
import pg from 'pg'
import pgvector from 'pgvector'
import { PgVectorStore, type Database, type IngestRow } from '../../src/index.js'
import { renderStatements } from '../../src/bench-kit.js'
import { localMonth } from '../../src/bench-kit.js'
import { int32Hash } from '../../src/bench-kit.js'
import { refreshStatement } from '../../src/bench-kit.js'
import { bareBinaryCopy } from '../baselines/raw-copy.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../synthetic/corpus.js'
import { dropBenchSchema } from '../report/bench-cleanup.js'
import { expensesCopyText, expensesDdl, expensesRollup, generateExpenses } from '../synthetic/expenses.js'

/** One budgeted path: pgscale's call and the same work done raw through `pg` (same SQL). */
export interface BudgetScenario {
  name: 'search' | 'replaceDocument' | 'bulkIngest1k' | 'refreshAt'
  /** Calls per timed block. */
  callsPerBlock: number
  pgscale(i: number): Promise<void>
  raw(i: number): Promise<void>
}

/** Options to inject a regression (for the test that proves the budget bites). */
export interface BudgetInjection {
  /** An extra round trip (`select 1`) before each pgscale search. */
  extraRoundTripPerSearch?: boolean
}

const DIM = 64
const corpus: CorpusSpec = {
  seed: 'budget',
  dim: DIM,
  tenants: [
    { id: 'acme', chunks: 400 },
    { id: 'other', chunks: 400 },
  ],
}

/** The schema the budget works in: its tables, and their records in its own bookkeeping, go with it. */
export const BUDGET_SCHEMA = 'pgscale_budget'
const CHUNKS = `${BUDGET_SCHEMA}.budget_chunks`
const INGEST = `${BUDGET_SCHEMA}.budget_ingest`
const EXPENSES = `${BUDGET_SCHEMA}.budget_expenses`

/**
 * Removes everything the budget creates: its schema, with its tables and the records of its
 * store and rollup (what `close` and the CLI's SIGINT/SIGTERM cleanup run).
 *
 * ### Examples
 * ```ts
 * await dropBudgetData(db)
 * ```
 */
export async function dropBudgetData(db: Database): Promise<void> {
  await dropBenchSchema(db, BUDGET_SCHEMA)
}

/** The data every scenario runs on, and the raw client they are compared through. */
interface BudgetData {
  db: Database
  client: pg.Client
  store: PgVectorStore
  ingestStore: PgVectorStore
  rollup: ReturnType<typeof expensesRollup>['rollup']
  rollupTable: string
  queries: ReturnType<typeof queryVectors>
}

/**
 * Prepares the budget's data in `schema` and returns the scenarios. `url` is the same database,
 * for the raw `pg` client the pgscale paths are compared with.
 *
 * ### Examples
 * ```ts
 * const { scenarios, close } = await prepareScenarios(db, url)
 * ```
 */
export async function prepareScenarios(
  db: Database,
  url: string,
  injection: BudgetInjection = {},
  options: { keep?: boolean } = {},
): Promise<{ scenarios: BudgetScenario[]; close: () => Promise<void> }> {
  await dropBudgetData(db)
  await sql.raw(`create schema ${BUDGET_SCHEMA}`).execute(db)
  const store = await PgVectorStore.open(db, { table: CHUNKS, dimensions: DIM })
  await store.bulkIngest(generateCorpus(corpus))
  await sql`analyze ${sql.raw(CHUNKS)}`.execute(db)
  const ingestStore = await PgVectorStore.open(db, { table: INGEST, dimensions: DIM })
  const ddl = expensesDdl(EXPENSES)
  await sql.raw(ddl.table).execute(db)
  await db.copyFrom(
    `copy ${EXPENSES} (tenant_id, paid_at, category, amount, status) from stdin`,
    expensesCopyText(generateExpenses({ seed: 'budget', rows: 20_000, tenants: 20, bigTenantRows: 5000, months: 12 })),
  )
  await sql.raw(ddl.index).execute(db)
  await sql`analyze ${sql.raw(EXPENSES)}`.execute(db)
  const { target, rollup } = expensesRollup({ source: EXPENSES, target: `${BUDGET_SCHEMA}.budget_monthly`, zone: 'America/Mexico_City' })
  await target.create(db)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const data: BudgetData = {
    db,
    client,
    store,
    ingestStore,
    rollup,
    rollupTable: target.qualified,
    queries: queryVectors(corpus, 'acme', 64),
  }
  return {
    scenarios: [searchScenario(data, injection), replaceScenario(data), ingestScenario(data), refreshScenario(data)],
    close: async () => {
      await client.end()
      if (!options.keep) await dropBudgetData(db)
    },
  }
}

/** `search` (k 10) beside its statements sent raw. */
function searchScenario({ db, client, store, queries }: BudgetData, injection: BudgetInjection): BudgetScenario {
  const statements = renderStatements(store.config)
  const acme = store.forTenant('acme')
  const begin = `BEGIN; SET LOCAL hnsw.ef_search = '100'; SET LOCAL hnsw.iterative_scan = 'relaxed_order'`
  const one = CompiledQuery.raw('select 1')
  return {
    name: 'search',
    callsPerBlock: 40,
    async pgscale(i) {
      if (injection.extraRoundTripPerSearch) await db.executeQuery(one)
      await acme.search(queries[i % queries.length]!, { k: 10, efSearch: 100 })
    },
    async raw(i) {
      await client.query(begin)
      await client.query(statements.search, ['acme', pgvector.toSql(Array.from(queries[i % queries.length]!)), 10])
      await client.query('COMMIT')
    },
  }
}

/** `replaceDocument` of 20 chunks beside its statement sent raw. */
function replaceScenario({ client, store, queries }: BudgetData): BudgetScenario {
  const statements = renderStatements(store.config)
  const acme = store.forTenant('acme')
  const docChunks = queries.slice(0, 20).map((embedding, j) => ({ content: `chunk ${j}`, embedding, metadata: { j } }))
  return {
    name: 'replaceDocument',
    callsPerBlock: 20,
    async pgscale(i) {
      await acme.replaceDocument(`budget-doc-${i % 10}`, docChunks)
    },
    async raw(i) {
      await client.query(statements.replaceDocument, [
        'acme',
        `budget-doc-${i % 10}`,
        docChunks.map((_, j) => j),
        docChunks.map((c) => c.content),
        docChunks.map((c) => JSON.stringify(c.metadata)),
        docChunks.map((c) => `[${Array.from(c.embedding).join(',')}]`),
      ])
    },
  }
}

/** `bulkIngest` of 1,000 rows beside a bare binary COPY of the same rows. */
function ingestScenario({ db, client, ingestStore }: BudgetData): BudgetScenario {
  const ingestBatches = new Map<number, IngestRow[]>()
  const batch = (i: number) => {
    if (!ingestBatches.has(i))
      ingestBatches.set(i, [...generateCorpus({ seed: `ingest-${i}`, dim: DIM, tenants: [{ id: `bulk-${i}`, chunks: 1000 }] })])
    return ingestBatches.get(i)!
  }
  let ingestRound = 0
  return {
    name: 'bulkIngest1k',
    callsPerBlock: 8,
    async pgscale(i) {
      if (i === 0) await sql`truncate ${sql.raw(INGEST)}`.execute(db)
      await ingestStore.bulkIngest(batch(ingestRound++ % 8).map((r) => ({ ...r, tenantId: `p${ingestRound}` })))
    },
    async raw(i) {
      if (i === 0) await sql`truncate ${sql.raw(INGEST)}`.execute(db)
      await bareBinaryCopy(
        client,
        INGEST,
        batch(ingestRound++ % 8).map((r) => ({ ...r, tenantId: `r${ingestRound}` })),
      )
    },
  }
}

/** `refreshAt` of one bucket beside the lock and refresh statement sent raw. */
function refreshScenario({ db, client, rollup, rollupTable }: BudgetData): BudgetScenario {
  const moment = new Date('2025-06-15T12:00:00Z')
  const month = localMonth(moment, 'America/Mexico_City')
  const refresh = refreshStatement(rollup.parts, 2, month).compile(db)
  const lock = `BEGIN; SELECT pg_advisory_xact_lock(${int32Hash(`pgscale.rollup:${rollupTable}`)}, ${int32Hash(`2:${month}`)})`
  return {
    name: 'refreshAt',
    callsPerBlock: 20,
    async pgscale() {
      await rollup.refreshAt(db, { tenantId: 2, moment })
    },
    async raw() {
      await client.query(lock)
      await client.query(refresh.sql, [...refresh.parameters])
      await client.query('COMMIT')
    },
  }
}
