import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { ragBench } from '../../cli/rag-bench.js'
import { rollupBench } from '../../cli/rollup-bench.js'
import { useTestDatabase } from '../support/test-database.js'
import { itUnless } from '../support/skip.js'
import { sql } from 'kysely'
import { recordedObjects } from '../../src/index.js'

afterAll(removeTempDirs)

/** The CLIs run in-process on small sizes against the test database; their JSON is checked key by key. */
const t = useTestDatabase()
// Made before the first test (a file whose tests are all skipped runs no afterAll, and makes none).
let dir = ''
beforeAll(() => void (dir = tempDir('pgscale-cli-')))
let stderr: string[]
let stdout: string[]

beforeEach(() => {
  stderr = []
  stdout = []
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true))
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(String(chunk)), true))
  vi.spyOn(console, 'log').mockImplementation((...args) => void stdout.push(args.join(' ')))
})
afterEach(() => vi.restoreAllMocks())

const where = () => (t.url ? ['--pg', t.url] : ['--db', 'embedded'])
const needsUrl = itUnless(!t.target.url && 'the bench keeps or drops its schema in the test database, reached by URL')

/** What a bench left in the test database: its schema, and the records of objects in it (in any schema's bookkeeping). */
async function leftInDatabase(schema: string): Promise<{ schema: boolean; records: string[] }> {
  if (!t.url) return { schema: false, records: [] }
  const { rows } = await sql<{ schema: boolean }>`select exists (select from pg_namespace where nspname = ${schema}) as schema`.execute(
    t.db,
  )
  const records = (await recordedObjects(t.db)).filter((r) => r.schema === schema).map((r) => r.key)
  return { schema: rows[0]!.schema, records }
}

/** On a Citus run (PGSCALE_TEST_CITUS_WORKERS) the reports carry a `citus` section. */
const citusKey = () => (t.target.citusWorkers ? ['citus'] : [])

/** On Citus: every reported tenant's statement routed to one shard, its shard's plan inside; elsewhere no section. */
function expectRoutedPlacement(citus: { tenants: Array<{ tasks: number; plan: string; worker: string }> } | undefined): void {
  if (!t.target.citusWorkers) {
    expect(citus).toBeUndefined()
    return
  }
  expect(citus!.tenants.length).toBeGreaterThan(0)
  for (const tenant of citus!.tenants) {
    expect(tenant.tasks).toBe(1)
    expect(tenant.plan).toMatch(/Citus Adaptive, 1 task\) > remote: /)
    expect(tenant.worker).toMatch(/^worker \d+ \(/)
  }
}

/** Writes a corpus directory in the documented format: chunks.jsonl + embeddings.npy (float32, C order). */
function writeCorpusDir(tenants: Array<[string, number]>, dim: number): string {
  const out = tempDir('pgscale-corpus-')
  const lines: string[] = []
  const vectors: number[] = []
  let i = 0
  for (const [tenant, n] of tenants) {
    for (let c = 0; c < n; c++, i++) {
      lines.push(
        JSON.stringify({
          tenant,
          document: `${tenant}/d${Math.floor(c / 10)}`,
          chunk: c % 10,
          content: `alpha beta gamma delta chunk ${i} about ${tenant}`,
        }),
      )
      for (let d = 0; d < dim; d++) vectors.push(Math.sin((i + 1) * (d + 1)) + (d === i % dim ? 2 : 0))
    }
  }
  writeFileSync(join(out, 'chunks.jsonl'), lines.join('\n') + '\n')
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${i}, ${dim}), }`
  header = header.padEnd(64 - 10 - 1, ' ') + '\n'
  const prefix = Buffer.concat([Buffer.from('\x93NUMPY\x01\x00', 'latin1'), Buffer.alloc(2)])
  prefix.writeUInt16LE(header.length, 8)
  writeFileSync(
    join(out, 'embeddings.npy'),
    Buffer.concat([prefix, Buffer.from(header, 'latin1'), Buffer.from(new Float32Array(vectors).buffer)]),
  )
  return out
}

describe('rag-bench --corpus', () => {
  it('runs on a directory of chunks and embeddings: its tenants, its dimensions, tie-aware recall', async () => {
    const corpus = writeCorpusDir(
      [
        ['big', 1200],
        ['small-a', 40],
        ['small-b', 30],
      ],
      12,
    )
    const out = join(dir, 'corpus.json')
    const code = await ragBench([
      '--corpus',
      corpus,
      '--queries',
      '10',
      '--ef-search',
      '40',
      '--index',
      'tiered',
      '--phases',
      'ingest,index,ingest-indexed,search,hybrid',
      '--json',
      out,
      ...where(),
    ])
    expect(stderr.join('')).not.toMatch(/Error:|at .*\.ts:/)
    expect(code).toBe(0)
    expect(stderr.join('')).toMatch(/skipped the ingest-indexed phase/)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    expect(report.tenants).toMatchObject({ count: 3, chunks: 1270, largest: 1200, smallest: 30 })
    expect(report.parameters).toMatchObject({ dim: 12 })
    expect(report.ingest).toMatchObject({ chunks: 1270 })
    expect(report.search.rows.length).toBeGreaterThan(0)
    for (const r of report.search.rows) expect(r.recallAt10).toBeGreaterThanOrEqual(r.recallAt10ById)
    expect(report.hybrid.queries).toBeGreaterThan(0)
  }, 300_000)

  it('a directory that does not follow the format, or options it sets itself: one line, exit 2', async () => {
    const empty = tempDir('pgscale-corpus-')
    expect(await ragBench(['--corpus', empty, ...where()])).toBe(2)
    expect(stderr.join('')).toMatch(/no chunks\.jsonl/)
    const corpus = writeCorpusDir([['t', 20]], 4)
    writeFileSync(
      join(corpus, 'chunks.jsonl'),
      readFileSync(join(corpus, 'chunks.jsonl'), 'utf8') +
        JSON.stringify({ tenant: 't', document: 'x', chunk: 0, content: 'extra' }) +
        '\n',
    )
    expect(await ragBench(['--corpus', corpus, ...where()])).toBe(2)
    expect(stderr.join('')).toMatch(/chunks\.jsonl has 21 lines but the embeddings hold 20 rows of 4/)
    expect(await ragBench(['--corpus', corpus, '--dim', '8', ...where()])).toBe(2)
    expect(stderr.join('')).toMatch(/leave out --dim/)
  })
})

describe('rag-bench', () => {
  it('runs every phase on a small mix and writes every documented key', async () => {
    const out = join(dir, 'rag.json')
    const plot = join(dir, 'rag.svg')
    const code = await ragBench([
      '--tenant-mix',
      '2x1200+20x30',
      '--dim',
      '16',
      '--queries',
      '12',
      '--ef-search',
      '10,40',
      '--writers',
      '2',
      '--json',
      out,
      '--plot',
      plot,
      ...where(),
    ])
    expect(stderr.join('')).not.toMatch(/Error:|at .*\.ts:/)
    expect(code).toBe(0)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    expect(Object.keys(report).sort()).toEqual(
      [
        'bench',
        'findings',
        'hybrid',
        'index',
        'ingest',
        'ingestIndexed',
        'machine',
        'method',
        'parameters',
        'process',
        'search',
        'server',
        'startedAt',
        'tenants',
        'tunedRecall',
        'writes',
        ...citusKey(),
      ].sort(),
    )
    expectRoutedPlacement(report.citus)
    expect(Object.keys(report.machine).sort()).toEqual(['cores', 'cpu', 'memoryGiB', 'node', 'platform'])
    expect(Object.keys(report.server)).toEqual(expect.arrayContaining(['provider', 'serverVersion', 'pgvectorVersion', 'settings']))
    expect(report.tenants).toMatchObject({
      count: 22,
      chunks: 3000,
      largest: 1200,
      smallest: 30,
      classes: { small: 20, medium: 2, large: 0 },
    })
    expect(report.ingest).toMatchObject({ chunks: 3000 })
    expect(Object.keys(report.index).sort()).toEqual(['shared', 'sizes', 'tiered'])
    expect(Object.keys(report.index.tiered).sort()).toEqual(['bytes', 'droppedSharedIndex', 'notes', 'seconds', 'tenantIndexes', 'tuning'])
    expect(Object.keys(report.index.sizes).sort()).toEqual(['btree', 'gin', 'heap', 'sharedHnsw', 'tenantHnsw', 'toast', 'total'])
    expect(report.ingestIndexed.chunks).toBeGreaterThan(0)
    // 2 strategies × 2 classes (medium, small) × 2 ef_search × 2 iterative scan settings.
    expect(report.search.rows).toHaveLength(2 * 2 * 2 * 2)
    for (const r of report.search.rows) {
      expect(Object.keys(r).sort()).toEqual([
        'efSearch',
        'iterativeScan',
        'latencyMs',
        'plans',
        'queries',
        'recallAt10',
        'recallAt10ById',
        'shortResults',
        'strategy',
        'tenantChunks',
        'tenantClass',
      ])
      expect(Object.keys(r.latencyMs).sort()).toEqual(['mean', 'n', 'p50', 'p95', 'p99'])
      expect(r.recallAt10).toBeGreaterThan(0.5)
      expect(r.recallAt10).toBeGreaterThanOrEqual(r.recallAt10ById)
    }
    expect(Object.keys(report.hybrid).sort()).toEqual(['hybridMs', 'queries', 'vectorMs'])
    expect(report.writes).toMatchObject({ writers: 2 })
    expect(report.writes.deletePlan).toEqual(['chunks_pkey'])
    expect(report.writes.waits.samples).toBeGreaterThan(0)
    expect(report.findings.length).toBeGreaterThan(0)
    expect(report.process.peakRssMB).toBeGreaterThan(0)
    // The chart (Vega-Lite): one point per relaxed-scan search row, each labelled with its values.
    const svg = readFileSync(plot, 'utf8')
    expect(svg).toMatch(/^<svg[\s\S]*recall@10 vs p50 latency[\s\S]*<\/svg>$/)
    const relaxed = report.search.rows.filter((r: { iterativeScan: string }) => r.iterativeScan === 'relaxed')
    expect(svg.match(/aria-roledescription="point"/g)?.length).toBe(relaxed.length)
    // Vega labels a number with 12 significant digits (0.9416666666666667 → 0.941666666667).
    expect(svg).toContain(`recall@10 (tie-aware): ${Number(relaxed[0].recallAt10.toPrecision(12))}`)
    expect(stdout.join('\n')).toMatch(/7\. findings/)
    // It ends with what to do next: a run ten times bigger, where the report is, the glossary.
    expect(stdout.join('\n')).toMatch(/what next\n {2}a bigger run: +npx rag-bench --chunks 30000 --tenants 22 --dim 16 --(db|pg) /)
    expect(stdout.join('\n')).toContain(`this run's report:  ${out} (compare two runs: npx rag-bench compare base.json ${out})`)
    expect(stdout.join('\n')).toContain('what each figure means: docs/rag-bench.md#glossary')
    // Its schema and the records of the stores in it are gone (--keep keeps them).
    expect(await leftInDatabase('pgscale_rag_bench')).toEqual({ schema: false, records: [] })
  }, 300_000)

  needsUrl(
    '--keep keeps the schema and its records; the next run without it removes both',
    async () => {
      const small = ['--tenant-mix', '2x40', '--dim', '4', '--phases', 'ingest', '--queries', '2', ...where()]
      expect(await ragBench([...small, '--keep'])).toBe(0)
      expect(await leftInDatabase('pgscale_rag_bench')).toEqual({ schema: true, records: ['store:pgscale_rag_bench.chunks'] })
      expect(await ragBench(small)).toBe(0)
      expect(await leftInDatabase('pgscale_rag_bench')).toEqual({ schema: false, records: [] })
    },
    120_000,
  )

  it.each([
    [['--phases', 'ingest,teleport'], /unknown phase "teleport"/],
    [['--chunks', '0'], /--chunks must be an integer from 1/],
    [['--tenant-mix', '4x'], /malformed tenant mix "4x"/],
    [['--dim', '3000'], /above pgvector's HNSW limit of 2000/],
    [['--dim', '20000'], /--dim must be an integer from 1 to 16,000/],
    [['--tenant-mix', '4x100', '--chunks', '500'], /adds up to 400 chunks, but --chunks is 500/],
    [['--db', 'cloud'], /argument 'cloud' is invalid/],
    [['--pg', 'postgres://nobody@127.0.0.1:1/none'], /could not connect to postgres:\/\/nobody@127\.0\.0\.1:1\/none/],
  ])('bad input %j: one clear line, non-zero exit, no stack trace', async (args, message) => {
    const code = await ragBench(args as string[])
    expect(code).not.toBe(0)
    const text = stderr.join('')
    expect(text).toMatch(message)
    expect(text).not.toMatch(/\n\s+at /)
    expect(
      text
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('rag-bench:') || l.includes('error')),
    ).toHaveLength(1)
  })
})

describe('rollup-bench', () => {
  it('runs on a small table and writes every documented key', async () => {
    const out = join(dir, 'rollup.json')
    const code = await rollupBench([
      '--rows',
      '6000',
      '--tenants',
      '6',
      '--big-tenant-rows',
      '3000',
      '--months',
      '6',
      '--reps',
      '3',
      '--json',
      out,
      '--plot',
      join(dir, 'rollup.svg'),
      ...where(),
    ])
    expect(stderr.join('')).not.toMatch(/Error:|at .*\.ts:/)
    expect(code).toBe(0)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    expect(Object.keys(report).sort()).toEqual(
      [
        'anchors',
        'bench',
        'covering',
        'findings',
        'machine',
        'method',
        'parameters',
        'seeding',
        'server',
        'sizes',
        'startedAt',
        'tenants',
        ...citusKey(),
      ].sort(),
    )
    expectRoutedPlacement(report.citus)
    expect(report.seeding).toMatchObject({ rows: 6000 })
    // Two points (source, rollup) per dashboard query and tenant.
    const dashboards = report.tenants.big.dashboard.length + report.tenants.typical.dashboard.length
    expect(readFileSync(join(dir, 'rollup.svg'), 'utf8').match(/aria-roledescription="point"/g)?.length).toBe(2 * dashboards)
    // The raw reference (psql \copy) runs wherever there is a server URL and psql.
    if (report.server.provider !== 'embedded') expect(Object.keys(report.seeding.raw).sort()).toEqual(['indexSeconds', 'ratio', 'seconds'])
    expect(Object.keys(report.covering).sort()).toEqual(['big', 'index', 'typical'])
    expect(Object.keys(report.covering.big).sort()).toEqual(['rebuild', 'refresh'])
    for (const tenant of [report.tenants.big, report.tenants.typical]) {
      expect(Object.keys(tenant).sort()).toEqual(['bucketRows', 'dashboard', 'rebuild', 'refresh', 'rows', 'tenantId'])
      expect(tenant.dashboard).toHaveLength(6)
      expect(Object.keys(tenant.refresh).sort()).toEqual(['bareAggregateMs', 'floorRatio', 'oneRowInsertMs', 'ratio', 'refreshMs'])
      expect(tenant.rebuild.months).toBeGreaterThanOrEqual(6)
    }
    expect(report.tenants.big.rows).toBe(3000)
    expect(Object.keys(report.sizes).sort()).toEqual(['rollupBytes', 'rollupRows', 'sourceIndexesBytes', 'sourceTableBytes'])
    expect(report.findings).toHaveLength(report.seeding.raw ? 6 : 5)
    expect(stdout.join('\n')).toMatch(/a bigger run: +npx rollup-bench --rows 60000 --tenants 6 /)
    expect(stdout.join('\n')).toContain('what each figure means: docs/rollup.md#measured-rollup-bench')
    expect(await leftInDatabase('pgscale_bench')).toEqual({ schema: false, records: [] })
  }, 300_000)

  it('--track measures every write kind in each mode, drain, staleness, fresh reads and distinct counts', async () => {
    const out = join(dir, 'rollup-track.json')
    const code = await rollupBench([
      ...['--rows', '6000', '--tenants', '8', '--big-tenant-rows', '3000', '--months', '6', '--reps', '3'],
      ...['--track', '--track-rows', '400', '--track-rounds', '1', '--track-seconds', '1', '--track-writes-per-second', '40'],
      ...['--json', out, ...where()],
    ])
    expect(stderr.join('')).not.toMatch(/Error:|at .*\.ts:/)
    expect(code).toBe(0)
    const report = JSON.parse(readFileSync(out, 'utf8'))
    // On Citus tracking refuses the distributed source: the phase is skipped, said on stderr.
    // The tracked rollup's record goes with its schema.
    expect(await leftInDatabase('pgscale_bench')).toEqual({ schema: false, records: [] })
    if (report.citus) return expect(report.track).toBeUndefined()
    const track = report.track
    const modes = ['plain', 'tracked', ...(track.pgIvm ? ['pgIvm'] : [])].sort()
    expect(track.writes.map((w: { kind: string; writers: number }) => `${w.kind}:${w.writers}`)).toEqual(
      [1, 4].flatMap((n) => ['insertSelect', 'update', 'delete', 'copy', 'singleRowInserts'].map((k) => `${k}:${n}`)),
    )
    for (const w of track.writes) {
      expect(Object.keys(w.ms).sort()).toEqual(modes)
      for (const mode of modes) expect(w.ms[mode].n).toBe(1)
      expect(w.ratio.tracked).toBeGreaterThan(0)
    }
    expect(track.drain.map((d: { buckets: number }) => d.buckets > 0)).toEqual([true, true])
    // Every write of the staleness load is either measured or still dirty when the load stopped.
    expect(track.staleness.writes).toBeGreaterThan(0)
    expect(track.staleness.staleSeconds.n + track.staleness.unresolved).toBe(track.staleness.writes)
    expect(track.freshReads.map((f: { dirtyMonths: number }) => f.dirtyMonths)).toEqual([0, 1, 3, 0, 1, 3])
    if (report.server.provider === 'embedded') expect(track.distinct).toBeNull()
    else expect(track.distinct.perTenantRange.n).toBe(8)
  }, 300_000)

  it('an unknown zone is one clear line and a non-zero exit', async () => {
    const code = await rollupBench(['--zone', 'Mars/Base', '--rows', '10'])
    expect(code).not.toBe(0)
    expect(stderr.join('')).toMatch(/^rollup-bench: unknown time zone "Mars\/Base"/)
  })
})
