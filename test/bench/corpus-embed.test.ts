import { createHash } from 'node:crypto'
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { embedCorpus } from '../../bench/rag/corpus-embed.js'
import { openCorpusDir } from '../../bench/rag/corpus-dir.js'
import { ragBench } from '../../cli/rag-bench.js'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { useTestDatabase } from '../support/test-database.js'
import { itUnless } from '../support/skip.js'

/**
 * `rag-bench --corpus DIR --embed use-lite` on a small cached sample: 60 chunks and 8 short queries
 * of two tenants, embedded once by the real USE-lite encoder and kept as its cache
 * (test/fixtures/use-lite-corpus/cache). CI has no encoder packages: every text is served from the
 * cache, so the path runs whole — the view written beside the corpus, then the bench on it.
 */
afterAll(removeTempDirs)
const t = useTestDatabase()
const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'use-lite-corpus')
const MODEL = 'use-lite-512@energetic-ai-0.2.0'
const NO_PACKAGES = { prefix: '/nonexistent/no-encoder' }

/** A copy of the sample with its cache where `--embed use-lite` looks for it (DIR/embed-use-lite/cache). */
function sampleCorpus(): string {
  const dir = tempDir('pgscale-embed-')
  for (const f of ['chunks.jsonl', 'queries.jsonl']) copyFileSync(join(FIXTURE, f), join(dir, f))
  mkdirSync(join(dir, 'embed-use-lite', 'cache'), { recursive: true })
  copyFileSync(join(FIXTURE, 'cache', `${MODEL}.bin`), join(dir, 'embed-use-lite', 'cache', `${MODEL}.bin`))
  return dir
}

/** The cache's vector of `text` (its records: sha256(model \0 text), then 512 float32). */
function cachedVector(text: string): Float32Array {
  const key = createHash('sha256').update(MODEL).update('\0').update(text).digest()
  const bytes = readFileSync(join(FIXTURE, 'cache', `${MODEL}.bin`))
  for (let p = 0; p + 32 + 2048 <= bytes.length; p += 32 + 2048) {
    if (bytes.subarray(p, p + 32).equals(key))
      return new Float32Array(bytes.buffer.slice(bytes.byteOffset + p + 32, bytes.byteOffset + p + 32 + 2048))
  }
  throw new Error(`not in the sample's cache: ${text}`)
}

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('embedCorpus (use-lite, from the cached sample)', () => {
  it('writes the view beside the corpus: every chunk and query with its text’s vector, unit length; queries without text left out', async () => {
    const dir = sampleCorpus()
    const r = await embedCorpus(dir, 'use-lite', { encoderOptions: NO_PACKAGES, batch: 16 })
    expect(r).toMatchObject({ dim: 512, chunks: 60, queries: 8, queriesWithoutText: 2, computed: 0, cached: 68 })
    const view = join(dir, 'embed-use-lite')
    expect(JSON.parse(readFileSync(join(view, 'meta.json'), 'utf8'))).toMatchObject({ dim: 512, model: MODEL, chunks: 60 })
    const rows = new Float32Array(readFileSync(join(view, 'embeddings.f32')).buffer.slice(0))
    expect(rows.length).toBe(60 * 512)
    lines(join(dir, 'chunks.jsonl')).forEach((chunk, i) => {
      const row = rows.subarray(i * 512, (i + 1) * 512)
      expect(Array.from(row)).toEqual(Array.from(cachedVector(chunk.content as string)))
      expect(Math.hypot(...row)).toBeCloseTo(1, 5)
    })
    const queries = lines(join(view, 'queries.jsonl'))
    expect(queries).toHaveLength(8)
    for (const q of queries) expect(q.embedding).toEqual(Array.from(cachedVector(q.text as string)))
    // What the bench opens: the same tenants, 512 dimensions, the given queries per tenant.
    const corpus = await openCorpusDir(view)
    expect(corpus.dim).toBe(512)
    expect(corpus.tenants.map((x) => `${x.id}:${x.chunks}`).sort()).toEqual(['garage:30', 'kitchen:30'])
    expect([...corpus.queries!.values()].map((q) => q.length)).toEqual([4, 4])
  })

  it('a text the cache does not hold, without the encoder: the install command, and the last complete view left as it was', async () => {
    const dir = sampleCorpus()
    await embedCorpus(dir, 'use-lite', { encoderOptions: NO_PACKAGES })
    const before = readFileSync(join(dir, 'embed-use-lite', 'embeddings.f32'))
    appendFileSync(
      join(dir, 'chunks.jsonl'),
      `${JSON.stringify({ tenant: 'garage', document: 'new', chunk: 0, content: 'A sentence nobody embedded.' })}\n`,
    )
    await expect(embedCorpus(dir, 'use-lite', { encoderOptions: NO_PACKAGES })).rejects.toThrow(/npm run bench:encoder:install/)
    expect(readFileSync(join(dir, 'embed-use-lite', 'embeddings.f32')).equals(before)).toBe(true)
    expect(lines(join(dir, 'embed-use-lite', 'chunks.jsonl'))).toHaveLength(60)
    expect(existsSync(join(dir, 'embed-use-lite', 'meta.json.partial'))).toBe(false)
  })
})

describe('rag-bench --corpus DIR --embed use-lite', () => {
  let stderr: string[]
  beforeEach(() => {
    stderr = []
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true))
    vi.spyOn(console, 'log').mockImplementation(() => {})
    vi.spyOn(console, 'error').mockImplementation((...args) => void stderr.push(args.join(' ')))
  })
  afterEach(() => vi.restoreAllMocks())
  const where = () => (t.url ? ['--pg', t.url] : ['--db', 'embedded'])

  // On PGlite the bench's --corpus path itself is covered by test/bench/cli.test.ts; this one checks the view reaches it (22 s there at load 10).
  const onServer = itUnless(!t.url && 'the same --corpus run as cli.test.ts on PGlite; here only the embedded view is new')
  onServer(
    'runs the bench on the corpus embedded by the encoder (512-d), the cache beside it',
    async () => {
      const dir = sampleCorpus()
      const out = join(dir, 'report.json')
      // The cache is where the CLI looks; the packages are not installed in CI and are not needed.
      const code = await ragBench([
        '--corpus',
        dir,
        '--embed',
        'use-lite',
        '--ef-search',
        '40',
        '--phases',
        'ingest,index,search',
        '--json',
        out,
        ...where(),
      ])
      expect(stderr.join('')).not.toMatch(/Error:|at .*\.ts:/)
      expect(code).toBe(0)
      expect(stderr.join('')).toMatch(
        /corpus embedded with use-lite-512@energetic-ai-0\.2\.0: 60 chunks, 8 queries \(2 without text left out\); 0 texts computed/,
      )
      const report = JSON.parse(readFileSync(out, 'utf8'))
      expect(report.parameters).toMatchObject({ dim: 512 })
      expect(report.tenants).toMatchObject({ count: 2, chunks: 60 })
      expect(report.search.rows.length).toBeGreaterThan(0)
    },
    300_000,
  )

  it('an unknown encoder, or --embed without --corpus: one line, exit 2', async () => {
    expect(await ragBench(['--corpus', sampleCorpus(), '--embed', 'word2vec', ...where()])).toBe(2)
    expect(stderr.join('')).toMatch(/--embed must be one of use-lite, got "word2vec"/)
    expect(await ragBench(['--embed', 'use-lite', ...where()])).toBe(2)
    expect(stderr.join('')).toMatch(/--embed needs --corpus DIR/)
  })
})
