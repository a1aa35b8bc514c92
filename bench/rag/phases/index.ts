import { sql } from 'kysely'
import { progress } from '../../report/progress.js'
import { LARGE_ABOVE } from '../tenant-classes.js'
import { BENCH_TABLE, recordSizes, type RagRun } from '../rag-run.js'

/**
 * Phase `index`: builds the first strategy's index (one shared HNSW, or the tenant tiers) and records
 * the build time and sizes.
 *
 * ### Examples
 * ```ts
 * await indexPhase(run)
 * run.report.index?.shared?.seconds
 * ```
 */
export async function indexPhase(run: RagRun): Promise<void> {
  const { config: c, store } = run
  run.report.index = { sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 } }
  if (run.strategies[0] === 'shared') {
    const bar = progress('shared HNSW build', c.chunks, { enabled: c.showProgress })
    const result = await store.createIndex({
      m: c.m,
      efConstruction: c.efConstruction,
      onProgress: (p) => bar.update(p.tuplesDone || 0, p.phase),
    })
    bar.done(`${(result.bytes / 2 ** 20).toFixed(0)} MB in ${result.seconds.toFixed(1)} s`)
    for (const w of result.warnings) run.log(w)
    run.report.index.shared = { seconds: result.seconds, bytes: result.bytes }
    await sql.raw(`analyze ${BENCH_TABLE}`).execute(run.db)
  } else {
    await buildTiered(run)
  }
  await recordSizes(run)
}

/**
 * The most tenant indexes `optimize()` can build here, the bar's total: every tenant above
 * `LARGE_ABOVE` chunks, and while a shared index exists the tenants the planner may still send to
 * it down to `minOwnIndex` (1,000); at most `maxNewIndexes` (200). The bar ends at what was built.
 *
 * ### Examples
 * ```ts
 * tenantIndexesToBuild(run) // 20 with 20 tenants of 1,000-5,000 chunks beside a shared index
 * ```
 */
export function tenantIndexesToBuild(run: RagRun): number {
  const floor = run.report.index?.shared ? Math.min(1000, LARGE_ABOVE + 1) : LARGE_ABOVE + 1
  return Math.max(1, Math.min(200, run.config.tenants.filter((t) => t.chunks >= floor).length))
}

/**
 * The tiered strategy, once per run: `optimize()` as recommended — tenant indexes where needed, the
 * shared index dropped if no one needs it — with its build time and recall tuning in the report.
 *
 * ### Examples
 * ```ts
 * await buildTiered(run) // a second call does nothing
 * ```
 */
export async function buildTiered(run: RagRun): Promise<void> {
  if (run.tieredBuilt) return
  run.tieredBuilt = true
  const { config: c } = run
  const bar = progress('tenant indexes', tenantIndexesToBuild(run), { enabled: c.showProgress })
  let built = 0
  const t0 = performance.now()
  const result = await run.store.optimize({
    ownIndexAbove: LARGE_ABOVE,
    dropUnusedSharedIndex: true,
    indexBuild: {
      m: c.m,
      efConstruction: c.efConstruction,
      onProgress: (p) => p.phase === 'done' && bar.update(++built, 'each indexed tenant is recall-tuned after the last build'),
    },
  })
  const seconds = (performance.now() - t0) / 1000
  bar.setTotal(result.built.length)
  bar.done(`${result.built.length} tenant indexes built and ${result.tuning.tenants.length} tenants tuned in ${seconds.toFixed(1)} s`)
  run.report.index ??= { sizes: { heap: 0, toast: 0, sharedHnsw: 0, tenantHnsw: 0, btree: 0, gin: 0, total: 0 } }
  run.report.index.tiered = {
    seconds,
    tenantIndexes: result.tenants.withOwnIndex,
    bytes: result.built.reduce((s, b) => s + b.bytes, 0),
    droppedSharedIndex: result.sharedIndex?.dropped ?? false,
    notes: result.notes,
    tuning: result.tuning,
  }
}
