import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { InvalidArgumentError, PgVectorStore } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'

/** Real loads meet bad rows: `onInvalidRow: 'skip'` leaves them out and says which; `throw` writes nothing. */
const t = useTestDatabase()
const DIM = 4
const good = (i: number) => ({
  tenantId: 'acme',
  documentId: `d${Math.floor(i / 10)}`,
  chunkIndex: i % 10,
  content: `chunk ${i}`,
  embedding: [1, i, 2, 3],
})

function rowsWithThreeBad() {
  const rows: Array<Record<string, unknown>> = Array.from({ length: 100 }, (_, i) => good(i))
  rows[7] = { ...good(7), embedding: [0, 0, 0, 0] } // text with no known words: an all-zero embedding
  rows[42] = { ...good(42), embedding: [1, 2, 3] }
  rows[99] = { ...good(99), documentId: 'bad\uD800' }
  return rows as never[]
}

async function count(): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from bad_rows`.execute(t.db)
  return rows[0]!.n
}

describe('bulkIngest({ onInvalidRow })', () => {
  it("'throw' (the default) rejects the whole load: nothing written", async () => {
    const store = await PgVectorStore.open(t.db, { table: 'bad_rows', dimensions: DIM })
    await expect(store.bulkIngest(rowsWithThreeBad())).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(await count()).toBe(0)
  })

  it("'skip' commits the valid rows and returns the invalid ones with row number, ids and reason", async () => {
    const store = await PgVectorStore.open(t.db, { table: 'bad_rows', dimensions: DIM })
    const result = await store.bulkIngest(rowsWithThreeBad(), { onInvalidRow: 'skip' })
    expect(result.rows).toBe(97)
    expect(result.skippedRows).toBe(3)
    expect(result.skipped.map((s) => [s.row, s.documentId, s.chunkIndex])).toEqual([
      [7, 'd0', 7],
      [42, 'd4', 2],
      [99, 'bad\uD800', 9],
    ])
    expect(result.skipped[0]!.reason).toMatch(/all zeros/)
    expect(result.skipped[1]!.reason).toMatch(/expected a vector of 4 dimensions, got 3/)
    expect(result.skipped[2]!.reason).toMatch(/lone surrogate/)
    expect(await count()).toBe(97)
  })

  it("a tenant handle's load: rows without a tenant; a row naming another tenant is invalid", async () => {
    const store = await PgVectorStore.open(t.db, { table: 'bad_rows', dimensions: DIM })
    const rows = [
      { documentId: 'own', chunkIndex: 0, content: 'a', embedding: [1, 0, 0, 0] },
      { tenantId: 'other', documentId: 'own', chunkIndex: 1, content: 'b', embedding: [1, 0, 0, 0] },
    ]
    await expect(store.forTenant('beta').bulkIngest(rows)).rejects.toThrow(/differs from this handle's tenant/)
    const result = await store.forTenant('beta').bulkIngest(rows, { onInvalidRow: 'skip' })
    expect(result).toMatchObject({ rows: 1, skippedRows: 1 })
    const { rows: stored } = await sql<{ tenant_id: string }>`select tenant_id from bad_rows where document_id = 'own'`.execute(t.db)
    expect(stored).toEqual([{ tenant_id: 'beta' }])
  })

  it('a bad onInvalidRow value is refused before anything is sent', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'bad_rows', dimensions: DIM })
    await expect(store.bulkIngest([], { onInvalidRow: 'ignore' as never })).rejects.toBeInstanceOf(InvalidArgumentError)
  })
})
