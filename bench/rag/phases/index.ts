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
  const large = c.tenants.filter((t) => t.chunks > LARGE_ABOVE).length
  const bar = progress('tenant indexes', Math.max(1, large), { enabled: c.showProgress })
  let built = 0
  const t0 = performance.now()
  const result = await run.store.optimize({
    ownIndexAbove: LARGE_ABOVE,
    dropUnusedSharedIndex: true,
    indexBuild: { m: c.m, efConstruction: c.efConstruction, onProgress: (p) => p.phase === 'done' && bar.update(++built) },
  })
  const seconds = (performance.now() - t0) / 1000
  bar.done(`${result.built.length} tenant indexes in ${seconds.toFixed(1)} s`)
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
