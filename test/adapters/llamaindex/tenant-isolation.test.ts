import { beforeAll, expect, it } from 'vitest'
import type { VectorStoreQuery } from '@llamaindex/core/vector-store'
import { PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { axisVector } from '../../support/vectors.js'
import { allIds, LLAMAINDEX_MISSING, loadLlamaIndex, plainNodes, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * The tenant is bound when the adapter is made: nothing a LlamaIndex caller passes — filters,
 * docIds, ref doc ids, node ids, the query text — reaches another tenant's rows. Two tenants hold
 * the same node ids and ref doc ids with different content, and one holds rows the other has no
 * counterpart of.
 */
const t = useTestDatabase()
const DIM = 8
const vec = (axis: number, tilt = 0) => axisVector(DIM, axis, tilt)

describeUnless(LLAMAINDEX_MISSING)('PgScaleVectorStore: tenant isolation', () => {
  let kit: LlamaIndexKit
  let store: PgVectorStore
  let acme: PgScaleVectorStore
  let globex: PgScaleVectorStore

  const q = (extra: Partial<VectorStoreQuery<any>> = {}): VectorStoreQuery<any> => ({
    queryEmbedding: vec(0),
    similarityTopK: 100,
    mode: kit.vectorStore.VectorStoreQueryMode.DEFAULT,
    ...extra,
  })

  /** The same node ids and ref doc ids in both tenants; globex has two more nodes of its own. */
  async function seed(): Promise<void> {
    await store.forTenant('acme').deleteWhere({ ref_doc_id: { $exists: true } })
    await store.forTenant('globex').deleteWhere({ ref_doc_id: { $exists: true } })
    for (const owner of ['acme', 'globex']) {
      const adapter = owner === 'acme' ? acme : globex
      await adapter.add([
        kit.node('n1', `${owner} tax memo`, vec(0), { owner, kind: 'memo' }, 'shared-doc'),
        kit.node('n2', `${owner} tax plan`, vec(1), { owner, kind: 'plan' }, 'shared-doc'),
      ])
    }
    await globex.add([
      kit.node('g1', 'globex secret tax ledger', vec(0, 0.1), { owner: 'globex', kind: 'secret', tenant_id: 'acme' }, 'globex-doc'),
      kit.node('g2', 'globex payroll', vec(2), { owner: 'globex', kind: 'secret' }, 'globex-doc'),
    ])
  }

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    store = await PgVectorStore.open(t.db, { table: 'li_tenants', dimensions: DIM })
    const embedModel = kit.hashEmbedding(DIM)
    acme = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', { embedModel })
    globex = kit.adapter.PgScaleVectorStore.forTenant(store, 'globex', { embedModel })
    await seed()
  })

  it('a query reads only its tenant’s rows: its own version of a shared id, never the other tenant’s', async () => {
    const { MMR, HYBRID } = kit.vectorStore.VectorStoreQueryMode
    for (const extra of [{}, { mode: MMR, similarityTopK: 10 }, { mode: HYBRID, queryStr: 'globex secret tax ledger' }]) {
      const result = await acme.query(q(extra))
      expect([...result.ids].sort()).toEqual(['n1', 'n2'])
      for (const node of plainNodes(result)) expect(node.text.startsWith('acme')).toBe(true)
    }
  })

  it('filters naming the other tenant’s values, or a metadata key called tenant_id, find nothing of it', async () => {
    for (const filters of [
      { filters: [{ key: 'owner', operator: '==' as const, value: 'globex' }] },
      { filters: [{ key: 'kind', operator: 'in' as const, value: ['secret'] }] },
      { filters: [{ key: 'tenant_id', operator: '==' as const, value: 'acme' }] }, // globex's metadata, not a column
      { filters: [{ key: 'ref_doc_id', operator: '==' as const, value: 'globex-doc' }] },
      {
        condition: 'or' as const,
        filters: [
          { key: 'owner', operator: '!=' as const, value: 'acme' },
          { key: 'kind', operator: 'is_empty' as const },
        ],
      },
    ]) {
      expect(await allIds(acme, q({ filters }))).toEqual([])
    }
    expect(await allIds(globex, q({ filters: { filters: [{ key: 'tenant_id', operator: '==', value: 'acme' }] } }))).toEqual(['g1'])
  })

  it('docIds of the other tenant’s nodes are absent; a shared id gives this tenant’s own node', async () => {
    expect(await allIds(acme, q({ docIds: ['g1', 'g2'] }))).toEqual([])
    const shared = await acme.query(q({ docIds: ['n1', 'g1'] }))
    expect(plainNodes(shared)).toEqual([
      { id: 'n1', text: 'acme tax memo', metadata: { owner: 'acme', kind: 'memo' }, refDocId: 'shared-doc' },
    ])
  })

  it('delete(refDocId) deletes this tenant’s nodes of the document only; another tenant’s ref doc id deletes nothing', async () => {
    await acme.delete('globex-doc')
    expect(await allIds(globex, q())).toEqual(['g1', 'g2', 'n1', 'n2'])
    await acme.delete('shared-doc')
    expect(await allIds(acme, q())).toEqual([])
    expect(await allIds(globex, q())).toEqual(['g1', 'g2', 'n1', 'n2'])
    await seed()
  })

  it('add with the other tenant’s node ids writes this tenant’s rows and leaves the other’s', async () => {
    await acme.add([kit.node('g1', 'acme own g1', vec(3), { owner: 'acme' }, 'acme-doc')])
    expect(plainNodes(await globex.query(q({ docIds: ['g1'] })))[0]!.text).toBe('globex secret tax ledger')
    expect(plainNodes(await acme.query(q({ docIds: ['g1'] })))[0]!.text).toBe('acme own g1')
    await acme.delete('acme-doc')
    expect(await allIds(globex, q())).toEqual(['g1', 'g2', 'n1', 'n2'])
  })

  it('through VectorStoreIndex: each tenant’s index retrieves and deletes its own', async () => {
    const { Settings, VectorStoreIndex } = kit.llamaindex
    Settings.embedModel = kit.hashEmbedding(DIM)
    const [acmeIndex, globexIndex] = await Promise.all([VectorStoreIndex.fromVectorStore(acme), VectorStoreIndex.fromVectorStore(globex)])
    const hits = await acmeIndex.asRetriever({ similarityTopK: 10 }).retrieve('globex secret tax ledger')
    expect(hits.map((h) => h.node.metadata.owner)).toEqual(['acme', 'acme'])
    await acmeIndex.deleteRefDoc('shared-doc', false)
    expect(await allIds(acme, q())).toEqual([])
    expect((await globexIndex.asRetriever({ similarityTopK: 10 }).retrieve('tax')).length).toBe(4)
  })
})
