import { beforeAll, describe, expect, it } from 'vitest'
import { PgVectorStore, type SearchResult } from '../../src/index.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * Tenant scope: many tenants drawing from the same topics, the same document ids in every tenant,
 * reads and writes interleaved; every returned row is checked against its tenant.
 */
const t = useTestDatabase()
const TENANTS = 24
const spec: CorpusSpec = {
  seed: 'isolation',
  dim: 16,
  chunksPerDoc: 5,
  topics: 'shared',
  sharedTopics: 4,
  // Document ids carry the tenant ("t3/doc-0"), so a row from another tenant is visible at once.
  tenants: Array.from({ length: TENANTS }, (_, i) => ({ id: `t${i}`, chunks: 60 + 20 * (i % 4) })),
}
let store: PgVectorStore

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'iso_chunks', dimensions: spec.dim })
  await store.bulkIngest(generateCorpus(spec))
  // A shared HNSW index over everyone: the riskiest setup for a filter to leak through.
  await store.createIndex()
})

function ownRows(tenant: string, rows: SearchResult[]): { checked: number; wrong: number } {
  const wrong = rows.filter(
    (r) => !(r.documentId.startsWith(`${tenant}/`) || (r.documentId === 'shared-id' && r.content.startsWith(`${tenant}:`))),
  )
  return { checked: rows.length, wrong: wrong.length }
}

describe('tenant isolation', () => {
  it("no read returns another tenant's row, with writes interleaved (every row checked)", async () => {
    const totals = { checked: 0, wrong: 0 }
    const add = (r: { checked: number; wrong: number }) => {
      totals.checked += r.checked
      totals.wrong += r.wrong
    }
    const work = spec.tenants.map(async ({ id }) => {
      const tenant = store.forTenant(id)
      const queries = queryVectors(spec, id, 6)
      // The same document id in every tenant.
      await tenant.replaceDocument(
        'shared-id',
        queries.slice(0, 3).map((embedding, i) => ({ content: `${id}: shared ${i}`, embedding })),
      )
      for (const q of queries) {
        add(ownRows(id, await tenant.search(q, { k: 10 })))
        add(ownRows(id, await tenant.search(q, { k: 10, iterativeScan: 'off' })))
        add(ownRows(id, await tenant.exactSearch(q, { k: 10 })))
        add(ownRows(id, await tenant.hybridSearch({ embedding: q, text: 'invoice contract payment', k: 10 })))
      }
      expect(await tenant.deleteDocument(`${id}/doc-1`)).toBe(5)
      await tenant.replaceDocument(`${id}/doc-2`, [{ content: `${id} rewritten`, embedding: queries[0]! }])
      add(ownRows(id, await tenant.search(queries[0]!, { k: 10 })))
    })
    await Promise.all(work)
    console.log(`[isolation] ${totals.checked} returned rows checked across ${TENANTS} tenants, ${totals.wrong} from another tenant`)
    expect(totals.checked).toBeGreaterThan(TENANTS * 6 * 4 * 9)
    expect(totals.wrong).toBe(0)
  })

  it('a tenant handle cannot be pointed at another tenant: tenantId is read-only', async () => {
    const handle = store.forTenant('t0')
    expect(() => {
      ;(handle as unknown as { tenantId: string }).tenantId = 't1'
    }).toThrow(TypeError)
    expect(handle.tenantId).toBe('t0')
    const rows = ownRows('t0', await handle.exactSearch(queryVectors(spec, 't0', 1)[0]!, { k: 1000 }))
    expect(rows.checked).toBeGreaterThan(0)
    expect(rows.wrong).toBe(0)
  })

  it("deleting a document id shared by every tenant deletes only the caller's", async () => {
    expect(await store.forTenant('t0').deleteDocument('shared-id')).toBe(3)
    const others = await Promise.all(
      spec.tenants.slice(1).map(({ id }) => store.forTenant(id).exactSearch(queryVectors(spec, id, 1)[0]!, { k: 1000 })),
    )
    expect(
      others.every((rows, i) => rows.filter((r) => r.documentId === 'shared-id').length === 3 && ownRows(`t${i + 1}`, rows).wrong === 0),
    ).toBe(true)
  })

  it('search returns min(k, chunks of the tenant) for tenants smaller and larger than k, even through the shared index', async () => {
    const sizes = [1, 4, 9, 10, 11, 37]
    for (const size of sizes) {
      const id = `size-${size}`
      const tenant = store.forTenant(id)
      const q = queryVectors(spec, 't1', 1)[0]!
      await tenant.replaceDocument(
        'only',
        Array.from({ length: size }, (_, i) => ({ content: `${id} ${i}`, embedding: queryVectors(spec, 't2', size)[i]! })),
      )
      for (const iterativeScan of ['relaxed', 'strict', 'off'] as const) {
        const rows = await tenant.search(q, { k: 10, iterativeScan, efSearch: 10 })
        expect(rows, `${id} ${iterativeScan}`).toHaveLength(Math.min(10, size))
        expect(rows.every((r) => r.content.startsWith(`${id} `))).toBe(true)
      }
    }
  })
})
