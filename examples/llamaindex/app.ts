/**
 * A LlamaIndex.TS app on pgscale: two tenants of one table, each with its own VectorStoreIndex over
 * `PgScaleVectorStore.forTenant(store, tenantId)`. Documents go in through the index (LlamaIndex
 * splits and embeds them), a filtered retriever reads one tenant's nodes, and `deleteRefDoc` removes
 * a document's nodes from that tenant only. No API key: a small word-hashing embedding model stands
 * in for a real one (OpenAIEmbedding, HuggingFaceEmbedding…), and no LLM is called.
 *
 * Run: `npx tsx examples/llamaindex/app.ts` — on `DATABASE_URL` if set, else an embedded PGlite.
 * `pgscale` and `pgscale/llamaindex` are the packed copy in examples/llamaindex/node_modules
 * (refresh it with `npm run build && npm run adapters:install -- llamaindex`).
 */
import { BaseEmbedding } from '@llamaindex/core/embeddings'
import { Document, MetadataMode } from '@llamaindex/core/schema'
import { Settings, VectorStoreIndex } from 'llamaindex'
import { PgVectorStore, provision } from 'pgscale'
import { PgScaleVectorStore } from 'pgscale/llamaindex'

const DIMENSIONS = 64

/** A stand-in embedding model: one hashed bucket per word, plus a constant so no text is the zero vector. */
class WordHashEmbedding extends BaseEmbedding {
  constructor() {
    super()
  }
  async getTextEmbedding(text: string): Promise<number[]> {
    const v = new Array<number>(DIMENSIONS).fill(0)
    v[0] = 0.1
    for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      let h = 0x811c9dc5
      for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0
      v[1 + (h % (DIMENSIONS - 1))]! += 1
    }
    return v
  }
}

const failures: string[] = []
function check(ok: boolean, what: string): void {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`)
  if (!ok) failures.push(what)
}

Settings.embedModel = new WordHashEmbedding()
const server = await provision({ provider: process.env.DATABASE_URL ? 'url' : 'embedded' })
try {
  const store = await PgVectorStore.open(server.db, { table: 'llamaindex_example', dimensions: DIMENSIONS })
  // DDL, run once by the owner (a migration in a real app): delete(refDocId) filters on ref_doc_id.
  await store.createMetadataIndex('ref_doc_id', 'string')
  for (const tenant of ['acme', 'globex']) await store.forTenant(tenant).deleteWhere({ _node_type: { $exists: true } }) // a re-run starts clean

  const acme = await VectorStoreIndex.fromVectorStore(PgScaleVectorStore.forTenant(store, 'acme'))
  const globex = await VectorStoreIndex.fromVectorStore(PgScaleVectorStore.forTenant(store, 'globex'))
  await acme.insert(new Document({ id_: 'handbook', text: 'Acme staff get twenty days of paid leave a year.', metadata: { topic: 'hr' } }))
  await acme.insert(new Document({ id_: 'billing', text: 'Acme invoices are due in thirty days.', metadata: { topic: 'finance' } }))
  await globex.insert(new Document({ id_: 'handbook', text: 'Globex staff get thirty days of paid leave.', metadata: { topic: 'hr' } }))
  console.log('inserted: acme handbook + billing, globex handbook (the same document id in both tenants)')

  const hr = { filters: [{ key: 'topic', operator: '==' as const, value: 'hr' }] }
  const hits = await acme.asRetriever({ similarityTopK: 5, filters: hr }).retrieve('how many days of paid leave?')
  for (const hit of hits)
    console.log(`  acme, topic hr: ${hit.score?.toFixed(3)} ${JSON.stringify(hit.node.getContent(MetadataMode.NONE))}`)
  check(
    hits.length === 1 && hits[0]!.node.sourceNode?.nodeId === 'handbook',
    'acme retrieves its own handbook under the filter topic == hr',
  )
  check(!hits.some((h) => h.node.getContent(MetadataMode.NONE).includes('Globex')), "acme never sees globex's handbook")

  await acme.deleteRefDoc('handbook', false) // false: the text lives in pgscale, not in LlamaIndex's docstore
  const left = await acme.asRetriever({ similarityTopK: 5 }).retrieve('paid leave')
  console.log(`deleted acme's handbook; acme now retrieves: ${left.map((h) => h.node.sourceNode?.nodeId).join(', ')}`)
  check(
    left.every((h) => h.node.sourceNode?.nodeId === 'billing'),
    "acme's handbook nodes are gone",
  )
  const theirs = await globex.asRetriever({ similarityTopK: 5 }).retrieve('paid leave')
  check(
    theirs.length === 1 && theirs[0]!.node.getContent(MetadataMode.NONE).startsWith('Globex'),
    "globex's handbook (same id) is untouched",
  )
} finally {
  await server.stop()
}

if (failures.length > 0) {
  console.error(`llamaindex example: ${failures.length} check(s) failed`)
  process.exit(1)
}
console.log('llamaindex example: ok')
