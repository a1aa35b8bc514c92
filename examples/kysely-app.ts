/**
 * A Kysely app that uses pgscale on its own pool, with its own CamelCasePlugin: one transaction
 * writes a document row, the document's chunks and the month's rollup together; a search reads
 * them back. Run: `npx tsx examples/kysely-app.ts` (DATABASE_URL, or a local PostgreSQL + pgvector).
 */
import { CamelCasePlugin, Kysely, PostgresDialect, sql, type Generated } from 'kysely'
import pg from 'pg'
import { MonthlyRollup, PgVectorStore, provision, rollupTable } from 'pgscale'

interface AppSchema {
  documents: { tenantId: string; id: string; title: string; createdAt: Generated<Date> }
}

const DIM = 4
const embed = (text: string) => [1, text.length % 7, (text.charCodeAt(0) % 5) + 1, text.split(' ').length]

const server = await provision({ provider: process.env.DATABASE_URL ? 'url' : 'local' })
const pool = new pg.Pool({ connectionString: server.url, max: 5 })
pool.on('error', (err) => console.error('idle client error (the pool replaces it):', err.message))
const db = new Kysely<AppSchema>({ dialect: new PostgresDialect({ pool }), plugins: [new CamelCasePlugin()] })

try {
  await db.schema
    .createTable('documents')
    .ifNotExists()
    .addColumn('tenantId', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('createdAt', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('documents_pkey', ['tenantId', 'id'])
    .execute()

  // pgscale on the app's Kysely: one pool, and the plugin never touches pgscale's own statements.
  const store = await PgVectorStore.open(db, { table: 'document_chunks', dimensions: DIM })
  const monthly = rollupTable('documents_monthly', { groupBy: {}, measures: { documents: 'integer' } })
  await monthly.create(db)
  const rollup = new MonthlyRollup({
    source: 'documents',
    target: monthly,
    at: 'created_at',
    tenant: 'tenant_id',
    groupBy: [],
    measures: { documents: sql`count(*)` },
    zone: 'UTC',
  })

  const paragraphs = ['Invoices are due in thirty days.', 'Late invoices pay a fee.', 'Refunds take a week.']
  const createdAt = await db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('documents')
      .values({ tenantId: 'acme', id: 'billing-policy', title: 'Billing policy' })
      .returning('createdAt')
      .executeTakeFirstOrThrow()
    await store.forTenant('acme', { transaction: trx }).replaceDocument(
      'billing-policy',
      paragraphs.map((content) => ({ content, embedding: embed(content), metadata: { sourceKind: 'policy' } })),
    )
    await rollup.refreshAt(trx, { tenantId: 'acme', moment: row.createdAt })
    return row.createdAt
  })

  const hits = await store.forTenant('acme').search(embed('When are invoices due?'), { k: 2 })
  const [bucket] = await rollup.read(db, { tenantId: 'acme', from: createdAt, to: createdAt })
  console.log(
    `search: ${hits.map((h) => `${h.documentId}#${h.chunkIndex} (${h.distance.toFixed(3)}) ${JSON.stringify(h.metadata)}`).join('; ')}`,
  )
  console.log(`rollup: ${JSON.stringify(bucket)}`)
  if (hits.length !== 2 || hits[0]!.metadata.sourceKind !== 'policy' || bucket?.documents !== 1) {
    throw new Error('the example did not read back what it wrote')
  }
  console.log('kysely-app example: ok')
} finally {
  await db.destroy()
  await server.stop()
}
