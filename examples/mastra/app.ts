/**
 * A Mastra app on pgscale: two tenants (acme, globex) share one Mastra index — one table — and
 * each sees only its own vectors. It upserts, queries with a filter, updates and deletes by filter
 * through `PgScaleVector` (a `MastraVector`, what `new PgVector(...)` was), and checks every step.
 * Run: `npx tsx examples/mastra/app.ts` — on DATABASE_URL when set, else an embedded PGlite. It
 * imports `pgscale` and `pgscale/mastra` as an app does, from the copy in examples/mastra/node_modules
 * (`npm run build && npm run adapters:install -- mastra` refreshes it). Exits non-zero if a check fails.
 */
import { PgScaleError, provision } from 'pgscale'
import { PgScaleVectors, type PgScaleVector } from 'pgscale/mastra'

const DIM = 8
const INDEX = 'support_docs'

/** A stand-in for an embedding model: each word adds to a few dimensions (deterministic). */
function embed(text: string): number[] {
  const v = new Array<number>(DIM).fill(0.01)
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0
    for (const c of word) h = (h * 31 + c.charCodeAt(0)) >>> 0
    v[h % DIM]! += 1
    v[(h >>> 8) % DIM]! += 0.5
  }
  return v
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`check failed: ${what}`)
  console.log(`  ok: ${what}`)
}

async function upsertDocs(vector: PgScaleVector, docs: Array<{ id: string; text: string; source: string }>): Promise<void> {
  await vector.upsert({
    indexName: INDEX,
    ids: docs.map((d) => d.id),
    vectors: docs.map((d) => embed(d.text)),
    metadata: docs.map(({ text, source }) => ({ text, source, tenant: vector.tenantId })),
  })
}

const server = await provision({ provider: process.env.DATABASE_URL ? 'url' : 'embedded' })
const vectors = new PgScaleVectors({ id: 'pgscale', db: server.db })
try {
  console.log(
    `pgscale/mastra example on ${server.info.provider} (PostgreSQL ${server.info.serverVersion}, pgvector ${server.info.pgvectorVersion})`,
  )
  const acme = vectors.forTenant('acme')
  const globex = vectors.forTenant('globex')
  for (const tenant of [acme, globex]) {
    await tenant.deleteIndex({ indexName: INDEX }) // a rerun starts clean: each tenant's rows only
    await tenant.createIndex({ indexName: INDEX, dimension: DIM, metric: 'cosine' })
  }

  console.log('upsert')
  await upsertDocs(acme, [
    { id: 'faq-refunds', text: 'Refunds are paid within five days', source: 'faq' },
    { id: 'faq-invoices', text: 'Invoices are due in thirty days', source: 'faq' },
    { id: 'blog-launch', text: 'We launched refunds for annual plans', source: 'blog' },
  ])
  await upsertDocs(globex, [
    { id: 'faq-refunds', text: 'Refunds are paid within five days', source: 'faq' },
    { id: 'faq-shipping', text: 'Shipping takes two weeks', source: 'faq' },
  ])
  check((await acme.describeIndex({ indexName: INDEX })).count === 3, 'acme has 3 vectors in support_docs')
  check((await globex.describeIndex({ indexName: INDEX })).count === 2, 'globex has 2 vectors in the same index')

  console.log('query with a filter')
  const hits = await acme.query({ indexName: INDEX, queryVector: embed('how long do refunds take'), topK: 3, filter: { source: 'faq' } })
  for (const hit of hits) console.log(`  ${hit.id} score ${hit.score.toFixed(3)} ${JSON.stringify(hit.metadata)}`)
  check(hits[0]?.id === 'faq-refunds', 'the refunds FAQ ranks first')
  check(
    hits.every((h) => h.metadata?.source === 'faq' && h.metadata?.tenant === 'acme'),
    "only acme's FAQ entries come back",
  )
  const theirs = await globex.query({ indexName: INDEX, queryVector: embed('refunds'), topK: 10, filter: { tenant: 'acme' } })
  check(theirs.length === 0, "globex's filter on acme's metadata finds nothing")

  console.log('update by filter')
  await acme.updateVector({
    indexName: INDEX,
    filter: { source: 'faq' },
    update: { metadata: { source: 'faq', reviewed: true, tenant: 'acme' } },
  })
  const reviewed = await acme.query({ indexName: INDEX, filter: { reviewed: true }, topK: 10 })
  check(reviewed.map((r) => r.id).join() === 'faq-invoices,faq-refunds', "acme's two FAQ entries are marked reviewed")
  check((await globex.query({ indexName: INDEX, filter: { reviewed: true }, topK: 10 })).length === 0, "globex's entries are untouched")

  console.log('delete by filter, then the index')
  await acme.deleteVectors({ indexName: INDEX, filter: { source: 'blog' } })
  check((await acme.describeIndex({ indexName: INDEX })).count === 2, 'acme has 2 vectors left')
  await acme.deleteIndex({ indexName: INDEX })
  check(!(await acme.listIndexes()).includes(INDEX), 'acme no longer lists support_docs')
  check((await globex.describeIndex({ indexName: INDEX })).count === 2, 'globex still has its 2 vectors')

  console.log('a filter pgscale does not evaluate')
  const refused = await globex
    .query({ indexName: INDEX, queryVector: embed('refunds'), filter: { text: { $regex: '^Refund' } } as never })
    .catch((e: Error) => e)
  check(refused instanceof Error && /Unsupported operator: \$regex/.test(refused.message), `refused: ${(refused as Error).message}`)
  check(
    (refused as Error).cause instanceof PgScaleError,
    `its cause is a typed pgscale error (${(refused as Error).cause?.constructor.name})`,
  )
  console.log('mastra example: ok')
} catch (err) {
  console.error(err)
  process.exitCode = 1
} finally {
  await vectors.close()
  await server.stop()
}
