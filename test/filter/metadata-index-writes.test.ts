import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { connect, PgVectorStore, type Database } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * createMetadataIndex is a write path (DDL, then the comment that records the field): two at once
 * build one index, and an index whose comment was never written is recorded by the next call.
 */
const t = useTestDatabase()
let store: PgVectorStore

beforeAll(async () => {
  store = await PgVectorStore.open(t.db, { table: 'md_writes', dimensions: 4, fullText: false })
  await store.forTenant('acme').replaceDocument(
    'd',
    Array.from({ length: 50 }, (_, i) => ({ content: `c${i}`, embedding: axisVector(4, i), metadata: { n: i, s: `v${i % 5}` } })),
  )
})

const indexesOf = async (db: Database) =>
  (
    await sql<{ name: string; valid: boolean }>`
    select i.relname as name, x.indisvalid as valid from pg_index x join pg_class i on i.oid = x.indexrelid
    where x.indrelid = 'md_writes'::regclass and i.relname like '%_md_%'`.execute(db)
  ).rows

describe('createMetadataIndex as a write path', () => {
  itWithServer(t.target)('two at once (plain and concurrently) build one valid index, recorded once', async () => {
    const other = await connect(t.url!, { maxConnections: 4 })
    try {
      const second = await PgVectorStore.open(other, { table: 'md_writes', dimensions: 4, fullText: false })
      const built = await Promise.all([
        store.createMetadataIndex('n', 'number'),
        second.createMetadataIndex('n', 'number'),
        second.createMetadataIndex('s', 'string', { concurrently: true }),
        store.createMetadataIndex('s', 'string', { concurrently: true }),
      ])
      expect(new Set(built.map((b) => b.name)).size).toBe(2)
      const indexes = await indexesOf(t.db)
      expect(indexes.filter((i) => i.valid)).toHaveLength(2)
      expect(indexes.every((i) => i.valid)).toBe(true)
      expect((await store.stats()).metadataIndexes!.map((m) => m.field).sort()).toEqual(['n', 's'])
      expect(await second.forTenant('acme').count({ n: { $lt: 10 }, s: 'v1' })).toBe(2)
    } finally {
      await other.close()
    }
  })

  it('an index whose comment was never written (the connection died between the two) is recorded by the next call', async () => {
    const index = await store.createMetadataIndex('n', 'number')
    await sql.raw(`comment on index "${index.name}" is null`).execute(t.db)
    expect((await store.stats()).metadataIndexes!.map((m) => m.field)).not.toContain('n')
    await store.createMetadataIndex('n', 'number')
    expect((await store.stats()).metadataIndexes!.map((m) => m.field)).toContain('n')
    expect((await indexesOf(t.db)).filter((i) => i.name === index.name)).toEqual([{ name: index.name, valid: true }])
  })
})
