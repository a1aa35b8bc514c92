import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../bench/synthetic/corpus.js'
import { generateExpenses } from '../../bench/synthetic/expenses.js'

function digest(rows: Iterable<unknown>): string {
  const hash = createHash('sha256')
  for (const row of rows) {
    hash.update(JSON.stringify(row, (_k, v) => (v instanceof Float32Array ? Array.from(v) : v)))
  }
  return hash.digest('hex')
}

const spec: CorpusSpec = {
  seed: 42,
  dim: 32,
  tenants: [
    { id: 'a', chunks: 300 },
    { id: 'b', chunks: 120 },
  ],
}

describe('seeded generators', () => {
  it('same seed ⇒ identical corpus, queries and expenses; another seed ⇒ different', () => {
    expect(digest(generateCorpus(spec))).toBe(digest(generateCorpus(spec)))
    expect(digest(queryVectors(spec, 'a', 20))).toBe(digest(queryVectors(spec, 'a', 20)))
    expect(digest(generateCorpus({ ...spec, seed: 43 }))).not.toBe(digest(generateCorpus(spec)))
    const expenses = { seed: 7, rows: 2000, tenants: 10, bigTenantRows: 500, months: 12 }
    expect(digest(generateExpenses(expenses))).toBe(digest(generateExpenses(expenses)))
    expect(digest(generateExpenses({ ...expenses, seed: 8 }))).not.toBe(digest(generateExpenses(expenses)))
  })

  it("a tenant's rows do not depend on which other tenants are generated", () => {
    const alone = [...generateCorpus({ ...spec, tenants: [spec.tenants[1]!] })]
    const together = [...generateCorpus(spec)].filter((r) => r.tenantId === 'b')
    expect(digest(alone)).toBe(digest(together))
  })

  it('embeddings are unit vectors of the right size, documents are chunksPerDoc long', () => {
    const rows = [...generateCorpus({ ...spec, chunksPerDoc: 7 })]
    expect(rows).toHaveLength(420)
    for (const r of rows) {
      expect(r.embedding).toHaveLength(32)
      expect(Math.hypot(...r.embedding)).toBeCloseTo(1, 5)
    }
    expect(rows.filter((r) => r.documentId === 'a/doc-0').map((r) => r.chunkIndex)).toEqual([0, 1, 2, 3, 4, 5, 6])
  })

  it('expenses: the big tenant has its rows, the rest spread, all inside the months', () => {
    const rows = [
      ...generateExpenses({ seed: 1, rows: 5000, tenants: 11, bigTenantRows: 2000, months: 6, end: new Date('2025-06-30T00:00:00Z') }),
    ]
    expect(rows.filter((r) => r.tenantId === 1)).toHaveLength(2000)
    expect(new Set(rows.map((r) => r.tenantId)).size).toBe(11)
    const start = new Date('2025-06-30T00:00:00Z').getTime() - 6 * 30.44 * 86400_000
    expect(rows.every((r) => r.paidAt.getTime() >= start && r.paidAt.getTime() <= new Date('2025-06-30T00:00:00Z').getTime())).toBe(true)
  })
})
