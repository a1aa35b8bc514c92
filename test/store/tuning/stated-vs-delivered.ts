/**
 * Stated vs delivered recall, measured (not a test: run by hand, minutes): for each seeded
 * generator and seed, one tenant tuned by `optimize()` at its defaults without any traffic, then
 * 200 fresh queries drawn differently from the tuning queries (random points of the tenant's
 * topics, not near any stored chunk), tie-aware recall@10 of `search` as it runs now against
 * `exactSearch`. Prints a markdown table and a JSON line per tenant (docs/store.md "Recall you can state").
 *
 *   npx tsx test/store/tuning/stated-vs-delivered.ts [--seeds 2] [--only shared-128,…] [--provider local]
 */
import { parseArgs } from 'node:util'
import { type IngestRow, PgVectorStore, provision } from '../../../src/index.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { countRecall, recallBound, seededRandom } from '../../../src/bench-kit.js'

interface Generator {
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

const GENERATORS: Generator[] = [
  corpusGenerator('shared-128', { dim: 128 }, 8000),
  corpusGenerator('own-64-wide', { dim: 64, topics: 'per-tenant', topicsPerTenant: 3, noise: 1.2, topicRank: 24 }, 6000),
  corpusGenerator('own-256-narrow', { dim: 256, topics: 'per-tenant', topicsPerTenant: 16, noise: 0.5, topicRank: 6 }, 8000),
  anisotropicGenerator('aniso-96', 96, 8000, 10, 0.8, 0.9),
  corpusGenerator('shared-256', { dim: 256 }, 12000),
  // Harder: a high intrinsic dimension (HNSW needs a larger ef_search).
  corpusGenerator('rank64-128', { dim: 128, topics: 'per-tenant', topicsPerTenant: 4, noise: 1.0, topicRank: 64 }, 8000),
  anisotropicGenerator('flat-96', 96, 8000, 6, 0.3, 0.6),
]

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '2' },
    only: { type: 'string' },
    provider: { type: 'string', default: 'local' },
    target: { type: 'string', default: '0.98' },
  },
})
const target = Number(values.target)
const only = values.only?.split(',')
const server = await provision({ provider: values.provider as 'local' | 'embedded' })
const lines: string[] = []
try {
  for (const g of GENERATORS.filter((x) => !only || only.includes(x.name))) {
    for (let s = 1; s <= Number(values.seeds); s++) {
      const seed = `s${s}`
      const table = `svd_${g.name.replace(/-/g, '_')}_${s}`
      const store = await PgVectorStore.open(server.db, { table, dimensions: g.dim, querySample: false })
      await store.bulkIngest(g.corpus(seed))
      const started = performance.now()
      const report = await store.optimize({ ownIndexAbove: 1000, targetRecall: target })
      const seconds = (performance.now() - started) / 1000
      const tuned = report.tuning.tenants[0]!
      const t0 = performance.now()
      const handle = store.forTenant('t')
      const perQuery: number[] = []
      for (const q of g.fresh(seed, 200)) {
        const exact = await handle.exactSearch(q, { k: 10 })
        const got = await handle.search(q, { k: 10 })
        const c = countRecall(exact, got)
        perQuery.push(c.expected ? c.hits / c.expected : 1)
      }
      const delivered = recallBound(perQuery)
      const bound = (tuned as { bound?: { lower: number; mean: number; queries: number } }).bound
      const row = {
        generator: g.name,
        seed,
        rows: g.rows,
        dim: g.dim,
        path: tuned.path,
        efSearch: tuned.efSearch,
        rebuilt: tuned.rebuiltWith ?? null,
        statedMean: bound?.mean ?? tuned.recall,
        statedLower: bound?.lower ?? null,
        tuningQueries: tuned.queries,
        delivered: delivered.mean,
        deliveredLower: delivered.lower,
        imperfect: perQuery.filter((v) => v < 1).length,
        worst: Math.min(...perQuery),
        optimizeSeconds: seconds,
        buildSeconds: report.built.reduce((t, b) => t + b.seconds, 0),
        measureSeconds: (performance.now() - t0) / 1000,
      }
      console.log(JSON.stringify(row))
      lines.push(
        `| ${g.name} (${g.rows} × ${g.dim}) | ${seed} | ${row.path === 'index' ? `ef ${row.efSearch}${row.rebuilt ? ` m ${row.rebuilt.m}/${row.rebuilt.efConstruction}` : ''}` : 'exact'} | ` +
          `${row.statedLower === null ? '–' : row.statedLower.toFixed(3)} / ${row.statedMean.toFixed(3)} | ${row.delivered.toFixed(3)} | ${row.imperfect} (worst ${row.worst.toFixed(1)}) | ${(seconds - row.buildSeconds).toFixed(1)} s |`,
      )
    }
  }
} finally {
  console.log('| generator | seed | chosen | stated lower / mean | delivered (200 fresh) | imperfect queries | tuning (optimize − build) |')
  console.log('|---|---|---|---|---|---|---|')
  for (const l of lines) console.log(l)
  await server.stop()
}
