import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { openUseLite, type TextEncoder, type UseLiteOptions } from '../encoders/use-lite.js'
import { CorpusFormatError } from './corpus-dir.js'

/** The encoders `rag-bench --corpus DIR --embed MODEL` can embed a corpus with. */
export const CORPUS_ENCODERS = ['use-lite'] as const
export type CorpusEncoderName = (typeof CORPUS_ENCODERS)[number]

/** What {@link embedCorpus} did. */
export interface EmbeddedCorpus {
  /** The corpus directory to open: `DIR/embed-<model>/`. */
  dir: string
  model: string
  dim: number
  chunks: number
  /** Queries of `queries.jsonl` re-embedded from their `text`. */
  queries: number
  /** Queries left out: no `text` to embed (their embedding belongs to the other model). */
  queriesWithoutText: number
  /** Texts the model computed in this run, and texts served from the cache beside the corpus. */
  computed: number
  cached: number
  modelSeconds: number
}

/** Options of {@link embedCorpus}. */
export interface EmbedCorpusOptions {
  /** Texts per call into the encoder (and per progress line). Default 256. */
  batch?: number
  /** Progress lines. */
  log?: (line: string) => void
  /** The encoder: default USE-lite with its cache in `DIR/embed-use-lite/cache` (`encoderOptions` passed through). */
  encoder?: TextEncoder
  encoderOptions?: UseLiteOptions
}

/**
 * Embeds a `rag-bench --corpus` directory's texts with a real encoder, beside the corpus: reads
 * `chunks.jsonl` (`content`) and `queries.jsonl` (`text`), and writes `DIR/embed-use-lite/` — the
 * same `chunks.jsonl`, `embeddings.f32` + `meta.json` (512 dimensions, unit length) and
 * `queries.jsonl` with each query's embedding from its text (a query without text is left out: its
 * vector is the other model's). Every vector is cached by text in `DIR/embed-use-lite/cache`, so a
 * rerun computes nothing; the files are written under temporary names and renamed at the end, so a
 * run killed halfway leaves the last complete view (or none), never a mixed one.
 *
 * ### Examples
 * ```ts
 * const embedded = await embedCorpus('/tmp/debian-corpus', 'use-lite', { log: console.error })
 * const corpus = await openCorpusDir(embedded.dir) // 512-d USE-lite vectors of the same chunks
 * ```
 */
export async function embedCorpus(dir: string, model: CorpusEncoderName, options: EmbedCorpusOptions = {}): Promise<EmbeddedCorpus> {
  if (!CORPUS_ENCODERS.includes(model))
    throw new CorpusFormatError(`--embed: unknown encoder "${String(model)}" (${CORPUS_ENCODERS.join(', ')})`)
  const chunksFile = join(dir, 'chunks.jsonl')
  if (!existsSync(chunksFile)) throw new CorpusFormatError(`${dir}: no chunks.jsonl to embed`)
  const out = join(dir, `embed-${model}`)
  mkdirSync(out, { recursive: true })
  const encoder = options.encoder ?? (await openUseLite({ cacheDir: join(out, 'cache'), ...options.encoderOptions }))
  const log = options.log ?? (() => {})
  const batch = options.batch ?? 256
  const texts = readLines(chunksFile).map((line, i) => chunkText(line, i, chunksFile))
  const vectors = join(out, 'embeddings.f32.partial')
  const fd = openSync(vectors, 'w')
  const started = performance.now()
  try {
    for (let at = 0; at < texts.length; at += batch) {
      for (const v of await encoder.embed(texts.slice(at, at + batch))) writeSync(fd, Buffer.from(v.buffer, v.byteOffset, v.byteLength))
      const done = Math.min(texts.length, at + batch)
      const rate = done / Math.max(1e-3, (performance.now() - started) / 1000)
      log(
        `embed ${model}: ${done.toLocaleString('en-US')}/${texts.length.toLocaleString('en-US')} chunks, ${rate.toFixed(1)}/s, ETA ${Math.round((texts.length - done) / rate)} s`,
      )
    }
  } finally {
    closeSync(fd)
  }
  const queries = await embedQueries(dir, out, encoder)
  copyFileSync(chunksFile, join(out, 'chunks.jsonl.partial'))
  writeFileSync(
    join(out, 'meta.json.partial'),
    `${JSON.stringify({ dim: encoder.dimensions, model: encoder.name, chunks: texts.length })}\n`,
  )
  for (const name of ['embeddings.f32', 'chunks.jsonl', 'meta.json', ...(queries.written ? ['queries.jsonl'] : [])])
    renameSync(join(out, `${name}.partial`), join(out, name))
  if (!queries.written) rmSync(join(out, 'queries.jsonl'), { force: true })
  const { computed, cached, modelSeconds } = encoder.stats
  return {
    dir: out,
    model: encoder.name,
    dim: encoder.dimensions,
    chunks: texts.length,
    queries: queries.embedded,
    queriesWithoutText: queries.withoutText,
    computed,
    cached,
    modelSeconds,
  }
}

/** `queries.jsonl`'s lines with `text`, each with the encoder's embedding of it, into `out/queries.jsonl.partial`. */
async function embedQueries(dir: string, out: string, encoder: TextEncoder) {
  const file = join(dir, 'queries.jsonl')
  if (!existsSync(file)) return { written: false, embedded: 0, withoutText: 0 }
  const parsed = readLines(file).map((line, i) => {
    try {
      return JSON.parse(line) as Record<string, unknown>
    } catch {
      throw new CorpusFormatError(`${file}: line ${i + 1} is not JSON`)
    }
  })
  const withText = parsed.filter((q) => typeof q.text === 'string' && q.text.trim() !== '')
  const vectors = await encoder.embed(withText.map((q) => q.text as string))
  const lines = withText.map((q, i) => JSON.stringify({ ...q, embedding: Array.from(vectors[i]!) }))
  writeFileSync(join(out, 'queries.jsonl.partial'), lines.length ? `${lines.join('\n')}\n` : '')
  return { written: true, embedded: withText.length, withoutText: parsed.length - withText.length }
}

function readLines(file: string): string[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
}

function chunkText(line: string, i: number, file: string): string {
  let row: { content?: unknown }
  try {
    row = JSON.parse(line) as { content?: unknown }
  } catch {
    throw new CorpusFormatError(`${file}: line ${i + 1} is not JSON`)
  }
  if (typeof row.content !== 'string') throw new CorpusFormatError(`${file}: line ${i + 1} has no "content" text to embed`)
  return row.content
}
