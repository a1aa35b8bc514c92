import { readFileSync } from 'node:fs'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { heartbeat, progress, progressText } from '../../bench/report/progress.js'
import { biggerRunCommand, renderWhatNext } from '../../bench/report/what-next.js'

/** Bench output piped (CI): progress lines at a bound interval, heartbeats, the closing "what next", the glossary. */
let stderr: string[]
beforeEach(() => {
  stderr = []
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true))
})
afterEach(() => vi.restoreAllMocks())
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('bench output', () => {
  it('a progress line says phase, done/total, rate and ETA', () => {
    expect(progressText('ingest', 500, 1000, 10_000)).toBe('ingest: 500/1,000 (50%), 50/s, ETA 10 s')
    expect(progressText('tenant indexes', 3, 20, 6000, 'building')).toBe('tenant indexes: 3/20 (15%), 0.5/s, ETA 34 s — building')
  })

  it('piped, a bar prints a line each interval and its summary; on a TTY none of those lines', async () => {
    const bar = progress('seeding', 100, { enabled: false, everyMs: 40 })
    bar.update(50)
    await sleep(100)
    bar.done('100 rows in 0.1 s')
    const lines = stderr.join('')
    expect(lines).toMatch(/^seeding: 50\/100 \(50%\), [\d.,]+\/s, ETA \d+ s\n/)
    expect(lines).toMatch(/seeding: 100 rows in 0\.1 s\n$/)
    stderr = []
    await sleep(100)
    expect(stderr).toEqual([]) // stopped with done()
  })

  it('a total that grows past its estimate follows the work done', async () => {
    const bar = progress('tenant indexes', 2, { enabled: false, everyMs: 30 })
    bar.update(3)
    await sleep(50)
    bar.done('3 built')
    expect(stderr.join('')).toMatch(/tenant indexes: 3\/3 \(100%\)/)
  })

  it('a heartbeat speaks only when nothing else did for an interval, until stopped', async () => {
    const stop = heartbeat('rag-bench: writes', { enabled: true, everyMs: 40 })
    await sleep(130)
    stop()
    const count = stderr.filter((l) => /^rag-bench: writes, \d+ s so far\n$/.test(l)).length
    expect(count).toBeGreaterThanOrEqual(2)
    stderr = []
    await sleep(80)
    expect(stderr).toEqual([])
    heartbeat('quiet', { enabled: false, everyMs: 10 })()
  })

  it('"what next": a ten times bigger run, the report path, the glossary', () => {
    const text = renderWhatNext({
      biggerRun: biggerRunCommand('rag-bench', '--chunks', 3000, 'embedded', ['--tenants', '22']),
      reportPath: 'rag.json',
      glossary: 'docs/rag-bench.md#glossary',
    })
    expect(text).toContain('a bigger run:       npx rag-bench --chunks 30000 --tenants 22 --db local')
    expect(text).toContain("this run's report:  rag.json (compare two runs: npx rag-bench compare base.json rag.json)")
    expect(text).toContain('what each figure means: docs/rag-bench.md#glossary')
    expect(renderWhatNext({ biggerRun: 'npx rollup-bench --rows 10', glossary: 'x' })).toContain('not written: add --json FILE')
    expect(biggerRunCommand('rollup-bench', '--rows', 10, 'url')).toBe('npx rollup-bench --rows 100 --pg $DATABASE_URL')
  })

  it("docs/rag-bench.md's glossary explains every term the human report prints", () => {
    const doc = readFileSync(new URL('../../docs/rag-bench.md', import.meta.url), 'utf8')
    const glossary = doc.slice(doc.indexOf('## Glossary'), doc.indexOf('## Under load'))
    const terms = ['tie-aware', '`< k`', 'ef_search', 'RRF', 'LWLock:WALWrite', 'recall@10', 'by id', 'iterative', 'p50', 'TOAST']
    for (const term of [...terms, 'shared HNSW', 'tenant HNSW', 'btree + exact sort', 'exact p50 ms', 'peak RSS', 'small, medium, large'])
      expect(glossary, term).toContain(term)
  })
})
