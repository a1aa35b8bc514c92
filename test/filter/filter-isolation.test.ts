import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { matchesFilter, PgVectorStore } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'
import { randomFilter, randomMetadata, rng, showFilter } from './random-filters.js'

/**
 * Tenant scope under user-written filters: random `$or`/`$nor`/`$not` trees with hostile keys and
 * values never return, count or delete a row of another tenant. Both tenants hold the same
 * metadata, so a filter that leaked would match the other tenant's rows too.
 */
const t = useTestDatabase()
const TENANTS = ['A', "B'; delete from iso_chunks; --", 'C\\$1']
const DOCS = 80
const CASES = Number(process.env.PGSCALE_FILTER_CASES ?? 1500) / 5
const metadata = (() => {
  const r = rng('isolation-docs')
  return Array.from({ length: DOCS }, () => randomMetadata(r))
})()
let store: PgVectorStore

async function fingerprint(tenant: string): Promise<string> {
  const { rows } = await sql<{ f: string }>`
    select count(*) || ':' || coalesce(md5(string_agg(document_id || chunk_index || metadata::text, ',' order by document_id, chunk_index)), '') as f
    from iso_chunks where tenant_id = ${tenant}`.execute(t.db)
  return rows[0]!.f
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'iso_chunks', dimensions: 4 })
  await store.createMetadataIndex('n', 'number')
  await store.createMetadataIndex('s', 'string')
  for (const tenant of TENANTS) {
    await store.forTenant(tenant).replaceDocument(
      'doc',
      metadata.map((m, i) => ({ content: `${tenant} ${i}`, embedding: axisVector(4, i, 0.2), metadata: m })),
    )
  }
})

describe('filters never leave the tenant', () => {
  it(`${CASES} random filters: search, exactSearch, hybridSearch, find and count see only the caller's rows`, async () => {
    const r = rng('isolation-filters')
    for (let c = 0; c < CASES; c++) {
      const filter = randomFilter(r)
      const tenant = TENANTS[c % TENANTS.length]!
      const handle = store.forTenant(tenant)
      const expected = metadata.filter((m) => matchesFilter(m, filter)).length
      const results = [
        ...(await handle.search(axisVector(4, c), { k: 50, filter })),
        ...(await handle.exactSearch(axisVector(4, c), { k: 50, filter })),
        ...(await handle.hybridSearch({ embedding: axisVector(4, c), text: tenant, k: 50, filter })),
        ...(await handle.find({ filter, limit: 200 })).rows,
      ]
      const strangers = results.filter((row) => !row.content.startsWith(`${tenant} `))
      expect(strangers, `case ${c}: ${showFilter(filter)}`).toEqual([])
      expect(await handle.count(filter), `case ${c}: ${showFilter(filter)}`).toBe(expected)
    }
  }, 600_000)

  it("deleteWhere with random filters deletes the caller's matching rows and nothing of another tenant", async () => {
    const r = rng('isolation-deletes')
    const others = await Promise.all(TENANTS.slice(1).map(fingerprint))
    const remaining = new Set(metadata.keys())
    let deleted = 0
    for (let c = 0; c < 60; c++) {
      const filter = randomFilter(r)
      const matching = [...remaining].filter((i) => matchesFilter(metadata[i]!, filter))
      const n = await store.forTenant('A').deleteWhere(filter)
      expect(n, showFilter(filter)).toBe(matching.length)
      for (const i of matching) remaining.delete(i)
      deleted += n
    }
    expect(deleted).toBeGreaterThan(0)
    expect(await store.forTenant('A').count()).toBe(remaining.size)
    expect(await Promise.all(TENANTS.slice(1).map(fingerprint))).toEqual(others)
  })
})
