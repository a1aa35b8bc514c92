import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import {
  BUCKETS,
  chunkMetadata,
  CORPUS_FILTER_RUNGS,
  packageOwners,
  queryFilters,
  sectionOf,
  sourceOf,
} from '../../bench/corpus/corpus-metadata.js'
import { CorpusFormatError, openCorpusDir } from '../../bench/rag/corpus-dir.js'
import { trafficFilter, type CorpusFiltersReport } from '../../bench/rag/phases/corpus-filters.js'
import { renderCorpusFilters } from '../../bench/rag/render-real-queries.js'
import { matchesFilter } from '../../src/index.js'

afterAll(removeTempDirs)

/** The real-text corpus's metadata and filter ladder (bench/corpus/corpus-metadata.ts) and the filtered phase's pure parts. */
describe('corpus metadata', () => {
  const owners = new Map([['/usr/share/man/man1/ls.1.gz', 'coreutils']])

  it('source follows the document: the doc directory, the man page owner, else the page name', () => {
    expect(sourceOf('doc/bash/copyright', owners)).toBe('bash')
    expect(sourceOf('doc/python3/examples/README', owners)).toBe('python3')
    expect(sourceOf('man/man1/ls.1.gz', owners)).toBe('coreutils')
    expect(sourceOf('man/man3/printf.3posix.gz', owners)).toBe('printf')
    expect(sourceOf('man/man8/mount.8', owners)).toBe('mount')
  })

  it('section is the man section or the kind of doc file', () => {
    expect(sectionOf('man/man8/mount.8.gz')).toBe('8')
    expect(sectionOf('man/man1/ls.1.gz')).toBe('1')
    expect(sectionOf('doc/bash/copyright')).toBe('copyright')
    expect(sectionOf('doc/bash/changelog.Debian.gz')).toBe('changelog')
    expect(sectionOf('doc/gnupg/NEWS.Debian.gz')).toBe('news')
    expect(sectionOf('doc/bash/examples/README.md')).toBe('readme')
    expect(sectionOf('doc/bash/FAQ')).toBe('doc')
  })

  it('reads package owners from dpkg lists, architecture qualifiers dropped', () => {
    const dir = tempDir('pgscale-dpkg-')
    writeFileSync(join(dir, 'libc6:amd64.list'), '/.\n/usr/share/man/man3/abort.3.gz\n')
    writeFileSync(join(dir, 'coreutils.list'), '/usr/share/man/man1/ls.1.gz\n')
    writeFileSync(join(dir, 'coreutils.md5sums'), 'not a list\n')
    const got = packageOwners(dir)
    expect(got.get('/usr/share/man/man3/abort.3.gz')).toBe('libc6')
    expect(got.get('/usr/share/man/man1/ls.1.gz')).toBe('coreutils')
    expect(packageOwners(join(dir, 'missing')).size).toBe(0)
  })

  it('bucket and year are seeded hashes of the chunk id: stable, in range, spread evenly, not of the content', () => {
    const chunk = { tenant: 'large-a', document: 'doc/bash/copyright', chunk: 3 }
    const a = chunkMetadata(chunk, owners, 'debian')
    expect(chunkMetadata({ ...chunk, content: 'other text' } as typeof chunk, owners, 'debian')).toEqual(a)
    expect(a).toMatchObject({ source: 'bash', section: 'copyright' })
    const buckets = Array.from({ length: 20_000 }, (_, i) => chunkMetadata({ ...chunk, chunk: i }, owners, 'debian'))
    for (const m of buckets.slice(0, 200)) {
      expect(m.bucket).toBeGreaterThanOrEqual(0)
      expect(m.bucket).toBeLessThan(BUCKETS)
      expect(m.year).toBeGreaterThanOrEqual(2005)
      expect(m.year).toBeLessThanOrEqual(2024)
    }
    const below100 = buckets.filter((m) => m.bucket < 100).length / buckets.length
    expect(below100).toBeGreaterThan(0.09)
    expect(below100).toBeLessThan(0.11)
    const reseeded = buckets.slice(0, 100).filter((m, i) => chunkMetadata({ ...chunk, chunk: i }, owners, 'other').bucket === m.bucket)
    expect(reseeded.length).toBeLessThan(5)
  })
})

describe('query filters', () => {
  const tenant = {
    sources: new Map([
      ['bash', 40],
      ['big', 990],
      ['tiny', 10],
    ]),
    sections: new Map([
      ['1', 500],
      ['copyright', 540],
    ]),
  }

  it('gives one filter per rung: own values, another value of the tenant, bucket windows of each share', () => {
    const f = queryFilters({ source: 'bash', section: '1' }, tenant, 'seed:0')
    expect(Object.keys(f)).toEqual(CORPUS_FILTER_RUNGS.map((r) => r.key))
    expect(f['own-source']).toEqual({ source: 'bash' })
    expect(f['own-section']).toEqual({ section: '1' })
    expect(f['other-section']).toEqual({ section: 'copyright' })
    expect(['big', 'tiny']).toContain((f['other-source'] as { source: string }).source)
    for (const rung of CORPUS_FILTER_RUNGS.filter((r) => r.range === 'below')) {
      expect(f[rung.key]).toEqual({ bucket: { $lt: Math.round(rung.share! * BUCKETS) } })
      expect(queryFilters({ source: 'tiny', section: 'copyright' }, tenant, 'other seed')[rung.key]).toEqual(f[rung.key])
    }
    for (const rung of CORPUS_FILTER_RUNGS.filter((r) => r.range === 'window')) {
      const { $gte, $lt } = (f[rung.key] as { bucket: { $gte: number; $lt: number } }).bucket
      expect($lt - $gte).toBe(Math.round(rung.share! * BUCKETS))
      expect($gte).toBeGreaterThanOrEqual(0)
      expect($lt).toBeLessThanOrEqual(BUCKETS)
      expect(matchesFilter({ bucket: $gte }, f[rung.key]!)).toBe(true)
      expect(matchesFilter({ bucket: $lt }, f[rung.key]!)).toBe(false)
    }
    expect(queryFilters({ source: 'bash', section: '1' }, tenant, 'seed:0')).toEqual(f)
    const windows = new Set(
      Array.from({ length: 20 }, (_, i) => JSON.stringify(queryFilters({ source: 'bash', section: '1' }, tenant, `q${i}`)['window-10'])),
    )
    expect(windows.size).toBeGreaterThan(15)
  })

  it('draws the other source in proportion to its chunks, never the own one', () => {
    const picks = Array.from(
      { length: 400 },
      (_, i) => (queryFilters({ source: 'bash', section: '1' }, tenant, `seed:${i}`)['other-source'] as { source: string }).source,
    )
    expect(picks).not.toContain('bash')
    const big = picks.filter((p) => p === 'big').length
    expect(big).toBeGreaterThan(360)
    expect(big).toBeLessThan(400)
  })

  it('leaves out the other rung when the tenant has no other value', () => {
    const f = queryFilters({ source: 'bash', section: '1' }, { sources: new Map([['bash', 5]]), sections: new Map([['1', 5]]) }, 's')
    expect(f['other-source']).toBeUndefined()
    expect(f['other-section']).toBeUndefined()
    expect(f['own-source']).toEqual({ source: 'bash' })
  })

  it('traffic rotates through the rungs, one slot unfiltered', () => {
    const filters = queryFilters({ source: 'bash', section: '1' }, tenant, 's')
    const slots = CORPUS_FILTER_RUNGS.length + 1
    expect(trafficFilter({ filters }, 0)).toEqual(filters['own-source'])
    expect(trafficFilter({ filters }, 1)).toEqual(filters['other-source'])
    expect(trafficFilter({ filters }, slots - 1)).toBeUndefined()
    expect(trafficFilter({ filters }, slots)).toEqual(filters['own-source'])
    expect(trafficFilter({}, 0)).toBeUndefined()
  })
})

describe('queries.jsonl filters', () => {
  const corpus = (queryLine: object) => {
    const dir = tempDir('pgscale-corpus-')
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      join(dir, 'chunks.jsonl'),
      JSON.stringify({ tenant: 't', document: 'd', chunk: 0, content: 'x', metadata: { source: 's' } }) + '\n',
    )
    writeFileSync(join(dir, 'embeddings.f32'), Buffer.from(new Float32Array([1, 0]).buffer))
    writeFileSync(join(dir, 'meta.json'), '{"dim": 2}')
    writeFileSync(join(dir, 'queries.jsonl'), JSON.stringify({ tenant: 't', embedding: [1, 0], ...queryLine }) + '\n')
    return dir
  }

  it('keeps each query its document and filters', async () => {
    const c = await openCorpusDir(corpus({ split: 'eval', document: 'd', filters: { 'own-source': { source: 's' } } }))
    expect(c.queries?.get('t')?.[0]).toMatchObject({ split: 'eval', document: 'd', filters: { 'own-source': { source: 's' } } })
    const rows = []
    for await (const row of c.rows()) rows.push(row)
    expect(rows[0]?.metadata).toEqual({ source: 's' })
  })

  it('rejects filters that are not an object of rungs', async () => {
    await expect(openCorpusDir(corpus({ filters: [{ source: 's' }] }))).rejects.toThrow(CorpusFormatError)
  })
})

describe('rendered filtered phase', () => {
  it('names every rung that missed recall or latency', () => {
    const side = { queries: 2, recall: 1, p50Ms: 2, p95Ms: 3, exactP50Ms: 10, exactP95Ms: 12, short: 0 }
    const rung = (key: string, recall: number, p50Ms: number) => ({
      ...side,
      key,
      field: 'source' as const,
      follows: true,
      what: key,
      recall,
      p50Ms,
      selectivity: { median: 0.02, min: 0.001, max: 0.2 },
      atMostK: 0,
      aboveExactBelow: 1,
      ratioToUnfiltered: p50Ms / 2,
      ratioToExact: p50Ms / 10,
      meetsRecall: recall >= 0.98,
      meetsLatency: p50Ms <= 6,
    })
    const report: CorpusFiltersReport = {
      queries: 'q',
      fields: [],
      traffic: { searches: 9, filtered: 8, perTenant: { t: 9 } },
      retune: { seconds: 1, notes: [] },
      load: { start: [1, 2, 3], end: [1, 2, 3] },
      targets: { filteredRecall: 0.98, filteredLatencyFactor: 3, unfilteredRecall: 0.985, unfilteredRatioToExact: 0.4 },
      method: 'm',
      tenants: [
        {
          tenantId: 't',
          chunks: 100,
          trafficSearches: 9,
          evalQueries: 2,
          tuning: { efSearch: 80, exact: false, querySource: 'recent', filter: null },
          unfiltered: { ...side, ratioToExact: 0.2, meetsTarget: true },
          rungs: [rung('own-source', 0.99, 3), rung('other-source', 0.9, 3), rung('own-section', 0.99, 9)],
        },
      ],
    }
    const text = renderCorpusFilters(report).join('\n')
    const line = (key: string) => text.split('\n').find((l) => l.includes(` ${key} `))!
    expect(line('own-source')).not.toMatch(/recall,|latency/)
    expect(line('other-source')).toMatch(/\brecall\b/)
    expect(line('own-section')).toMatch(/\blatency\b/)
    expect(text).toContain('0.900')
  })
})
