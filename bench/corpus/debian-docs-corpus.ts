/**
 * Builds a real-text corpus for `rag-bench --corpus` from the documentation Debian installs on
 * this machine (/usr/share/doc, English man pages), embedded offline — no model download:
 * TF-IDF of word unigrams and bigrams (sublinear tf, idf from the corpus) hashed into 2^14
 * buckets, then a seeded Gaussian random projection to `--dim` dimensions, L2-normalised (a
 * Johnson–Lindenstrauss projection of the TF-IDF geometry). Real text brings what synthetic data
 * lacks: boilerplate repeated across packages (licences, changelog lines), so exact and near
 * duplicates, and uneven topics.
 *
 *   npx tsx bench/corpus/debian-docs-corpus.ts --out /tmp/debian-corpus [--dim 384] [--large 15000,12000,10000] [--small 150x90] [--queries 600]
 *
 * Besides the chunks it writes `queries.jsonl`: short queries from each tenant's own documents
 * (man pages' NAME lines, section titles, sentence windows), embedded by the same model, split
 * into traffic and held-out evaluation (bench/corpus/short-queries.ts).
 *
 * Each chunk carries `metadata` (bench/corpus/corpus-metadata.ts): `source` (its package) and
 * `section` (man section, or the kind of /usr/share/doc file), which follow the content, and
 * `bucket` (0..999) and `year`, seeded hashes of its id, which do not. Each query carries its
 * `document` and `filters`: one per rung of the real-text ladder (its own source and section,
 * another of the tenant's, bucket ranges of 1-50%: below a bound and a window at the query's own offset), for `rag-bench --corpus DIR --filtered`.
 */
import { readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { Command } from 'commander'
import type { MetadataFilter } from '../../src/index.js'
import { seededRandom } from '../../src/bench-kit.js'
import { chunkMetadata, packageOwners, queryFilters, type ChunkMetadata } from './corpus-metadata.js'
import { shortQueries, splitQueries, type ShortQuery, type ShortQueryKind } from './short-queries.js'

const BUCKETS = 1 << 14
const CHUNK = 700

interface Chunk {
  tenant: string
  document: string
  chunk: number
  content: string
  metadata?: ChunkMetadata
}

/** Every readable text file under `root` (gzip opened), in a stable order. */
function* files(root: string): Generator<string> {
  let entries: string[]
  try {
    entries = readdirSync(root).sort()
  } catch {
    return
  }
  for (const name of entries) {
    const path = join(root, name)
    let st
    try {
      st = statSync(path)
    } catch {
      continue
    }
    if (st.isDirectory()) yield* files(path)
    else if (st.isFile() && st.size > 200 && st.size < 4_000_000) yield path
  }
}

function readText(path: string): string | undefined {
  try {
    let data = readFileSync(path)
    if (path.endsWith('.gz')) data = gunzipSync(data)
    if (data.includes(0)) return undefined
    const text = data.toString('utf8')
    return /\/man\//.test(path) ? fromTroff(text) : text
  } catch {
    return undefined
  }
}

/** Man page source to plain text, roughly: macros dropped, font and character escapes removed. */
function fromTroff(text: string): string {
  return text
    .split('\n')
    .filter((l) => !l.startsWith('.\\"') && !l.startsWith('\'\\"'))
    .map((l) => (l.startsWith('.') ? l.replace(/^\.\S*\s?/, '') : l))
    .join('\n')
    .replace(/\\f[BIRP]|\\f\(..|\\s[+-]?\d|\\&|\\\(..|\\e/g, '')
    .replace(/\\-/g, '-')
}

/** ~700-character chunks at word boundaries; short tails are dropped. */
function chunksOf(text: string): string[] {
  const words = text.replace(/\s+/g, ' ').trim().split(' ')
  const out: string[] = []
  let current = ''
  for (const w of words) {
    if (current.length + w.length + 1 > CHUNK && current.length > 0) {
      out.push(current)
      current = ''
    }
    current = current ? `${current} ${w}` : w
  }
  if (current.length >= 200) out.push(current)
  return out
}

function bucketsOf(content: string): Map<number, number> {
  const tokens = content.toLowerCase().match(/[a-z0-9_]{2,}/g) ?? []
  const tf = new Map<number, number>()
  const add = (term: string) => {
    const h = createHash('md5').update(term).digest().readUInt32LE(0) % BUCKETS
    tf.set(h, (tf.get(h) ?? 0) + 1)
  }
  for (let i = 0; i < tokens.length; i++) {
    add(tokens[i]!)
    if (i > 0) add(`${tokens[i - 1]} ${tokens[i]}`)
  }
  return tf
}

async function main(): Promise<void> {
  const o = new Command('debian-docs-corpus')
    .requiredOption('--out <dir>', 'where to write chunks.jsonl, embeddings.npy and meta.json')
    .option('--dim <n>', 'embedding dimensions', '384')
    .option('--large <list>', 'chunks of each large tenant', '15000,12000,10000')
    .option('--small <NxM>', 'small tenants: count x chunks each', '150x90')
    .option('--queries <n>', 'short queries per large tenant (half traffic, half held-out evaluation)', '600')
    .option('--seed <s>', 'seed of the projection and of the file order', 'debian')
    .parse(process.argv)
    .opts<{ out: string; dim: string; large: string; small: string; seed: string; queries: string }>()
  const dim = Number(o.dim)
  const [smallCount, smallSize] = o.small.split('x').map(Number) as [number, number]
  const targets = [
    ...o.large
      .split(',')
      .map(Number)
      .map((n, i) => ({ tenant: `large-${String.fromCharCode(97 + i)}`, want: n, cap: Infinity })),
    ...Array.from({ length: smallCount }, (_, i) => ({ tenant: `small-${i}`, want: smallSize, cap: Math.ceil(smallSize / 2) })),
  ]
  const owners = packageOwners()
  const chunks = collectChunks(targets, o.seed).map((c) => ({ ...c, metadata: chunkMetadata(c, owners, o.seed) }))
  process.stderr.write(
    `[corpus] ${chunks.length} chunks from ${new Set(chunks.map((c) => c.document)).size} documents, ${targets.length} tenants\n`,
  )
  const model = tfidfModel(chunks, dim, o.seed)
  const out = model.embed(chunks.map((c) => c.content))
  mkdirSync(o.out, { recursive: true })
  writeFileSync(join(o.out, 'chunks.jsonl'), chunks.map((c) => JSON.stringify(c)).join('\n') + '\n')
  writeNpy(join(o.out, 'embeddings.npy'), out, chunks.length, dim)
  const queries = tenantQueries(chunks, model, dim, o.seed, Number(o.queries))
  writeFileSync(join(o.out, 'queries.jsonl'), queries.map((q) => JSON.stringify(q)).join('\n') + '\n')
  const byKind = (split: string) =>
    Object.fromEntries(['name', 'title', 'sentence'].map((k) => [k, queries.filter((q) => q.split === split && q.kind === k).length]))
  const duplicates = chunks.length - new Set(chunks.map((c) => c.content)).size
  writeFileSync(
    join(o.out, 'meta.json'),
    JSON.stringify(
      {
        dim,
        chunks: chunks.length,
        tenants: Object.fromEntries(targets.slice(0, 3).map((t) => [t.tenant, chunks.filter((c) => c.tenant === t.tenant).length])),
        smallTenants: smallCount,
        exactDuplicateChunks: duplicates,
        metadata:
          "source: the package (the /usr/share/doc/<pkg> directory, or the man page's owner in dpkg's lists, else its name); section: the man section 1-8, or copyright/changelog/news/readme/doc; bucket 0-999 and year 2005-2024: seeded hashes of the chunk id (independent of the text)",
        metadataCounts: metadataCounts(
          chunks,
          targets.slice(0, 3).map((t) => t.tenant),
        ),
        embedding: `TF-IDF of word unigrams+bigrams hashed into ${BUCKETS} buckets (sublinear tf, corpus idf), Gaussian random projection to ${dim}, L2-normalised; seed ${o.seed}`,
        sources: '/usr/share/doc and English man pages (sections 1-8) of this machine',
        queries: {
          file: 'queries.jsonl: short queries from each tenant\'s own documents (NAME lines, section titles, 6-12-word sentence windows), embedded by the same model; split "traffic" (sent before tuning) and "eval" (held out)',
          traffic: byKind('traffic'),
          eval: byKind('eval'),
          filters:
            "each query's \"filters\": own-source and own-section (its document's), other-source and other-section (another value of the tenant, drawn by chunks), bucket-1/10/33/50 (bucket below that share of 0-999, the same for every query), window-1/10/33/50 (a window of that share at the query's own seeded offset)",
        },
      },
      null,
      2,
    ) + '\n',
  )
  process.stderr.write(`[corpus] wrote ${o.out}: ${chunks.length} × ${dim}, ${duplicates} exact duplicate chunks\n`)
}

/** Chunks of English man pages and /usr/share/doc (in a seeded order), filling each tenant in turn. */
function collectChunks(targets: Array<{ tenant: string; want: number; cap: number }>, seed: string): Chunk[] {
  const paths = [...files('/usr/share/man')].filter((p) => /\/man\/man[1-8]\//.test(p))
  paths.push(...files('/usr/share/doc'))
  const order = (p: string) => createHash('md5').update(`${seed}:${p}`).digest('hex')
  paths.sort((a, b) => order(a).localeCompare(order(b)))
  const chunks: Chunk[] = []
  let target = 0
  let have = 0
  for (const path of paths) {
    if (target >= targets.length) break
    const text = readText(path)
    if (!text) continue
    const t = targets[target]!
    const parts = chunksOf(text).slice(0, Math.min(t.cap, t.want - have))
    const document = path.replace(/^\/usr\/share\//, '')
    parts.forEach((content, chunk) => chunks.push({ tenant: t.tenant, document, chunk, content }))
    have += parts.length
    if (have >= t.want) {
      target++
      have = 0
    }
  }
  return chunks
}

/**
 * TF-IDF over hashed unigrams + bigrams (idf from the chunks), then a seeded Gaussian projection to
 * `dim`, L2-normalised: `embed` applies the same model to any text (the chunks, the queries).
 */
function tfidfModel(chunks: readonly Chunk[], dim: number, seed: string): { embed(texts: readonly string[]): Float32Array } {
  const df = new Float64Array(BUCKETS)
  for (const c of chunks) for (const b of bucketsOf(c.content).keys()) df[b]!++
  const idf = Float64Array.from(df, (d) => Math.log((chunks.length + 1) / (d + 1)) + 1)
  const random = seededRandom(`${seed}:projection`)
  const projection = new Float32Array(BUCKETS * dim)
  for (let i = 0; i < projection.length; i++) projection[i] = random.gaussian()
  return {
    embed(texts) {
      const out = new Float32Array(texts.length * dim)
      texts.forEach((text, row) => {
        const v = out.subarray(row * dim, (row + 1) * dim)
        for (const [b, count] of bucketsOf(text)) {
          const w = (1 + Math.log(count)) * idf[b]!
          const p = projection.subarray(b * dim, (b + 1) * dim)
          for (let d = 0; d < dim; d++) v[d]! += w * p[d]!
        }
        let norm = 0
        for (let d = 0; d < dim; d++) norm += v[d]! * v[d]!
        norm = Math.sqrt(norm) || 1
        for (let d = 0; d < dim; d++) v[d]! /= norm
      })
      return out
    },
  }
}

/**
 * Short queries per tenant from its own documents (shortQueries: NAME lines, section titles,
 * sentence windows), split into traffic and held-out evaluation, embedded by the chunks' model.
 */
function tenantQueries(
  chunks: readonly Chunk[],
  model: { embed(texts: readonly string[]): Float32Array },
  dim: number,
  seed: string,
  perLarge: number,
): Array<{
  tenant: string
  kind: ShortQueryKind
  split: 'traffic' | 'eval'
  text: string
  document: string
  filters: Record<string, MetadataFilter>
  embedding: number[]
}> {
  const documents = new Map<string, Set<string>>()
  for (const c of chunks) (documents.get(c.tenant) ?? documents.set(c.tenant, new Set()).get(c.tenant)!).add(c.document)
  const ownMeta = new Map(chunks.map((c) => [`${c.tenant}\u0000${c.document}`, c.metadata!]))
  const counts = new Map<string, { sources: Map<string, number>; sections: Map<string, number> }>()
  for (const c of chunks) {
    const t = counts.get(c.tenant) ?? counts.set(c.tenant, { sources: new Map(), sections: new Map() }).get(c.tenant)!
    t.sources.set(c.metadata!.source, (t.sources.get(c.metadata!.source) ?? 0) + 1)
    t.sections.set(c.metadata!.section, (t.sections.get(c.metadata!.section) ?? 0) + 1)
  }
  const out: ReturnType<typeof tenantQueries> = []
  for (const [tenant, docs] of documents) {
    const want = tenant.startsWith('large-') ? perLarge : 8
    const drawn: Array<ShortQuery & { document: string }> = []
    const perDocument = Math.max(2, Math.ceil((want * 1.3) / docs.size))
    for (const document of docs) {
      const text = readText(`/usr/share/${document}`)
      if (text)
        drawn.push(
          ...shortQueries(text, document, seed, perDocument)
            .filter((q) => (q.text.match(/[a-z0-9_]{2,}/gi) ?? []).length >= 2)
            .map((q) => ({ ...q, document })),
        )
    }
    const { traffic, evaluation } = splitQueries(drawn, `${seed}:${tenant}`)
    const picked = [
      ...traffic.slice(0, Math.ceil(want / 2)).map((q) => ({ ...q, split: 'traffic' as const })),
      ...evaluation.slice(0, Math.floor(want / 2)).map((q) => ({ ...q, split: 'eval' as const })),
    ]
    const vectors = model.embed(picked.map((q) => q.text))
    picked.forEach((q, i) => {
      const own = ownMeta.get(`${tenant}\u0000${q.document}`)!
      const filters = queryFilters(own, counts.get(tenant)!, `${seed}:${tenant}:${q.split}:${i}`)
      const embedding = Array.from(vectors.subarray(i * dim, (i + 1) * dim), (x) => Math.round(x * 1e6) / 1e6)
      out.push({ tenant, ...q, filters, embedding })
    })
  }
  return out
}

/** Chunks per source and per section of each named tenant, the largest 20 of each (meta.json). */
function metadataCounts(chunks: readonly Chunk[], tenants: readonly string[]) {
  const top = (values: string[]) => {
    const counts = new Map<string, number>()
    for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1)
    const sorted = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    return { distinct: counts.size, largest: Object.fromEntries(sorted.slice(0, 20)) }
  }
  return Object.fromEntries(
    tenants.map((t) => {
      const own = chunks.filter((c) => c.tenant === t)
      return [t, { sources: top(own.map((c) => c.metadata!.source)), sections: top(own.map((c) => c.metadata!.section)) }]
    }),
  )
}

/** A float32 matrix as a NumPy .npy file (format 1.0). */
function writeNpy(path: string, data: Float32Array, rows: number, dim: number): void {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${dim}), }`
  header = header.padEnd(Math.ceil((header.length + 11) / 64) * 64 - 11, ' ') + '\n'
  const prefix = Buffer.from([0x93, ...Buffer.from('NUMPY'), 1, 0, 0, 0])
  prefix.writeUInt16LE(header.length, 8)
  writeFileSync(path, Buffer.concat([prefix, Buffer.from(header, 'latin1'), Buffer.from(data.buffer)]))
}

await main()
