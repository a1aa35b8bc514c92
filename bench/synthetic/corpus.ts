import type { IngestRow } from '../../src/index.js'
import { normalize, randomUnitVector, seededRandom, type Random } from './random.js'

/** A tenant and how many chunks it has. */
export interface TenantSize {
  id: string
  chunks: number
}

/** What a synthetic RAG corpus looks like. */
export interface CorpusSpec {
  seed: string | number
  dim: number
  tenants: readonly TenantSize[]
  /** Chunks per document. Default 20. */
  chunksPerDoc?: number
  /**
   * `shared`: every tenant draws from one pool of topics (the realistic, hard case: every tenant
   * has invoices and contracts); `per-tenant`: each tenant has topics of its own.
   */
  topics?: 'shared' | 'per-tenant'
  /** Topics in the shared pool. Default 32. */
  sharedTopics?: number
  /** Topics each tenant uses. Default 8. */
  topicsPerTenant?: number
  /**
   * How far documents spread from their topic's centroid, within the topic's subspace. Default 0.75.
   * Chunks spread a third of that around their document, plus a little isotropic noise.
   */
  noise?: number
  /** Directions a topic varies along (its intrinsic dimension). Default 12. */
  topicRank?: number
  /** Prefix of document ids after the tenant (`t1/doc-0`). Default `doc`. */
  documentPrefix?: string
  /**
   * Share of chunks that are boilerplate: near-copies (same text, the vector moved by 0.002) of a
   * few passages every tenant repeats (licence, footer), some of them shared by all tenants — real
   * text has them, and they make ids tie. Default 0.
   */
  duplicates?: number
  /**
   * Zipf exponent of how a tenant's documents spread over its topics: 0 (default) uniform, 1 a
   * heavy head (its first topic takes the most documents), as real collections are.
   */
  topicSkew?: number
}

const WORDS = [
  'invoice',
  'contract',
  'payment',
  'renewal',
  'clause',
  'delivery',
  'refund',
  'audit',
  'policy',
  'shipment',
  'warranty',
  'license',
]
const SYLLABLES = ['ka', 'lo', 'mi', 'ren', 'tu', 'sa', 'vel', 'dor', 'pi', 'nex', 'bra', 'qui', 'zon', 'fe', 'gu', 'lin']
/** Words a topic uses: real text has a large vocabulary, so a two-word query matches few chunks. */
const WORDS_PER_TOPIC = 80

/** The k-th synthetic word: three syllables, e.g. `kalomi`; 4,096 distinct words. */
function word(k: number): string {
  const n = SYLLABLES.length
  return SYLLABLES[k % n]! + SYLLABLES[Math.floor(k / n) % n]! + SYLLABLES[Math.floor(k / n / n) % n]!
}

/** A word of topic `t`, skewed towards the topic's first words (Zipf-like). */
function topicWord(random: Random, t: number): string {
  return word(t * WORDS_PER_TOPIC + Math.floor(random.next() ** 2 * WORDS_PER_TOPIC))
}

/**
 * A topic: a centroid and a few directions it varies along. Real text embeddings have a low
 * intrinsic dimension — documents about invoices differ from each other in a handful of ways,
 * not in all 384 — so points spread in the topic's subspace, not isotropically (isotropic noise in
 * 384 dimensions is uniform-random data, HNSW's worst case, which no corpus looks like).
 */
interface Topic {
  id: number
  centroid: Float32Array
  basis: Float32Array[]
}

function makeTopic(random: Random, dim: number, rank: number, id: number): Topic {
  return { id, centroid: randomUnitVector(random, dim), basis: Array.from({ length: rank }, () => randomUnitVector(random, dim)) }
}

let calls = 0

/**
 * How many times this thread called `generateCorpus`, `queryVectors` or `queryTexts`: what a load
 * step must not change (its inputs are made before the clock starts; each worker thread counts its own).
 *
 * ### Examples
 * ```ts
 * const before = generatorCalls(); await runLoadStep(inThisThread(ctx), observer, 4, 15, 3); generatorCalls() === before
 * ```
 */
export function generatorCalls(): number {
  return calls
}

const pools = new Map<string, Topic[]>()

/**
 * The shared topics of a spec, built once per seed and shape (they are read, never changed):
 * rebuilding them cost ~16 ms per call, and `queryVectors` made them for every tenant.
 */
function topicPool(spec: CorpusSpec): Topic[] {
  const key = `${spec.seed}|${spec.dim}|${spec.sharedTopics ?? 32}|${spec.topicRank ?? 12}`
  let pool = pools.get(key)
  if (!pool) {
    const random = seededRandom(`${spec.seed}:topics`)
    pool = Array.from({ length: spec.sharedTopics ?? 32 }, (_, i) => makeTopic(random, spec.dim, spec.topicRank ?? 12, i))
    if (pools.size >= 8) pools.delete(pools.keys().next().value!)
    pools.set(key, pool)
  }
  return pool
}

function tenantTopics(spec: CorpusSpec, tenant: string, pool: Topic[]): Topic[] {
  const random = seededRandom(`${spec.seed}:tenant-topics:${tenant}`)
  const n = spec.topicsPerTenant ?? 8
  if ((spec.topics ?? 'shared') === 'per-tenant') {
    // Own topics, own words: ids past the shared pool's, offset by a hash of the tenant.
    const base = 1000 + (Math.abs(hashCode(tenant)) % 10_000) * n
    return Array.from({ length: n }, (_, i) => makeTopic(random, spec.dim, spec.topicRank ?? 12, base + i))
  }
  return Array.from({ length: n }, () => pool[random.int(pool.length)]!)
}

function hashCode(text: string): number {
  let h = 0
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0
  return h
}

/** `center` moved by `spread` within the topic's subspace, plus `isotropic` noise, normalised. */
function around(random: Random, center: Float32Array, topic: Topic, spread: number, isotropic: number): Float32Array {
  const v = Float32Array.from(center)
  const scale = spread / Math.sqrt(topic.basis.length)
  for (const direction of topic.basis) {
    const a = random.gaussian() * scale
    for (let i = 0; i < v.length; i++) v[i]! += a * direction[i]!
  }
  if (isotropic > 0) {
    const jitter = randomUnitVector(random, v.length)
    for (let i = 0; i < v.length; i++) v[i]! += isotropic * jitter[i]!
  }
  return normalize(v)
}

/**
 * Streams a seeded corpus: clustered, normalised embeddings — a few topics per tenant (centroid +
 * subspace), documents spread within a topic, chunks near their document. Same spec, same rows, in
 * the same order; nothing is held in memory but the topics.
 *
 * ### Examples
 * ```ts
 * for (const row of generateCorpus({ seed: 42, dim: 384, tenants: [{ id: 't1', chunks: 1000 }] })) ...
 * ```
 */
export function* generateCorpus(spec: CorpusSpec): Generator<IngestRow> {
  calls++
  const pool = topicPool(spec)
  const perDoc = spec.chunksPerDoc ?? 20
  const noise = spec.noise ?? 0.75
  const duplicates = spec.duplicates ?? 0
  const shared = boilerplate(spec, 'all tenants', pool, 4)
  for (const tenant of spec.tenants) {
    const topics = tenantTopics(spec, tenant.id, pool)
    const random = seededRandom(`${spec.seed}:chunks:${tenant.id}`)
    const own = duplicates > 0 ? [...shared, ...boilerplate(spec, tenant.id, topics, 8)] : []
    const pickTopic = zipfPicker(topics.length, spec.topicSkew ?? 0)
    let topic = 0
    let document = topics[0]!.centroid
    for (let i = 0; i < tenant.chunks; i++) {
      const chunkIndex = i % perDoc
      if (chunkIndex === 0) {
        topic = pickTopic(random)
        document = around(random, topics[topic]!.centroid, topics[topic]!, noise, 0)
      }
      if (duplicates > 0 && random.next() < duplicates) {
        const passage = own[random.int(own.length)]!
        yield {
          tenantId: tenant.id,
          documentId: `${tenant.id}/${spec.documentPrefix ?? 'doc'}-${Math.floor(i / perDoc)}`,
          chunkIndex,
          content: passage.content,
          metadata: { topic: passage.topic, kind: 'boilerplate' },
          embedding: around(random, passage.vector, passage.topicOf, 0, 0.002),
        }
        continue
      }
      const kind = WORDS[(topic * 7 + chunkIndex) % WORDS.length]!
      const words = Array.from({ length: 8 }, () => topicWord(random, topics[topic]!.id)).join(' ')
      yield {
        tenantId: tenant.id,
        documentId: `${tenant.id}/${spec.documentPrefix ?? 'doc'}-${Math.floor(i / perDoc)}`,
        chunkIndex,
        content: `${kind} ${words} (note ${i} of ${tenant.id})`,
        metadata: { topic, kind },
        embedding: around(random, document, topics[topic]!, noise / 3, 0.05),
      }
    }
  }
}

/** A few passages repeated as boilerplate: text and a vector near one of `topics`. */
function boilerplate(
  spec: CorpusSpec,
  owner: string,
  topics: Topic[],
  n: number,
): Array<{ content: string; vector: Float32Array; topic: number; topicOf: Topic }> {
  const random = seededRandom(`${spec.seed}:boilerplate:${owner}`)
  return Array.from({ length: n }, (_, k) => {
    const topicOf = topics[random.int(topics.length)]!
    return {
      content: `standard terms ${k} of ${owner}: ${Array.from({ length: 8 }, () => topicWord(random, topicOf.id)).join(' ')}`,
      vector: around(random, topicOf.centroid, topicOf, spec.noise ?? 0.75, 0),
      topic: topicOf.id,
      topicOf,
    }
  })
}

/** Picks an index in [0, n) with Zipf weights 1/(i+1)^s (uniform when s = 0). */
function zipfPicker(n: number, s: number): (random: Random) => number {
  if (s === 0) return (random) => random.int(n)
  const weights = Array.from({ length: n }, (_, i) => 1 / (i + 1) ** s)
  const total = weights.reduce((a, b) => a + b, 0)
  return (random) => {
    let x = random.next() * total
    for (let i = 0; i < n; i++) if ((x -= weights[i]!) < 0) return i
    return n - 1
  }
}

/**
 * Seeded query vectors for a tenant: near its own topics, like a user's question.
 *
 * ### Examples
 * ```ts
 * const queries = queryVectors(spec, 't1', 50)
 * ```
 */
export function queryVectors(spec: CorpusSpec, tenant: string, count: number): Float32Array[] {
  calls++
  const topics = tenantTopics(spec, tenant, topicPool(spec))
  const random = seededRandom(`${spec.seed}:queries:${tenant}`)
  return Array.from({ length: count }, () => {
    const topic = topics[random.int(topics.length)]!
    return around(random, topic.centroid, topic, spec.noise ?? 0.75, 0.05)
  })
}

/**
 * Seeded query texts for a tenant: two words of one of its topics, like a user's keywords.
 *
 * ### Examples
 * ```ts
 * queryTexts(spec, 't1', 2) // ['kalomi renpisa', 'tudorve kaqui']
 * ```
 */
export function queryTexts(spec: CorpusSpec, tenant: string, count: number): string[] {
  calls++
  const topics = tenantTopics(spec, tenant, topicPool(spec))
  const random = seededRandom(`${spec.seed}:query-texts:${tenant}`)
  return Array.from({ length: count }, () => {
    const topic = topics[random.int(topics.length)]!
    return `${topicWord(random, topic.id)} ${topicWord(random, topic.id)}`
  })
}

/**
 * Seeded queries unlike the tenant's chunks: each blends two of its topics' centroids with random
 * weights, moved by isotropic noise — a question that spans two subjects sits between the
 * clusters, near no stored chunk (where an HNSW graph built for the data serves it worst).
 *
 * ### Examples
 * ```ts
 * const hard = offTopicQueries(spec, 't1', 50)
 * ```
 */
export function offTopicQueries(spec: CorpusSpec, tenant: string, count: number): Float32Array[] {
  calls++
  const topics = tenantTopics(spec, tenant, topicPool(spec))
  const random = seededRandom(`${spec.seed}:off-topic:${tenant}`)
  return Array.from({ length: count }, () => {
    const a = topics[random.int(topics.length)]!
    const b = topics[random.int(topics.length)]!
    const w = 0.3 + 0.4 * random.next()
    const v = new Float32Array(spec.dim)
    const jitter = randomUnitVector(random, spec.dim)
    for (let i = 0; i < v.length; i++) v[i] = w * a.centroid[i]! + (1 - w) * b.centroid[i]! + 0.35 * jitter[i]!
    return normalize(v)
  })
}
