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
import { PgVectorStore, provision } from '../../../src/index.js'
import { countRecall, recallBound } from '../../../src/bench-kit.js'
import { GENERATORS } from './generators.js'

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
