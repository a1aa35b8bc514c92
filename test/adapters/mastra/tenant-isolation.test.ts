import { sql } from 'kysely'
import { beforeAll, beforeEach, expect, it } from 'vitest'
import { useTestDatabase } from '../../support/test-database.js'
import { describeUnless } from '../../support/skip.js'
import { createVector, DIM, loadMastra, MASTRA_MISSING, type MastraKit, type PgScaleVector } from './mastra-kit.js'

/**
 * Tenants through pgscale/mastra: one index name, one table, several tenants. Whatever a tenant's
 * adapter is given — an index name another tenant created, another tenant's vector ids, a filter
 * written to match another tenant's metadata (or everything), a deleteFilter, an update — it
 * reads and writes only its own rows, and its registry records only its own indexes. Checked
 * against the table itself, not only through the adapter.
 */
const t = useTestDatabase()
const INDEX = 'shared_docs'
const TABLE = `mastra_${INDEX}`

/** A filter of each shape, written to match the other tenant's rows (or every row). */
const HOSTILE_FILTERS: object[] = [
  { owner: 'acme' },
  { tenant_id: 'acme' },
  { $or: [{ owner: { $exists: true } }, { owner: { $exists: false } }] },
  { $nor: [{ owner: 'nobody' }] },
  { owner: { $ne: 'nobody' } },
  { $not: { owner: 'nobody' } },
  { owner: ['acme', 'globex'] },
]

describeUnless(MASTRA_MISSING)('pgscale/mastra: tenant isolation', () => {
  let kit: MastraKit
  let acme: PgScaleVector
  let globex: PgScaleVector

  /** Every row of the index's table, as (tenant, id, metadata): what must not change. */
  const table = async () =>
    (
      await sql<{ tenant_id: string; document_id: string; metadata: object }>`
        select tenant_id, document_id, metadata from ${sql.table(TABLE)} order by 1, 2`.execute(t.db)
    ).rows
  const acmeRows = async () => (await table()).filter((r) => r.tenant_id === 'acme')

  beforeAll(async () => {
    kit = await loadMastra(t.db)
    acme = kit.vector('acme')
    globex = kit.vector('globex')
  })

  beforeEach(async () => {
    for (const tenant of [acme, globex]) await tenant.deleteIndex({ indexName: INDEX })
    await acme.createIndex({ indexName: INDEX, dimension: DIM })
    await acme.upsert({
      indexName: INDEX,
      vectors: [createVector(1), createVector(2)],
      ids: ['x', 'y'],
      metadata: [
        { owner: 'acme', tenant_id: 'acme', n: 1 },
        { owner: 'acme', tenant_id: 'acme', n: 2 },
      ],
    })
  })

  it('an index another tenant created does not exist for this one: listed, described, read or written', async () => {
    expect(await acme.listIndexes()).toContain(INDEX)
    expect(await globex.listIndexes()).not.toContain(INDEX)
    const notFound = /does not exist/
    await expect(globex.describeIndex({ indexName: INDEX })).rejects.toThrow(notFound)
    await expect(globex.query({ indexName: INDEX, queryVector: createVector(1) })).rejects.toThrow(notFound)
    await expect(globex.query({ indexName: INDEX, filter: { owner: 'acme' } })).rejects.toThrow(notFound)
    await expect(globex.upsert({ indexName: INDEX, vectors: [createVector(3)], ids: ['x'] })).rejects.toThrow(notFound)
    await expect(globex.updateVector({ indexName: INDEX, id: 'x', update: { metadata: { owner: 'globex' } } })).rejects.toThrow(notFound)
    await expect(globex.deleteVector({ indexName: INDEX, id: 'x' })).rejects.toThrow(notFound)
    await expect(globex.deleteVectors({ indexName: INDEX, ids: ['x', 'y'] })).rejects.toThrow(notFound)
    await globex.deleteIndex({ indexName: INDEX })
    expect(await acmeRows()).toHaveLength(2)
    expect(await acme.listIndexes()).toContain(INDEX)
  })

  it("after creating the same index, a tenant reads none of the other's rows, whatever the filter", async () => {
    await globex.createIndex({ indexName: INDEX.toUpperCase(), dimension: DIM })
    expect(await globex.describeIndex({ indexName: INDEX })).toEqual({ dimension: DIM, count: 0, metric: 'cosine' })
    expect(await globex.query({ indexName: INDEX, queryVector: createVector(1), topK: 10, includeVector: true })).toEqual([])
    for (const filter of HOSTILE_FILTERS) {
      expect(await globex.query({ indexName: INDEX, queryVector: createVector(1), topK: 10, filter: filter as never })).toEqual([])
      expect(await globex.query({ indexName: INDEX, filter: filter as never, topK: 100 })).toEqual([])
    }
    expect((await acme.describeIndex({ indexName: INDEX })).count).toBe(2)
  })

  it("a tenant's writes by id, by filter and by deleteFilter never touch the other's rows", async () => {
    await globex.createIndex({ indexName: INDEX, dimension: DIM })
    const before = await acmeRows()
    await globex.upsert({ indexName: INDEX, vectors: [createVector(5)], ids: ['x'], metadata: [{ owner: 'globex' }] })
    await globex.updateVector({ indexName: INDEX, id: 'y', update: { metadata: { owner: 'globex' }, vector: createVector(9) } })
    for (const filter of HOSTILE_FILTERS) {
      await globex.updateVector({ indexName: INDEX, filter: filter as never, update: { metadata: { hijacked: true } } })
      await globex.upsert({ indexName: INDEX, vectors: [createVector(6)], ids: ['z'], deleteFilter: filter as never })
      await globex.deleteVectors({ indexName: INDEX, filter: filter as never })
    }
    await globex.deleteVectors({ indexName: INDEX, ids: ['x', 'y'] })
    await globex.deleteVector({ indexName: INDEX, id: 'y' })
    expect(await acmeRows()).toEqual(before)
    const [x] = await acme.query({ indexName: INDEX, queryVector: createVector(1), topK: 1 })
    expect(x).toMatchObject({ id: 'x', metadata: { owner: 'acme', n: 1 } })
    expect(x!.score).toBeCloseTo(1, 5)
    expect((await table()).filter((r) => r.tenant_id === 'globex').map((r) => r.document_id)).toEqual(['z'])
  })

  it("deleteIndex deletes this tenant's rows and record only", async () => {
    await globex.createIndex({ indexName: INDEX, dimension: DIM })
    await globex.upsert({ indexName: INDEX, vectors: [createVector(3), createVector(4)], ids: ['x', 'g'] })
    await globex.deleteIndex({ indexName: INDEX })
    expect(await globex.listIndexes()).not.toContain(INDEX)
    expect((await table()).map((r) => `${r.tenant_id}/${r.document_id}`)).toEqual(['acme/x', 'acme/y'])
    expect(await acme.listIndexes()).toContain(INDEX)
    expect((await acme.describeIndex({ indexName: INDEX })).count).toBe(2)
  })

  it("a table's dimension is fixed by its first tenant: another is refused and changes nothing", async () => {
    const err = await globex.createIndex({ indexName: INDEX, dimension: DIM * 2 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(kit.MastraError)
    expect((err as InstanceType<MastraKit['MastraError']>).id).toBe('MASTRA_VECTOR_PGSCALE_CREATE_INDEX_CONFIG_MISMATCH')
    expect(await globex.listIndexes()).not.toContain(INDEX)
    expect(await acmeRows()).toHaveLength(2)
  })

  it("each tenant's registry lists its own indexes", async () => {
    await globex.createIndex({ indexName: 'globex_private', dimension: DIM })
    expect(await globex.listIndexes()).toContain('globex_private')
    expect(await acme.listIndexes()).not.toContain('globex_private')
    await expect(acme.describeIndex({ indexName: 'globex_private' })).rejects.toThrow(/does not exist/)
    const registry = await sql<{ tenant_id: string; document_id: string }>`
      select tenant_id, document_id from ${sql.table(kit.adapter.REGISTRY_TABLE)} where document_id = 'globex_private'`.execute(t.db)
    expect(registry.rows).toEqual([{ tenant_id: 'globex', document_id: 'globex_private' }])
  })

  it('tenant ids are values, never SQL: quotes, wildcards and Unicode stay apart', async () => {
    const odd = ["acme' or '1'='1", 'acme%', 'acmé', 'ACME']
    for (const tenantId of odd) {
      const v = kit.vector(tenantId)
      await v.createIndex({ indexName: INDEX, dimension: DIM })
      expect(await v.query({ indexName: INDEX, queryVector: createVector(1), topK: 10 })).toEqual([])
      await v.upsert({ indexName: INDEX, vectors: [createVector(7)], ids: ['x'] })
    }
    expect(await acmeRows()).toHaveLength(2)
    const owners = (await table()).filter((r) => r.document_id === 'x').map((r) => r.tenant_id)
    expect(new Set(owners)).toEqual(new Set(['acme', ...odd]))
    expect(owners).toHaveLength(1 + odd.length)
  })

  it('a standalone adapter and the operator store see the same tables', async () => {
    const standalone = new kit.adapter.PgScaleVector({ id: 'standalone', db: t.db, tenantId: 'acme' })
    expect(await standalone.listIndexes()).toContain(INDEX)
    expect((await standalone.describeIndex({ indexName: INDEX })).count).toBe(2)
    await standalone.disconnect()
    const vectors = new kit.adapter.PgScaleVectors({ id: 'ops', db: t.db })
    const store = await vectors.store(INDEX, { tenantId: 'acme' })
    expect(store.config.table).toBe(TABLE)
    expect((await store.stats()).rows).toBe((await table()).length)
    await expect(vectors.store(INDEX, { tenantId: 'nobody' })).rejects.toThrow(/does not exist/)
    await vectors.close()
  })
})
