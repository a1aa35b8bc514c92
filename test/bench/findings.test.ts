import { describe, expect, it } from 'vitest'
import { ragFindings } from '../../bench/rag/findings.js'
import type { SearchRow } from '../../bench/rag/rag-report.js'
import { rollupFindings } from '../../bench/rollup/run-rollup-bench.js'

const p = (p50: number) => ({ n: 10, p50, p95: p50 * 2, p99: p50 * 3, mean: p50 })
const row = (over: Partial<SearchRow>): SearchRow => ({
  strategy: 'shared',
  tenantClass: 'large',
  tenantChunks: { min: 25000, max: 25000 },
  efSearch: 40,
  iterativeScan: 'off',
  recallAt10: 0.625,
  recallAt10ById: 0.625,
  latencyMs: p(1.1),
  plans: ['shared HNSW index'],
  shortResults: 0,
  queries: 200,
  ...over,
})
const tenants = { count: 4, chunks: 100000, largest: 25000, smallest: 25000, classes: { small: 0, medium: 0, large: 4 } }

describe('rag-bench findings', () => {
  it('names the recall lost on the shared index and what restores it', () => {
    const findings = ragFindings({
      tenants,
      search: {
        k: 10,
        rows: [
          row({}),
          row({ efSearch: 40, iterativeScan: 'relaxed', recallAt10: 0.665 }),
          row({ efSearch: 200, iterativeScan: 'relaxed', recallAt10: 0.985, latencyMs: p(2.4) }),
          row({ strategy: 'tiered', recallAt10: 0.99, plans: ['tenant HNSW index'], latencyMs: p(1.2) }),
        ],
      },
    })
    expect(findings[0]).toMatch(/at ef_search 40, large tenants \(25,000 chunks\) lost 37\.5% of the true top 10 \(recall 0\.625\)/)
    expect(findings[0]).toMatch(/ef_search 200 with relaxed iterative scan reaches 0\.985/)
    expect(findings[0]).toMatch(/their own index \(tiered\) gives 0\.990 at ef_search 40/)
    expect(findings.join(' ')).toMatch(/large \(25,000 chunks\): its own HNSW index \(ef_search 40\), recall 0\.990, 1\.20 ms p50/)
  })

  it('prints a class whose tenants differ in size as a range, one of equal tenants as one value', () => {
    const findings = ragFindings({
      tenants,
      search: {
        k: 10,
        rows: [
          row({ tenantChunks: { min: 8000, max: 25000 } }),
          row({ strategy: 'tiered', recallAt10: 0.99, plans: ['tenant HNSW index'] }),
        ],
      },
    })
    expect(findings[0]).toMatch(/large tenants \(8,000–25,000 chunks\) lost/)
  })

  it('says small tenants never used the shared index and what it cost', () => {
    const findings = ragFindings({
      tenants,
      index: {
        shared: { seconds: 30, bytes: 586 * 2 ** 20 },
        sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 },
      },
      search: {
        k: 10,
        rows: [row({ tenantClass: 'small', tenantChunks: { min: 300, max: 300 }, recallAt10: 1, plans: ['btree + exact sort'] })],
      },
    })
    expect(findings[0]).toBe(
      'Tenants up to 300 chunks never used the shared HNSW index: the planner read the primary key and sorted exactly (recall 1.0); the index costs 586 MB and served no tenant measured here.',
    )
  })

  it('reports short results and the ingest ratio, and nothing for phases that did not run', () => {
    const findings = ragFindings({
      tenants,
      search: { k: 10, rows: [row({ shortResults: 12 })] },
      ingest: { chunks: 100000, seconds: 30, chunksPerSecond: 3599 },
      ingestIndexed: { chunks: 5000, seconds: 2.3, chunksPerSecond: 2180, ratioToUnindexed: 3599 / 2180, indexes: ['x'] },
    })
    expect(findings.some((f) => /fewer than k rows for 12 of 200 large-tenant queries/.test(f))).toBe(true)
    expect(findings.some((f) => /Ingest ran 1\.7× faster without the HNSW index \(3,599 vs 2,180 chunks\/s\)/.test(f))).toBe(true)
    expect(findings.some((f) => /Hybrid/.test(f))).toBe(false)
    expect(ragFindings({ tenants })).toEqual([])
  })
})

describe('rollup-bench findings', () => {
  it('turns the numbers into sentences', () => {
    const tenant = (rows: number, speedups: number[], refreshRatio: number) => ({
      tenantId: 1,
      rows,
      bucketRows: Math.round(rows / 36),
      dashboard: speedups.map((s, i) => ({ name: `q${i}`, sourceMs: p(s), rollupMs: p(1), speedup: s })),
      refresh: {
        refreshMs: p(8.1),
        bareAggregateMs: p(8.1 / refreshRatio),
        ratio: refreshRatio,
        oneRowInsertMs: p(0.4),
        floorRatio: refreshRatio * 0.9,
      },
      rebuild: { months: 37, seconds: [1.1], medianSeconds: 1.1, bareScanSeconds: [0.9], ratio: 1.22 },
    })
    const findings = rollupFindings({
      tenants: { big: tenant(990000, [20, 50], 1.17), typical: tenant(2000, [1.5, 2], 2.96) },
      sizes: { sourceTableBytes: 367 * 2 ** 20, sourceIndexesBytes: 100 * 2 ** 20, rollupBytes: 0.2 * 2 ** 20, rollupRows: 400 },
    })
    expect(findings[0]).toMatch(/20\.0–50\.0× faster/)
    expect(findings[1]).toMatch(/1\.17× the bare aggregate/)
    expect(findings[2]).toMatch(/all 37 months takes 1\.10 s for the big tenant, 1\.22× one aggregate scan/)
    expect(findings[3]).toMatch(/0\.2 MB, next to 367\.0 MB of source table/)
  })
})
