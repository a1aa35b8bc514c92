import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { connect, PgVectorStore, provision } from '../../../src/index.js'
import { machineInfo } from '../../report/machine.js'
import { renderTable } from '../../report/table.js'
import { generateCorpus, type CorpusSpec } from '../../synthetic/corpus.js'
import { openCorpusDir } from '../corpus-dir.js'

/**
 * What the tuner's binary trial finds on a corpus (docs/store.md, "The tuner looks for a cheaper
 * way"): the corpus's tenants loaded into a full-vector store, `optimize()` with a cheap fraction
 * (`--cheap`, default 0.4: the ≤ 0.4× exact-scan target of real text) so that every tenant whose
 * cheapest HNSW setting costs more tries the alternatives, then per tenant with its own index: the
 * HNSW choice against its exact scan, and the binary trial's (re-rank, `ef_search`, recall, p50).
 *
 *   npx tsx bench/rag/quantization/tuner-binary-trial.ts --corpus DIR [--pg URL | --db local] [--cheap 0.4] [--target 0.985]
 *   npx tsx bench/rag/quantization/tuner-binary-trial.ts --hard 30000 [--dim 128]   # the synthetic hard tenant (rag-bench filters --hard's shape)
 */
const { values } = parseArgs({
  options: {
    corpus: { type: 'string' },
    pg: { type: 'string' },
    db: { type: 'string' },
    cheap: { type: 'string' },
    target: { type: 'string' },
    'own-index-above': { type: 'string' },
    hard: { type: 'string' },
    dim: { type: 'string' },
  },
})
if (!values.corpus && !values.hard) throw new Error('--corpus DIR or --hard CHUNKS is required')
/** A hard tenant: vectors spread widely in all directions around 24 topics of its own; an easy one beside it. */
const hardSpec = (chunks: number, dim: number): CorpusSpec => ({
  seed: 'binary-trial-hard',
  dim,
  topics: 'per-tenant',
  topicsPerTenant: 24,
  noise: 4,
  topicRank: dim,
  tenants: [
    { id: 'hard', chunks },
    { id: 'other', chunks: Math.max(2500, Math.floor(chunks / 4)) },
  ],
})
const corpus = values.corpus
  ? await openCorpusDir(values.corpus)
  : (() => {
      const spec = hardSpec(Number(values.hard), Number(values.dim ?? 128))
      return {
        dim: spec.dim,
        chunks: spec.tenants.reduce((a, t) => a + t.chunks, 0),
        tenants: spec.tenants,
        rows: async function* () {
          yield* generateCorpus(spec)
        },
      }
    })()
const server = values.pg ? undefined : await provision({ provider: (values.db ?? 'local') as 'local' })
const db = values.pg ? await connect(values.pg) : server!.db
const table = 'pgscale_binary_trial_bench'
try {
  await sql.raw(`drop table if exists ${table} cascade`).execute(db)
  const store = await PgVectorStore.open(db, { table, dimensions: corpus.dim, querySample: false })
  const t0 = performance.now()
  await store.bulkIngest(corpus.rows())
  console.error(`loaded ${corpus.chunks} chunks of ${corpus.tenants.length} tenants in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  const cheapFraction = Number(values.cheap ?? 0.4)
  const targetRecall = Number(values.target ?? 0.985)
  const t1 = performance.now()
  const result = await store.optimize({
    ownIndexAbove: Number(values['own-index-above'] ?? 2000),
    targetRecall,
    tuning: { cheapFraction },
  })
  console.error(`optimize() in ${((performance.now() - t1) / 1000).toFixed(1)} s`)
  const rows = result.tuning.tenants
    .filter((t) => t.rows >= Number(values['own-index-above'] ?? 2000))
    .map((t) => {
      const binary = t.alternatives.find((a) => a.kind === 'binary-rerank')
      const ratio = (ms: number | null | undefined) => (ms == null ? '—' : `${(ms / t.exactP50Ms).toFixed(2)}×`)
      return [
        t.tenantId,
        String(t.rows),
        t.path === 'index'
          ? `ef ${t.efSearch}, ${t.recall.toFixed(3)}, ${t.searchP50Ms?.toFixed(2)} ms (${ratio(t.searchP50Ms)})`
          : 'exact',
        `${t.exactP50Ms.toFixed(2)} ms`,
        t.alternatives
          .filter((a) => a.kind === 'rebuild')
          .map((a) => `${a.m}/${a.efConstruction}: ${a.outcome}`)
          .join('; ') || '—',
        binary
          ? binary.efSearch
            ? `×${binary.rerank} ef ${binary.efSearch}, ${binary.recall?.toFixed(3)}, ${binary.p50Ms?.toFixed(2)} ms (${ratio(binary.p50Ms)}), build ${binary.buildSeconds?.toFixed(1)} s: ${binary.outcome}`
            : `${binary.outcome}${binary.buildSeconds ? ` (build ${binary.buildSeconds.toFixed(1)} s)` : ''}`
          : 'not tried (HNSW cheap enough)',
      ]
    })
  const m = machineInfo()
  console.log(
    `corpus ${values.corpus ?? `synthetic hard ${values.hard}`}: ${corpus.chunks} chunks × ${corpus.dim}, target ${targetRecall}, cheapFraction ${cheapFraction}`,
  )
  console.log(`machine: ${JSON.stringify(m)}`)
  console.log(
    renderTable(
      [
        'tenant',
        'rows',
        'HNSW chosen (ef, recall, p50, ÷ exact)',
        'exact p50',
        'rebuilds',
        'binary trial (re-rank, ef, recall, p50, ÷ exact)',
      ],
      rows,
    ),
  )
  await store.close()
} finally {
  if (server) await server.stop()
  else await db.destroy()
}
