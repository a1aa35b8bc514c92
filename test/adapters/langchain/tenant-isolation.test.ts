import { sql } from 'kysely'
import { beforeAll, expect, it } from 'vitest'
import { PgVectorStore } from '../../../src/index.js'
import { describeUnless } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { LANGCHAIN_MISSING, loadLangChain, SYNTHETIC_DIMENSIONS, type LangChainKit, type PgScaleVectorStore } from './langchain-kit.js'

/**
 * The tenant is bound when the adapter is made: nothing a LangChain caller passes — another
 * tenant's ids, a filter on a `tenant_id` metadata key, a `$or` that matches everything, a
 * retriever's filter, an MMR search — reads or changes another tenant's rows. Checked on the table
 * itself: the other tenant's rows are byte-for-byte what they were.
 */
const t = useTestDatabase()
const TABLE = 'lc_tenants'

describeUnless(LANGCHAIN_MISSING)('pgscale/langchain: tenant isolation', () => {
  let kit: LangChainKit
  let acme: PgScaleVectorStore
  let globex: PgScaleVectorStore

  /** Acme's rows as stored, vectors as text. */
  const acmeRows = async () =>
    JSON.stringify(
      (
        await sql`select document_id, chunk_index, content, metadata, embedding::text from ${sql.table(TABLE)}
          where tenant_id = 'acme' order by 1, 2`.execute(t.db)
      ).rows,
    )

  beforeAll(async () => {
    kit = await loadLangChain()
    const store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: SYNTHETIC_DIMENSIONS })
    acme = kit.adapter.PgScaleVectorStore.forTenant(store, 'acme', kit.synthetic())
    globex = kit.adapter.PgScaleVectorStore.forTenant(store, 'globex', kit.synthetic())
    const texts = { a: 'apples and pears', b: 'bananas and kiwis', c: 'cherries and plums' }
    for (const [tenant, adapter] of [
      ['acme', acme],
      ['globex', globex],
    ] as const) {
      await adapter.addDocuments(
        Object.entries(texts).map(
          ([id, text]) => new kit.Document({ pageContent: `${tenant} ${text}`, metadata: { kind: 'fruit', tenant_id: tenant }, id }),
        ),
      )
    }
    await acme.addDocuments([
      new kit.Document({ pageContent: 'acme secret plans', metadata: { kind: 'secret', tenant_id: 'acme' }, id: 'acme-only' }),
    ])
  })

  it('reads: ids, filters on tenant_id, $or over everything, retrievers and MMR return this tenant’s rows only', async () => {
    const before = await acmeRows()
    const own = (docs: Array<{ pageContent: string }>) => docs.every((d) => d.pageContent.startsWith('globex '))
    expect((await globex.getByIds(['a', 'b', 'c', 'acme-only'])).map((d) => d.id)).toEqual(['a', 'b', 'c'])
    expect(own(await globex.getByIds(['a', 'b', 'c']))).toBe(true)
    const filters = [
      { tenant_id: 'acme' },
      { tenant_id: { $ne: 'globex' } },
      { kind: 'secret' },
      { $or: [{ tenant_id: 'acme' }, { kind: { $exists: true } }] },
      { $or: [{ kind: { $exists: true } }, { kind: { $exists: false } }] },
      { $nor: [{ tenant_id: 'globex' }] },
    ]
    for (const filter of filters) {
      const hits = await globex.similaritySearch('acme secret plans', 10, filter)
      expect(own(hits)).toBe(true)
      expect(own(await globex.maxMarginalRelevanceSearch('acme secret plans', { k: 10, filter }))).toBe(true)
      expect(own(await globex.asRetriever({ k: 10, filter }).invoke('acme secret plans'))).toBe(true)
      expect(own(await globex.asRetriever({ k: 10, filter, searchType: 'mmr' }).invoke('acme secret plans'))).toBe(true)
    }
    expect(await globex.similaritySearch('acme secret plans', 10, { tenant_id: 'acme' })).toEqual([])
    expect((await globex.similaritySearch('acme secret plans', 10)).map((d) => d.id).sort()).toEqual(['a', 'b', 'c'])
    expect(await acmeRows()).toBe(before)
  })

  it('writes: another tenant’s ids and filters delete or overwrite only this tenant’s rows', async () => {
    const before = await acmeRows()
    await globex.delete({ ids: ['acme-only'] })
    await globex.delete({ filter: { tenant_id: 'acme' } })
    await globex.delete({ filter: { $or: [{ kind: 'secret' }, { tenant_id: { $exists: false } }] } })
    await globex.addDocuments([new kit.Document({ pageContent: 'globex apples again', metadata: { tenant_id: 'acme' } })], { ids: ['a'] })
    await globex.replaceDocument('b', [new kit.Document({ pageContent: 'globex bananas again', metadata: {} })])
    expect(await acmeRows()).toBe(before)
    expect((await globex.getByIds(['a', 'b'])).map((d) => d.pageContent)).toEqual(['globex apples again', 'globex bananas again'])
    // Its own rows are its own to delete, with the same ids acme has.
    await globex.delete({ ids: ['a', 'b', 'c'] })
    expect(await globex.tenant.count()).toBe(0)
    expect(await acmeRows()).toBe(before)
    expect((await acme.getByIds(['a', 'acme-only'])).map((d) => d.pageContent)).toEqual(['acme apples and pears', 'acme secret plans'])
  })

  it('the tenant cannot be changed on an adapter', async () => {
    expect(globex.tenantId).toBe('globex')
    expect(() => {
      ;(globex as unknown as { tenantId: string }).tenantId = 'acme'
    }).toThrow(TypeError)
    expect(globex.tenant.tenantId).toBe('globex')
    expect(() => {
      ;(globex.tenant as unknown as { tenantId: string }).tenantId = 'acme'
    }).toThrow(TypeError)
    expect(await globex.similaritySearch('acme secret plans', 10, { kind: 'secret' })).toEqual([])
  })
})
