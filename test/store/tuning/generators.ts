/**
 * Seeded tenant generators for measuring stated against delivered recall (not a test): each makes
 * one tenant's chunks and fresh queries drawn like the data but never stored (random points of the
 * tenant's topics, a stream of their own). Used by stated-vs-delivered.ts and recall-study.ts.
 */
import type { IngestRow } from '../../../src/index.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { seededRandom } from '../../../src/bench-kit.js'

export interface Generator {
  name: string
  dim: number
  rows: number
  corpus(seed: string): Iterable<IngestRow>
  fresh(seed: string, n: number): number[][]
}

/** The synthetic corpus generator (bench/synthetic) under one shape. */
function corpusGenerator(name: string, shape: Omit<CorpusSpec, 'seed' | 'tenants'>, rows: number): Generator {
  const spec = (seed: string): CorpusSpec => ({ ...shape, seed: `${name}:${seed}`, tenants: [{ id: 't', chunks: rows }] })
  return {
    name,
    dim: shape.dim,
    rows,
    corpus: (seed) => generateCorpus(spec(seed)),
    fresh: (seed, n) => queryVectors(spec(seed), 't', n).map((v) => [...v]),
  }
}

/**
 * A generator of its own: a mixture of `topics` Gaussians in `dim` dimensions whose spread falls off
 * along the axes as a power law (axis i scaled by (i+1)^-alpha, the axes rotated per topic by a random
 * sign flip and permutation): anisotropic, as neural embeddings are. Chunks and fresh queries are
 * drawn from the same mixture (different streams).
 */
function anisotropicGenerator(name: string, dim: number, rows: number, topics: number, alpha: number, spread: number): Generator {
  const topicsOf = (seed: string) => {
    const r = seededRandom(`${name}:${seed}:topics`)
    return Array.from({ length: topics }, () => {
      const centroid = unit(Array.from({ length: dim }, () => r.gaussian()))
      const perm = Array.from({ length: dim }, (_, i) => i).sort(() => r.next() - 0.5)
      const sign = Array.from({ length: dim }, () => (r.next() < 0.5 ? -1 : 1))
      return { centroid, perm, sign }
    })
  }
  const draw = (r: ReturnType<typeof seededRandom>, t: ReturnType<typeof topicsOf>[number]) => {
    const v = [...t.centroid]
    for (let i = 0; i < dim; i++) v[t.perm[i]!]! += (t.sign[i]! * spread * r.gaussian()) / (i + 1) ** alpha
    return unit(v)
  }
  return {
    name,
    dim,
    rows,
    *corpus(seed) {
      const ts = topicsOf(seed)
      const r = seededRandom(`${name}:${seed}:chunks`)
      for (let i = 0; i < rows; i++) {
        yield {
          tenantId: 't',
          documentId: `d${Math.floor(i / 10)}`,
          chunkIndex: i % 10,
          content: `c${i}`,
          embedding: draw(r, ts[r.int(topics)]!),
        }
      }
    },
    fresh(seed, n) {
      const ts = topicsOf(seed)
      const r = seededRandom(`${name}:${seed}:fresh`)
      return Array.from({ length: n }, () => draw(r, ts[r.int(topics)]!))
    },
  }
}

function unit(x: number[]): number[] {
  const norm = Math.hypot(...x) || 1
  return x.map((v) => v / norm)
}

export const GENERATORS: Generator[] = [
  corpusGenerator('shared-128', { dim: 128 }, 8000),
  corpusGenerator('own-64-wide', { dim: 64, topics: 'per-tenant', topicsPerTenant: 3, noise: 1.2, topicRank: 24 }, 6000),
  corpusGenerator('own-256-narrow', { dim: 256, topics: 'per-tenant', topicsPerTenant: 16, noise: 0.5, topicRank: 6 }, 8000),
  anisotropicGenerator('aniso-96', 96, 8000, 10, 0.8, 0.9),
  corpusGenerator('shared-256', { dim: 256 }, 12000),
  // Harder: a high intrinsic dimension (HNSW needs a larger ef_search).
  corpusGenerator('rank64-128', { dim: 128, topics: 'per-tenant', topicsPerTenant: 4, noise: 1.0, topicRank: 64 }, 8000),
  anisotropicGenerator('flat-96', 96, 8000, 6, 0.3, 0.6),
]
