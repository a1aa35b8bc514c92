import { sql } from 'kysely'
import { adoptDatabase, type Embedding, type IngestRow, type PgVectorStore, type ProvisionedDatabase } from '../../src/index.js'
import { sampleQueries } from '../../src/bench-kit.js'
import { generateCorpus, offTopicQueries, queryTexts, queryVectors, type CorpusSpec, type TenantSize } from '../synthetic/corpus.js'
import type { CorpusDir, GivenQuery } from './corpus-dir.js'

/** Where a run's rows, queries and query texts come from: the synthetic corpus or a directory. */
export interface BenchSource {
  rows(): Iterable<IngestRow> | AsyncIterable<IngestRow>
  queryVectors(tenantId: string, n: number): Promise<Embedding[]>
  queryTexts(tenantId: string, n: number): Promise<string[]>
  /**
   * Queries unlike the chunks, for the `queries` phase: `traffic` sent before tuning, `evaluation`
   * held out (up to `n` each; none when the source has no such queries).
   */
  realQueries(tenantId: string, n: number): Promise<{ traffic: Embedding[]; evaluation: Embedding[]; what: string }>
  /** More rows for the ingest-through-the-index phase (synthetic only: a directory has no more). */
  slice?(tenants: TenantSize[]): Iterable<IngestRow>
}

/**
 * The synthetic corpus of `spec`; the extra slice is drawn with a derived seed.
 *
 * ### Examples
 * ```ts
 * const source = syntheticSource({ seed: '42', dim: 384, tenants: [{ id: 't1', chunks: 1000 }] }, '42')
 * ```
 */
export function syntheticSource(spec: CorpusSpec, seed: string): BenchSource {
  return {
    rows: () => generateCorpus(spec),
    queryVectors: async (tenantId, n) => queryVectors(spec, tenantId, n),
    queryTexts: async (tenantId, n) => queryTexts(spec, tenantId, n),
    realQueries: async (tenantId, n) => {
      const all = offTopicQueries(spec, tenantId, 2 * n)
      return {
        traffic: all.slice(0, n),
        evaluation: all.slice(n),
        what: 'off-topic synthetic queries (two topics blended, isotropic noise)',
      }
    },
    slice: (tenants) => generateCorpus({ ...spec, seed: `${seed}:slice`, tenants, documentPrefix: 'slice' }),
  }
}

/**
 * A directory corpus: its rows; its queries if it has them, else chunks of the tenant sampled and
 * perturbed (seeded) as `measureRecall` does; query texts from the queries, else four words of
 * sampled chunks.
 *
 * ### Examples
 * ```ts
 * const source = directorySource(await openCorpusDir('/tmp/corpus'), store, db, '42')
 * ```
 */
export function directorySource(corpus: CorpusDir, store: PgVectorStore, db: ProvisionedDatabase['db'], seed: string): BenchSource {
  const cache = new Map<string, Embedding[]>()
  return {
    rows: () => corpus.rows(),
    async queryVectors(tenantId, n) {
      const given = corpus.queries?.get(tenantId)
      if (given?.length) return Array.from({ length: n }, (_, i) => given[i % given.length]!.embedding)
      const key = `${tenantId}:${n}`
      if (!cache.has(key)) cache.set(key, await sampleQueries(adoptDatabase(db), store.config, tenantId, n, seed))
      return cache.get(key)!
    },
    async realQueries(tenantId, n) {
      const given = corpus.queries?.get(tenantId) ?? []
      const split = (q: GivenQuery, i: number) => q.split ?? (i % 2 === 0 ? 'traffic' : 'eval')
      const traffic = given.filter((q, i) => split(q, i) === 'traffic').slice(0, n)
      const evaluation = given.filter((q, i) => split(q, i) === 'eval').slice(0, n)
      const kinds = [...new Set(given.map((q) => q.kind).filter(Boolean))].join(', ')
      return {
        traffic: traffic.map((q) => q.embedding),
        evaluation: evaluation.map((q) => q.embedding),
        what: `the corpus's queries.jsonl${kinds ? ` (${kinds})` : ''}`,
      }
    },
    async queryTexts(tenantId, n) {
      const given = corpus.queries?.get(tenantId)?.filter((q) => q.text)
      if (given?.length) return Array.from({ length: n }, (_, i) => given[i % given.length]!.text!)
      const { rows } = await sql<{ content: string }>`
        select content from ${sql.raw(store.config.qualified)} where tenant_id = ${tenantId}
        order by md5(document_id || chunk_index::text || ${seed}) limit ${n}`.execute(db)
      const texts = rows.map(
        (r) =>
          r.content
            .split(/\s+/)
            .filter((w) => /^[A-Za-z]{4,}$/.test(w))
            .slice(0, 4)
            .join(' ') || r.content.slice(0, 40),
      )
      return Array.from({ length: n }, (_, i) => texts[i % Math.max(1, texts.length)] ?? '')
    },
  }
}
