/**
 * Tuning time of one seeded tenant (not a test: run by hand): its chunks ingested and its own index
 * built first (`optimize({ targetRecall: null })`), then `optimize()` timed with the target — the
 * tuning alone (query model or sample, exact answers, the ladder, any rebuilds). One JSON line.
 * Run in two checkouts one tenant after the other to compare tunings side by side.
 *
 *   npx tsx test/store/tuning/tuning-time.ts --generator shared-128 --seed s1 [--provider local]
 */
import { parseArgs } from 'node:util'
import { PgVectorStore, provision } from '../../../src/index.js'
import { GENERATORS } from './generators.js'

const { values } = parseArgs({
  options: {
    generator: { type: 'string', default: 'shared-128' },
    seed: { type: 'string', default: 's1' },
    provider: { type: 'string', default: 'local' },
    target: { type: 'string', default: '0.98' },
    label: { type: 'string', default: '' },
  },
})
const g = GENERATORS.find((x) => x.name === values.generator)
if (!g) throw new Error(`no generator ${values.generator}`)
const server = await provision({ provider: values.provider as 'local' | 'embedded' })
try {
  const store = await PgVectorStore.open(server.db, { table: 'tuning_time', dimensions: g.dim, querySample: false })
  await store.bulkIngest(g.corpus(values.seed))
  await store.optimize({ ownIndexAbove: 1000, targetRecall: null })
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const report = await store.optimize({ ownIndexAbove: 1000, targetRecall: Number(values.target) })
  const seconds = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  const t = report.tuning.tenants[0]!
  const bound = (t as { bound?: { lower: number; mean: number } }).bound
  console.log(
    JSON.stringify({
      label: values.label,
      generator: g.name,
      seed: values.seed,
      seconds,
      nodeCpuSeconds: (cpu.user + cpu.system) / 1e6,
      path: t.path,
      efSearch: t.efSearch,
      rebuilt: t.rebuiltWith ?? null,
      steps: t.tried.length,
      tried: t.tried.map(
        (s) =>
          `${s.m ?? '-'}/${s.efSearch}:${s.recall.toFixed(3)}/${(s.lower ?? 0).toFixed(3)}/${s.p50Ms.toFixed(2)}ms/${s.measured ?? 'all'}`,
      ),
      alts: t.alternatives,
      exactP50: t.exactP50Ms,
      bound: t.bound,
      families: t.families,
      statedLower: bound?.lower ?? null,
      statedMean: bound?.mean ?? t.recall,
    }),
  )
} finally {
  await server.stop()
}
