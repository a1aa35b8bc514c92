import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { ragBench } from '../../cli/rag-bench.js'
import { toLangChain } from '../../bench/rag/filters/filter-peers.js'
import { filterLadder, withLadderFields } from '../../bench/rag/filters/filter-ladder.js'
import { targets } from '../../bench/rag/filters/run-filter-bench.js'
import { matchesFilter } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'

afterAll(removeTempDirs)

/** `rag-bench filters` in process on a small corpus against the test database, and its pure parts. */
const t = useTestDatabase()
// Made before the first test (a file whose tests are all skipped runs no afterAll, and makes none).
let dir = ''
beforeAll(() => void (dir = tempDir('pgscale-filters-')))

beforeEach(() => {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
  vi.spyOn(console, 'log').mockImplementation(() => {})
})
afterEach(() => vi.restoreAllMocks())

describe('rag-bench filters', () => {
  itWithServer(t.target)('measures the ladder per strategy and writes its report', async () => {
    const out = join(dir, 'filters.json')
    const code = await ragBench([
      'filters',
      '--pg',
      t.url!,
      '--chunks',
      '1500',
      '--dim',
      '16',
      '--queries',
      '3',
      '--no-peers',
      '--json',
      out,
    ])
    expect(code).toBe(0)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    expect(report.filters.map((f: { label: string }) => f.label)).toEqual(filterLadder().map((f) => f.label))
    for (const f of report.filters) {
      expect(Object.keys(f.strategies).sort()).toEqual(['HNSW walk, fixed ef', 'always exact', 'pgscale (auto)'])
      // The exact strategy is the truth it is measured against, and no strategy returns fewer than it can.
      expect(f.strategies['always exact'].recallAt10).toBe(1)
      for (const s of Object.values(f.strategies) as Array<{ short: number }>) expect(s.short).toBe(0)
    }
    expect(report.indexes.built).toHaveLength(8)
    expect(report.peers.map((p: { skipped?: string }) => p.skipped)).toEqual([])
  })
})

describe('the filter ladder', () => {
  it('fields are drawn per row, independent of the vectors, near their target selectivities', () => {
    const rows = Array.from({ length: 20_000 }, (_, i) =>
      withLadderFields({ tenantId: 't', documentId: `d${i >> 4}`, chunkIndex: i & 15, content: '', embedding: [1] }, 'seed'),
    )
    for (const rung of filterLadder()) {
      const share = rows.filter((r) => matchesFilter(r.metadata!, rung.filter)).length / rows.length
      expect(Math.abs(share - rung.target), rung.label).toBeLessThan(Math.max(0.002, rung.target * 0.1))
    }
  })

  it("LangChain's syntax: equality, $in and numeric ranges translate; $or has none", () => {
    expect(toLangChain({ e1: 'yes' })).toEqual({ e1: 'yes' })
    expect(toLangChain({ c: { $in: [1, 2] } })).toEqual({ c: { in: [1, 2] } })
    expect(toLangChain({ r: { $lt: 10 } })).toEqual({ r: { lt: 10 } })
    expect(toLangChain({ $or: [{ a: 1 }, { b: 2 }] })).toBeUndefined()
    expect(toLangChain({ r: { $lt: 'x' } })).toBeUndefined()
  })

  it('targets: a rung below 0.98 recall or above 3× the unfiltered p50 is a miss', () => {
    const s = (recallAt10: number, p50Ms: number) => ({ recallAt10, p50Ms, p95Ms: p50Ms, short: 0, firstMs: p50Ms })
    const filters = [
      {
        label: 'a',
        kind: 'equality' as const,
        target: 0.1,
        selectivity: 0.1,
        matching: 10,
        unsupported: [],
        strategies: { x: s(0.97, 1), y: s(1, 3.1) },
      },
      {
        label: 'b',
        kind: 'range' as const,
        target: 0.1,
        selectivity: 0.1,
        matching: 10,
        unsupported: [],
        strategies: { x: s(0.98, 3), y: s(1, 1) },
      },
    ]
    expect(targets(filters, 1)).toEqual({ x: { recallMisses: ['a'], latencyMisses: [] }, y: { recallMisses: [], latencyMisses: ['a'] } })
  })
})
