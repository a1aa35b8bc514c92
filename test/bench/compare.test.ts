import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { ragBench } from '../../cli/rag-bench.js'
import { rollupBench } from '../../cli/rollup-bench.js'
import { compareReports, figuresOf } from '../../bench/report/compare-reports.js'

afterAll(removeTempDirs)

/** `rag-bench compare` / `rollup-bench compare`: the CI gate that compares a base report with HEAD's. */
// Made before the first test (a file whose tests are all skipped runs no afterAll, and makes none).
let dir = ''
beforeAll(() => void (dir = tempDir('pgscale-compare-')))
const load = JSON.parse(readFileSync(new URL('../../docs/results/rag-load-100k-local.json', import.meta.url), 'utf8'))
let out: string[]
let err: string[]

beforeEach(() => {
  out = []
  err = []
  vi.spyOn(console, 'log').mockImplementation((line: unknown) => void out.push(String(line)))
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (err.push(String(chunk)), true))
})
afterEach(() => vi.restoreAllMocks())

const write = (name: string, report: unknown) => {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(report))
  return file
}

describe('rag-bench compare', () => {
  it('passes identical reports', async () => {
    const a = write('base.json', load)
    expect(await ragBench(['compare', a, write('same.json', load)])).toBe(0)
    expect(out.join('\n')).toMatch(/no regression/)
  })

  it('fails a report whose p95 tripled, naming the figure', async () => {
    const slower = structuredClone(load)
    slower.steps[1].operations.search.p95Ms *= 3
    expect(await ragBench(['compare', write('base.json', load), write('slower.json', slower)])).toBe(1)
    const text = out.join('\n')
    expect(text).toMatch(/steps\[2\]\.operations\.search\.p95Ms\s+latency.*3\.00\s+REGRESSED/)
    expect(text).toMatch(/1 regression/)
  })

  it('a rate that halved fails; one within --max-ratio passes', async () => {
    const fewer = structuredClone(load)
    fewer.steps[0].throughput /= 2.5
    expect(await ragBench(['compare', write('base.json', load), write('fewer.json', fewer)])).toBe(1)
    expect(await ragBench(['compare', write('base.json', load), write('fewer.json', fewer), '--max-ratio', '3'])).toBe(0)
  })

  it('latencies under --min-ms on both sides are noise', () => {
    const base = { config: { n: 1 }, a: { p50Ms: 0.2 }, b: { p50Ms: 5 } }
    const head = { config: { n: 1 }, a: { p50Ms: 0.8 }, b: { p50Ms: 5 } }
    const c = compareReports(base, head, { maxRatio: 2, minMs: 1 })
    expect(c.figures.find((f) => f.key === 'a.p50Ms')?.verdict).toBe('noise')
    expect(c.regressions).toEqual([])
    expect(compareReports(base, head, { maxRatio: 2, minMs: 0.1 }).regressions.map((f) => f.key)).toEqual(['a.p50Ms'])
  })

  it('reports of other sizes or of another bench are refused with exit 2 and a clear message', async () => {
    const bigger = structuredClone(load)
    bigger.config.chunks *= 10
    expect(await ragBench(['compare', write('base.json', load), write('bigger.json', bigger)])).toBe(2)
    expect(err.join('')).toMatch(/different sizes or options.*chunks 100000 vs 1000000/)
    const other = { config: load.config, something: { else: 1 } }
    expect(await ragBench(['compare', write('base.json', load), write('other.json', other)])).toBe(2)
    expect(err.join('')).toMatch(/different shapes/)
    expect(await ragBench(['compare', write('base.json', load), join(dir, 'missing.json')])).toBe(2)
  })
})

describe('the figures of every report kind', () => {
  it('rollup-bench: percentile objects under …Ms keys; budget: µs of CPU per call', async () => {
    const rollup = JSON.parse(readFileSync(new URL('../../docs/results/rollup-3m-local.json', import.meta.url), 'utf8'))
    const keys = [...figuresOf(rollup).keys()]
    expect(keys.some((k) => /sourceMs\.p95$/.test(k))).toBe(true)
    expect(keys.some((k) => /\.n$/.test(k))).toBe(false)
    expect(await rollupBench(['compare', write('r1.json', rollup), write('r2.json', rollup)])).toBe(0)
    const budget = {
      platform: 'linux-x64',
      repeats: 3,
      blocks: 10,
      results: { search: { pgscaleMicros: 40, rawMicros: 30, ratio: 1.3, blocks: 10 } },
    }
    const worse = structuredClone(budget)
    worse.results.search.pgscaleMicros = 4000
    expect(compareReports(budget, worse, { maxRatio: 2, minMs: 1 }).regressions.map((f) => f.key)).toEqual(['results.search.pgscaleMicros'])
  })
})
