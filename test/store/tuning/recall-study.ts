/**
 * The query model against fresh queries, step by step (not a test: run by hand, minutes): for each
 * seeded generator and seed, one tenant with its own index (m 16 / ef_construction 64, not tuned),
 * 200 of the query model's queries (with their families) and 200 fresh queries (random points of
 * the tenant's topics), tie-aware recall@10 of each query at every `ef_search` of the tuner's
 * ladder, with each step's p50 and the exact scan's. One JSON line per tenant, for choosing how
 * the tuner states its bound (which rule's stated lower bound holds the fresh queries' mean).
 *
 *   npx tsx test/store/tuning/recall-study.ts [--seeds 2] [--only shared-128,…] [--out FILE]
 */
import { appendFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { PgVectorStore, provision } from '../../../src/index.js'
import { DEFAULT_RECALL_EPSILON, exactAnswers, modelQueries, percentile, searchRecall } from '../../../src/bench-kit.js'
import { GENERATORS } from './generators.js'

const STEPS = [40, 64, 100, 130, 160, 200, 250, 320, 400, 500, 640, 800, 1000]

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '2' },
    only: { type: 'string' },
    provider: { type: 'string', default: 'local' },
    out: { type: 'string' },
    'model-seed': { type: 'string', default: 'pgscale' },
  },
})
const only = values.only?.split(',')
const server = await provision({ provider: values.provider as 'local' | 'embedded' })
try {
  for (const g of GENERATORS.filter((x) => !only || only.includes(x.name))) {
    for (let s = 1; s <= Number(values.seeds); s++) {
      const seed = `s${s}`
      const table = `rst_${g.name.replace(/-/g, '_')}_${s}`
      const store = await PgVectorStore.open(server.db, { table, dimensions: g.dim, querySample: false })
      await store.bulkIngest(g.corpus(seed))
      await store.optimize({ ownIndexAbove: 1000, targetRecall: null })
      const handle = store.forTenant('t')
      const t0 = performance.now()
      const model = await modelQueries(server.db, store.config, handle, 200, values['model-seed'])
      const modelSeconds = (performance.now() - t0) / 1000
      const fresh = g.fresh(seed, 200)
      const mt = await exactAnswers(handle, model.queries, 10)
      const ft = await exactAnswers(handle, fresh, 10)
      const steps: Array<{ ef: number; model: number[]; fresh: number[]; modelP50: number; freshP50: number }> = []
      for (const ef of STEPS) {
        const opts = { efSearch: ef, iterativeScan: 'relaxed' as const, exactFallback: false }
        const m = await searchRecall(handle, model.queries, mt.truth, 10, DEFAULT_RECALL_EPSILON, opts)
        const f = await searchRecall(handle, fresh, ft.truth, 10, DEFAULT_RECALL_EPSILON, opts)
        steps.push({ ef, model: m.perQuery, fresh: f.perQuery, modelP50: percentile(m.ms, 50), freshP50: percentile(f.ms, 50) })
        if (m.perQuery.every((v) => v === 1) && f.perQuery.every((v) => v === 1)) break
      }
      const row = {
        generator: g.name,
        seed,
        rows: g.rows,
        dim: g.dim,
        kthDistance: model.kthDistance,
        families: model.families,
        modelSeconds,
        exactP50: percentile(mt.ms, 50),
        steps,
      }
      const line = JSON.stringify(row)
      if (values.out) appendFileSync(values.out, line + '\n')
      const brief = steps.map((x) => `${x.ef}:${mean(x.model).toFixed(3)}/${mean(x.fresh).toFixed(3)}`).join(' ')
      console.log(`${g.name} ${seed} exact ${row.exactP50.toFixed(1)} ms: ${brief}`)
      await server.db.schema.dropTable(table).ifExists().cascade().execute()
    }
  }
} finally {
  await server.stop()
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
}
