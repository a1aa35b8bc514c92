import type { ChunkInput, Database, PgVectorStore } from '../../../src/index.js'
import { seededRandom } from '../../../src/bench-kit.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec, type TenantSize } from '../../synthetic/corpus.js'
import { ACL_GROUPS, aclGroup, type CorpusTruth } from './corpus-truth.js'
import type { LoadOperation } from './ladder-analysis.js'
import type { LoadConsistency, LoadContext } from './load-step.js'

/**
 * Everything the clients send, made before the first step: each tenant's query vectors and texts
 * (eight each; four past 1,000 tenants) and a pool of replacement chunks' vectors. The vectors sit
 * in shared memory, so every worker thread reads the same ones without a copy.
 */
export interface LoadInputs {
  dim: number
  chunksPerDoc: number
  tenants: readonly TenantSize[]
  perTenant: number
  /** Float32: tenant (in `tenants` order) × query × dimension. */
  queryVectors: SharedArrayBuffer
  /** Tenant × query. */
  queryTexts: string[]
  /** Float32: 64 documents × `chunksPerDoc` chunks × dimension. */
  replacementVectors: SharedArrayBuffer
}

/** How many replacement documents' vectors the inputs hold (replaces cycle through them). */
const REPLACEMENT_DOCUMENTS = 64

/**
 * Makes the inputs of a load over `spec`'s corpus (the only generation of the run besides seeding:
 * the generator counts its calls, `generatorCalls()`, and a test holds every step to zero).
 *
 * ### Examples
 * ```ts
 * const inputs = makeLoadInputs(spec)
 * ```
 */
export function makeLoadInputs(spec: CorpusSpec & { chunksPerDoc: number }): LoadInputs {
  const perTenant = spec.tenants.length > 1000 ? 4 : 8
  const queries = new Float32Array(new SharedArrayBuffer(4 * spec.tenants.length * perTenant * spec.dim))
  const texts: string[] = []
  spec.tenants.forEach(({ id }, t) => {
    texts.push(...queryTexts(spec, id, perTenant))
    queryVectors(spec, id, perTenant).forEach((v, q) => queries.set(v, (t * perTenant + q) * spec.dim))
  })
  const replacements = new Float32Array(new SharedArrayBuffer(4 * REPLACEMENT_DOCUMENTS * spec.chunksPerDoc * spec.dim))
  let at = 0
  const rows = generateCorpus({
    ...spec,
    seed: `${spec.seed}:replacements`,
    tenants: [{ id: 'r', chunks: REPLACEMENT_DOCUMENTS * spec.chunksPerDoc }],
  })
  for (const row of rows) {
    replacements.set(row.embedding, at)
    at += spec.dim
  }
  return {
    dim: spec.dim,
    chunksPerDoc: spec.chunksPerDoc,
    tenants: spec.tenants,
    perTenant,
    queryVectors: queries.buffer as SharedArrayBuffer,
    queryTexts: texts,
    replacementVectors: replacements.buffer as SharedArrayBuffer,
  }
}

/** What {@link loadContext} builds a thread's context from. */
export interface LoadContextParts {
  store: PgVectorStore
  /** The pool the store was opened on and its size. */
  pool: { db: Database; connections: number }
  truth: CorpusTruth
  inputs: LoadInputs
  mix: Record<LoadOperation, number>
  /** This thread's random stream (each worker thread its own). */
  seed: string
  /** With read replicas: how reads carry the load's writes (see {@link LoadConsistency}). */
  consistency?: LoadConsistency
}

/**
 * One thread's view of the load: tenants drawn with the corpus's skew (∝ chunks), a pre-made query
 * of the tenant, replacement chunks (pre-made vectors; the document's ACL group kept, the write's
 * version in `metadata.v`), ACL filters.
 *
 * ### Examples
 * ```ts
 * const ctx = loadContext({ store, pool: { db: pool, connections: 4 }, truth, inputs, mix, seed: 'bench:load' })
 * ```
 */
export function loadContext(parts: LoadContextParts): LoadContext {
  const { inputs } = parts
  const random = seededRandom(parts.seed)
  const cumulative: number[] = []
  let total = 0
  for (const t of inputs.tenants) cumulative.push((total += t.chunks))
  const position = new Map(inputs.tenants.map((t, i) => [t.id, i]))
  const queries = new Float32Array(inputs.queryVectors)
  const replacements = new Float32Array(inputs.replacementVectors)
  const { dim, chunksPerDoc, perTenant } = inputs
  let next = 0
  return {
    store: parts.store,
    pool: parts.pool,
    truth: parts.truth,
    mix: parts.mix,
    consistency: parts.consistency,
    random: () => random.next(),
    pickTenant() {
      const r = random.next() * total
      let lo = 0
      let hi = cumulative.length - 1
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (cumulative[mid]! > r) hi = mid
        else lo = mid + 1
      }
      return inputs.tenants[lo]!.id
    },
    query(tenantId) {
      const t = position.get(tenantId)
      if (t === undefined) throw new Error(`rag-bench load: ${tenantId} is not a tenant of the corpus`)
      const q = t * perTenant + Math.floor(random.next() * perTenant)
      return { embedding: queries.subarray(q * dim, (q + 1) * dim), text: inputs.queryTexts[q]! }
    },
    replacement(tenantId, documentId, version): ChunkInput[] {
      const first = (next++ % REPLACEMENT_DOCUMENTS) * chunksPerDoc
      return Array.from({ length: chunksPerDoc }, (_, i) => ({
        content: `replacement ${i} for ${tenantId}`,
        embedding: replacements.subarray((first + i) * dim, (first + i + 1) * dim),
        metadata: { owner: tenantId, kind: 'replacement', acl: aclGroup(documentId), v: version },
      }))
    },
    aclFilter() {
      // A user in two of the eight groups: about a quarter of a tenant's documents.
      const a = Math.floor(random.next() * ACL_GROUPS)
      const b = (a + 1 + Math.floor(random.next() * (ACL_GROUPS - 1))) % ACL_GROUPS
      const groups = [`g${a}`, `g${b}`]
      return { filter: { acl: { $in: groups } }, groups: new Set(groups) }
    },
  }
}
