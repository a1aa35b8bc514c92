import { createReadStream, existsSync, openSync, readSync, closeSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { IngestRow, MetadataFilter } from '../../src/index.js'
import type { TenantSize } from '../synthetic/corpus.js'

/**
 * A corpus of your own for `rag-bench --corpus DIR`:
 *
 * | file | what |
 * |---|---|
 * | `chunks.jsonl` | one chunk a line: `{"tenant": "...", "document": "...", "chunk": 0, "content": "..."}` (optional `"metadata": {...}`) |
 * | `embeddings.npy` | float32, C order, shape `[chunks, dim]`, row i the embedding of line i; or |
 * | `embeddings.f32` + `meta.json` | the same rows as raw little-endian float32, and `{"dim": 384}` |
 * | `queries.jsonl` (optional) | `{"tenant": "...", "embedding": [...], "text": "...", "split": "traffic" \| "eval", "kind": "..."}`; without it queries are sampled from each tenant's chunks. `split` (optional): `traffic` queries are sent before tuning (what the query sample learns from), `eval` ones held out for the measurement; without it they alternate. `filters` (optional): `{"rung": {filter}, …}`, the filters `--filtered` measures the query with |
 */
export interface CorpusDir {
  dir: string
  dim: number
  chunks: number
  /** Tenants by size, largest first. */
  tenants: TenantSize[]
  /** Given queries per tenant, if `queries.jsonl` exists. */
  queries?: Map<string, GivenQuery[]>
  /** The rows in file order, embeddings read alongside. */
  rows(): AsyncGenerator<IngestRow>
}

/** One line of `queries.jsonl`. */
export interface GivenQuery {
  embedding: number[]
  text?: string
  /** Sent before tuning (`traffic`) or held out (`eval`); absent: the lines alternate. */
  split?: 'traffic' | 'eval'
  kind?: string
  /** The document it was drawn from, if given. */
  document?: string
  /** Filters to measure it with, by rung (`rag-bench --corpus DIR --filtered`), if given. */
  filters?: Record<string, MetadataFilter>
}

/** A corpus directory that does not follow the format; the CLI prints the message. */
export class CorpusFormatError extends Error {}

interface ChunkLine {
  tenant: string
  document: string
  chunk: number
  content: string
  metadata?: Record<string, unknown>
}

/** Opens and checks a corpus directory: counts the chunks per tenant and matches them with the embeddings. */
export async function openCorpusDir(dir: string): Promise<CorpusDir> {
  const chunksFile = join(dir, 'chunks.jsonl')
  if (!existsSync(chunksFile)) throw new CorpusFormatError(`${dir}: no chunks.jsonl (see docs/rag-bench.md, "Your own corpus")`)
  const vectors = embeddingsFile(dir)
  const sizes = new Map<string, number>()
  let chunks = 0
  for await (const line of lines(chunksFile)) {
    const row = parseChunk(line, chunks + 1)
    sizes.set(row.tenant, (sizes.get(row.tenant) ?? 0) + 1)
    chunks++
  }
  if (vectors.rows !== chunks) {
    throw new CorpusFormatError(`${dir}: chunks.jsonl has ${chunks} lines but the embeddings hold ${vectors.rows} rows of ${vectors.dim}`)
  }
  const tenants = [...sizes].map(([id, n]) => ({ id, chunks: n })).sort((a, b) => b.chunks - a.chunks || a.id.localeCompare(b.id))
  const queriesFile = join(dir, 'queries.jsonl')
  const queries = existsSync(queriesFile) ? await readQueries(queriesFile, vectors.dim) : undefined
  return {
    dir,
    dim: vectors.dim,
    chunks,
    tenants,
    queries,
    async *rows() {
      const fd = openSync(vectors.path, 'r')
      const rowBytes = vectors.dim * 4
      const batch = Buffer.alloc(rowBytes * 1024)
      let buffered = 0
      let used = 0
      let position = vectors.offset
      try {
        let n = 0
        for await (const line of lines(chunksFile)) {
          if (used === buffered) {
            buffered = readSync(fd, batch, 0, batch.length, position)
            position += buffered
            used = 0
          }
          const embedding = new Float32Array(vectors.dim)
          for (let d = 0; d < vectors.dim; d++) embedding[d] = batch.readFloatLE(used + d * 4)
          used += rowBytes
          const row = parseChunk(line, ++n)
          yield {
            tenantId: row.tenant,
            documentId: row.document,
            chunkIndex: row.chunk,
            content: row.content,
            metadata: row.metadata,
            embedding,
          }
        }
      } finally {
        closeSync(fd)
      }
    },
  }
}

/** The given queries of `queries.jsonl`, by tenant. */
async function readQueries(queriesFile: string, dim: number): Promise<Map<string, GivenQuery[]>> {
  const queries = new Map<string, GivenQuery[]>()
  let n = 0
  for await (const line of lines(queriesFile)) {
    n++
    const q = JSON.parse(line) as {
      tenant?: unknown
      embedding?: unknown
      text?: unknown
      split?: unknown
      kind?: unknown
      document?: unknown
      filters?: unknown
    }
    if (
      typeof q.tenant !== 'string' ||
      !Array.isArray(q.embedding) ||
      q.embedding.length !== dim ||
      (q.split !== undefined && q.split !== 'traffic' && q.split !== 'eval') ||
      (q.filters !== undefined && (typeof q.filters !== 'object' || q.filters === null || Array.isArray(q.filters)))
    ) {
      throw new CorpusFormatError(
        `${queriesFile} line ${n}: expected {"tenant": string, "embedding": [${dim} numbers], "text"?: string, "split"?: "traffic" | "eval", "filters"?: {"rung": filter}}`,
      )
    }
    const list = queries.get(q.tenant) ?? []
    list.push({
      embedding: q.embedding as number[],
      text: typeof q.text === 'string' ? q.text : undefined,
      ...(q.split ? { split: q.split as 'traffic' | 'eval' } : {}),
      ...(typeof q.kind === 'string' ? { kind: q.kind } : {}),
      ...(typeof q.document === 'string' ? { document: q.document } : {}),
      ...(q.filters ? { filters: q.filters as Record<string, MetadataFilter> } : {}),
    })
    queries.set(q.tenant, list)
  }
  return queries
}

function parseChunk(line: string, n: number): ChunkLine {
  let row: Partial<ChunkLine>
  try {
    row = JSON.parse(line) as Partial<ChunkLine>
  } catch {
    throw new CorpusFormatError(`chunks.jsonl line ${n} is not JSON`)
  }
  if (
    typeof row.tenant !== 'string' ||
    typeof row.document !== 'string' ||
    !Number.isInteger(row.chunk) ||
    typeof row.content !== 'string'
  ) {
    throw new CorpusFormatError(
      `chunks.jsonl line ${n}: expected {"tenant": string, "document": string, "chunk": integer, "content": string}`,
    )
  }
  return row as ChunkLine
}

async function* lines(file: string): AsyncGenerator<string> {
  const reader = createInterface({ input: createReadStream(file), crlfDelay: Infinity })
  for await (const line of reader) if (line.trim()) yield line
}

/** Where the float32 rows are: an .npy (header parsed) or a raw .f32 with meta.json. */
function embeddingsFile(dir: string): { path: string; offset: number; rows: number; dim: number } {
  const npy = join(dir, 'embeddings.npy')
  if (existsSync(npy)) {
    const head = Buffer.alloc(10)
    const fd = openSync(npy, 'r')
    readSync(fd, head, 0, 10, 0)
    if (head.toString('latin1', 0, 6) !== '\x93NUMPY') throw new CorpusFormatError(`${npy} is not an .npy file`)
    const major = head[6]!
    const headerLength =
      major === 1
        ? head.readUInt16LE(8)
        : (() => {
            const b = Buffer.alloc(4)
            readSync(fd, b, 0, 4, 8)
            return b.readUInt32LE(0)
          })()
    const start = major === 1 ? 10 : 12
    const header = Buffer.alloc(headerLength)
    readSync(fd, header, 0, headerLength, start)
    closeSync(fd)
    const text = header.toString('latin1')
    const shape = /'shape':\s*\((\d+),\s*(\d+)\)/.exec(text)
    if (!/'descr':\s*'<f4'/.test(text) || /'fortran_order':\s*True/.test(text) || !shape) {
      throw new CorpusFormatError(`${npy}: expected little-endian float32 ('<f4'), C order, shape (chunks, dim); header ${text.trim()}`)
    }
    return { path: npy, offset: start + headerLength, rows: Number(shape[1]), dim: Number(shape[2]) }
  }
  const raw = join(dir, 'embeddings.f32')
  const meta = join(dir, 'meta.json')
  if (!existsSync(raw) || !existsSync(meta)) throw new CorpusFormatError(`${dir}: no embeddings.npy, nor embeddings.f32 with meta.json`)
  const dim = (JSON.parse(readFileSync(meta, 'utf8')) as { dim?: unknown }).dim
  if (!Number.isInteger(dim) || (dim as number) < 1) throw new CorpusFormatError(`${meta}: expected {"dim": integer}`)
  const bytes = statSync(raw).size
  if (bytes % ((dim as number) * 4) !== 0) throw new CorpusFormatError(`${raw}: ${bytes} bytes is not a whole number of ${dim}-float rows`)
  return { path: raw, offset: 0, rows: bytes / ((dim as number) * 4), dim: dim as number }
}
