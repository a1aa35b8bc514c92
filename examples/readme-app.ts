import { sql } from 'kysely'
import { connect, MonthlyRollup, PgVectorStore, rollupTable } from 'pgscale'

// Your embedding model goes here (OpenAI, a local model, ...); 4 dimensions keep the example small.
const embed = (text: string) => [(text.length % 7) + 1, text.split(' ').length, (text.charCodeAt(0) % 5) + 1, 1]
const chunk = (source: string, content: string) => ({ content, embedding: embed(content), metadata: { source } })

const db = await connect(process.env.DATABASE_URL) // PostgreSQL 15+ with pgvector 0.8+
const store = await PgVectorStore.open(db, { table: 'readme_chunks', dimensions: 4 })

// Ingest for two tenants: each document is a list of chunks with metadata to filter on.
const acme = store.forTenant('acme')
await acme.replaceDocument('refunds', [chunk('policy', 'Refunds take five days.'), chunk('policy', 'Refunds go to the card used.')])
await acme.replaceDocument('billing', [chunk('faq', 'Invoices are due in 30 days.')])
await store.forTenant('globex').replaceDocument('refunds', [chunk('policy', 'No refunds after 60 days.')])

// Search one tenant with a filter: nearest first, never another tenant's rows.
const hits = await acme.search(embed('How long do refunds take?'), { k: 3, filter: { source: { $in: ['policy'] } } })
console.log(hits.map((h) => `${h.documentId}#${h.chunkIndex} ${h.content}`))

// Replace a document: its old chunks go, the new ones come, in one transaction.
await acme.replaceDocument('refunds', [chunk('policy', 'Refunds take two days.')])

// A monthly rollup of what each tenant asked, by topic.
await sql`create table if not exists questions (tenant_id text not null, asked_at timestamptz not null, topic text not null)`.execute(db)
const questionsMonthly = rollupTable('questions_monthly', { groupBy: { topic: 'text' }, measures: { questions: 'integer' } })
await questionsMonthly.create(db)
const rollup = new MonthlyRollup({
  source: 'questions',
  target: questionsMonthly,
  at: 'asked_at',
  tenant: 'tenant_id',
  groupBy: ['topic'],
  measures: { questions: sql`count(*)` },
  zone: 'UTC',
})
const now = new Date()
await sql`insert into questions values ('acme', ${now}, 'refunds'), ('acme', ${now}, 'billing'), ('globex', ${now}, 'refunds')`.execute(db)
await rollup.refreshAt(db, { tenantId: 'acme', moment: now })
console.log(await rollup.read(db, { tenantId: 'acme', from: now, to: now })) // [{ month: '2026-12', topic: 'billing', questions: 1 }, …]

await db.close()
