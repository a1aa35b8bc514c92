/**
 * A LangChain.js app on pgscale: two tenants' documents through `pgscale/langchain` — ingest, a
 * search with scores, a filter, an MMR retriever, an overwrite and deletes — each tenant seeing only
 * its own rows, the same ids in both. Run: `npx tsx examples/langchain/app.ts` (DATABASE_URL, or an
 * embedded PGlite). `pgscale` and `pgscale/langchain` resolve as in an app: to the packed copy in
 * examples/langchain/node_modules (`npm run build && npm run adapters:install -- langchain`).
 */
import { Document } from '@langchain/core/documents'
import { Embeddings } from '@langchain/core/embeddings'
import { PgVectorStore, provision } from 'pgscale'
import { PgScaleVectorStore } from 'pgscale/langchain'

const DIM = 64

/** A stand-in for a real model (OpenAIEmbeddings, …): each word hashed into 64 dimensions, normalised. */
class HashingEmbeddings extends Embeddings {
  constructor() {
    super({})
  }
  async embedDocuments(texts: string[]): Promise<number[][]> {
    return texts.map((text) => this.#embed(text))
  }
  async embedQuery(text: string): Promise<number[]> {
    return this.#embed(text)
  }
  #embed(text: string): number[] {
    const v = new Array<number>(DIM).fill(0)
    for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
      const stem = word.replace(/s$/, '')
      let h = 7
      for (const c of stem) h = (h * 31 + c.charCodeAt(0)) >>> 0
      v[h % DIM]! += 1
    }
    v[DIM - 1]! += 0.01 // never the zero vector, which has no cosine direction
    const norm = Math.hypot(...v)
    return v.map((x) => x / norm)
  }
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`the example did not get what it expected: ${what}`)
}

const server = await provision({ provider: process.env.DATABASE_URL ? 'url' : 'embedded', url: process.env.DATABASE_URL })
const store = await PgVectorStore.open(server.db, { table: 'langchain_example_chunks', dimensions: DIM })
try {
  const embeddings = new HashingEmbeddings()
  // The tenant is bound here, once: nothing passed to the adapter later reaches another tenant's rows.
  const acme = PgScaleVectorStore.forTenant(store, 'acme', embeddings)
  const globex = PgScaleVectorStore.forTenant(store, 'globex', embeddings)

  const acmeIds = await acme.addDocuments(
    [
      new Document({ pageContent: 'Refunds take a week after the return arrives.', metadata: { kind: 'policy' } }),
      new Document({ pageContent: 'Invoices are due in thirty days.', metadata: { kind: 'billing' } }),
      new Document({ pageContent: 'Late invoices pay a fee of two percent.', metadata: { kind: 'billing' } }),
      new Document({ pageContent: 'Draft: refunds may take longer in December.', metadata: { kind: 'draft' } }),
    ],
    { ids: ['refunds', 'due-dates', 'late-fees', 'draft-refunds'] },
  )
  await globex.addDocuments(
    [
      new Document({ pageContent: 'Refunds are not offered on sale items.', metadata: { kind: 'policy' } }),
      new Document({ pageContent: 'Invoices are due on receipt.', metadata: { kind: 'billing' } }),
    ],
    { ids: ['refunds', 'due-dates'] },
  )
  console.log(`ingest: acme ${acmeIds.join(', ')}; globex refunds, due-dates (the same ids, its own rows)`)

  const scored = await acme.similaritySearchWithScore('how long do refunds take?', 2)
  console.log(`search: ${scored.map(([doc, score]) => `${doc.id} (${score.toFixed(3)})`).join('; ')}`)
  check(scored[0]?.[0].id === 'refunds' && scored[0][1] > scored[1]![1], 'acme’s refund policy first, the higher score first')

  const billing = await acme.similaritySearch('invoices', 4, { kind: { $in: ['billing'] } })
  console.log(`filter { kind: { $in: ['billing'] } }: ${billing.map((doc) => doc.id).join(', ')}`)
  check(billing.length === 2 && billing.every((doc) => doc.metadata.kind === 'billing'), 'both billing documents, nothing else')

  const diverse = await acme.asRetriever({ k: 2, searchType: 'mmr', searchKwargs: { fetchK: 4 } }).invoke('refunds')
  console.log(`mmr retriever: ${diverse.map((doc) => doc.id).join(', ')}`)
  check(diverse.length === 2, 'two documents')

  const theirs = await globex.similaritySearch('refunds invoices fees drafts', 10, {
    $or: [{ kind: 'draft' }, { kind: { $exists: true } }],
  })
  console.log(`globex sees: ${theirs.map((doc) => `${doc.id} "${doc.pageContent}"`).join('; ')}`)
  check(theirs.length === 2 && theirs.every((doc) => !doc.pageContent.includes('week')), 'globex sees its two documents only')

  await acme.addDocuments([new Document({ pageContent: 'Refunds take five days.', metadata: { kind: 'policy', v: 2 } })], {
    ids: ['refunds'],
  })
  await acme.delete({ filter: { kind: 'draft' } })
  await acme.delete({ ids: ['late-fees', 'no-such-id'] })
  const left = await acme.getByIds(acmeIds)
  console.log(`after overwrite and deletes, acme has: ${left.map((doc) => `${doc.id} "${doc.pageContent}"`).join('; ')}`)
  check(left.map((doc) => doc.id).join() === 'refunds,due-dates' && left[0]?.metadata.v === 2, 'refunds (v2) and due-dates')
  check((await globex.getByIds(['refunds']))[0]?.pageContent.includes('sale') === true, 'globex’s refunds untouched')
  console.log('langchain example: ok')
} finally {
  await store.close()
  await server.stop()
}
