import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { InvalidArgumentError, PgVectorStore } from '../../../src/index.js'
import { tenantIndexName } from '../../../src/bench-kit.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { useTestDatabase } from '../../support/test-database.js'

/** optimize() stops at maxOwnIndexes tenant indexes per table: the largest tenants keep theirs. */
const t = useTestDatabase()
const spec: CorpusSpec = {
  seed: 'cap',
  dim: 16,
  tenants: [
    { id: 'big', chunks: 600 },
    { id: 'bigger', chunks: 900 },
    { id: 'mid', chunks: 400 },
    { id: 'small', chunks: 50 },
  ],
}
let store: PgVectorStore

async function tenantIndexes(): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select i.relname as name from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
    where x.indrelid = 'cap_chunks'::regclass and am.amname = 'hnsw' order by 1`.execute(t.db)
  return rows.map((r) => r.name)
}

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'cap_chunks', dimensions: spec.dim })
  await store.bulkIngest(generateCorpus(spec))
})

describe('maxOwnIndexes', () => {
  it('refuses a cap that is not a non-negative integer, building nothing', async () => {
    await expect(store.optimize({ ownIndexAbove: 100, maxOwnIndexes: -1 })).rejects.toBeInstanceOf(InvalidArgumentError)
    await expect(store.optimize({ ownIndexAbove: 100, maxOwnIndexes: 1.5 })).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(await tenantIndexes()).toEqual([])
  })

  it('gives the largest tenants their index up to the cap and lists the rest as capped', async () => {
    const report = await store.optimize({ ownIndexAbove: 100, maxOwnIndexes: 2, targetRecall: null })
    expect(report.built.map((b) => b.tenantId)).toEqual(['bigger', 'big'])
    expect(report.capped).toEqual([{ tenantId: 'mid', rows: 400 }])
    expect(report.notes.join(' ')).toMatch(/1 tenant\(s\) above 100 chunks have no index of their own: the table has 2 \(maxOwnIndexes 2/)
    expect(await tenantIndexes()).toEqual(['bigger', 'big'].map((id) => tenantIndexName('cap_chunks', id)).sort())
  })

  it('a capped tenant is still answered exactly, through the primary key', async () => {
    const mid = store.forTenant('mid')
    for (const q of queryVectors(spec, 'mid', 5)) {
      expect(await mid.search(q, { k: 10 })).toEqual(await mid.exactSearch(q, { k: 10 }))
    }
  })

  it('counts the indexes already there: a later call with a higher cap builds only what the cap allows', async () => {
    const same = await store.optimize({ ownIndexAbove: 100, maxOwnIndexes: 2, targetRecall: null })
    expect(same.built).toEqual([])
    expect(same.capped.map((c) => c.tenantId)).toEqual(['mid'])
    const raised = await store.optimize({ ownIndexAbove: 100, maxOwnIndexes: 3, targetRecall: null })
    expect(raised.built.map((b) => b.tenantId)).toEqual(['mid'])
    expect(raised.capped).toEqual([])
    expect(raised.alreadyIndexed.sort()).toEqual(['big', 'bigger'])
  })
})
