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
  /** Noise added to a topic centroid (relative length of a random unit vector). Default 0.75. */
  noise?: number
  /** Prefix of document ids after the tenant (`t1/doc-0`). Default `doc`. */
  documentPrefix?: string
}

const WORDS = ['invoice', 'contract', 'payment', 'renewal', 'clause', 'delivery', 'refund', 'audit', 'policy', 'shipment', 'warranty', 'license']

function topicPool(spec: CorpusSpec): Float32Array[] {
  const random = seededRandom(`${spec.seed}:topics`)
  return Array.from({ length: spec.sharedTopics ?? 32 }, () => randomUnitVector(random, spec.dim))
}

function tenantTopics(spec: CorpusSpec, tenant: string, pool: Float32Array[]): Float32Array[] {
  const random = seededRandom(`${spec.seed}:tenant-topics:${tenant}`)
  const n = spec.topicsPerTenant ?? 8
  if ((spec.topics ?? 'shared') === 'per-tenant') return Array.from({ length: n }, () => randomUnitVector(random, spec.dim))
  return Array.from({ length: n }, () => pool[random.int(pool.length)]!)
}

function nearTopic(random: Random, topic: Float32Array, noise: number): Float32Array {
  const jitter = randomUnitVector(random, topic.length)
  const v = new Float32Array(topic.length)
  for (let i = 0; i < v.length; i++) v[i] = topic[i]! + noise * jitter[i]!
  return normalize(v)
}

/**
 * Streams a seeded corpus: clustered, normalised embeddings (a few topic centroids per tenant plus
 * noise — uniform random vectors are HNSW's worst case and no corpus looks like that). Same spec,
 * same rows, in the same order; nothing is held in memory but the topic centroids.
 *
 * ### Examples
 * ```ts
 * for (const row of generateCorpus({ seed: 42, dim: 384, tenants: [{ id: 't1', chunks: 1000 }] })) ...
 * ```
 */
export function* generateCorpus(spec: CorpusSpec): Generator<IngestRow> {
  const pool = topicPool(spec)
  const perDoc = spec.chunksPerDoc ?? 20
  const noise = spec.noise ?? 0.75
  for (const tenant of spec.tenants) {
    const topics = tenantTopics(spec, tenant.id, pool)
    const random = seededRandom(`${spec.seed}:chunks:${tenant.id}`)
    let topic = 0
    for (let i = 0; i < tenant.chunks; i++) {
      const chunkIndex = i % perDoc
      if (chunkIndex === 0) topic = random.int(topics.length)
      const word = WORDS[(topic * 7 + chunkIndex) % WORDS.length]!
      yield {
        tenantId: tenant.id,
        documentId: `${tenant.id}/${spec.documentPrefix ?? 'doc'}-${Math.floor(i / perDoc)}`,
        chunkIndex,
        content: `${word} ${WORDS[random.int(WORDS.length)]} note ${i} of ${tenant.id} about topic ${topic}`,
        metadata: { topic, kind: word },
        embedding: nearTopic(random, topics[topic]!, noise),
      }
    }
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
  const topics = tenantTopics(spec, tenant, topicPool(spec))
  const random = seededRandom(`${spec.seed}:queries:${tenant}`)
  return Array.from({ length: count }, () => nearTopic(random, topics[random.int(topics.length)]!, spec.noise ?? 0.75))
}
