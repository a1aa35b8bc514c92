import { adoptDatabase, PgVectorStore, type Embedding } from '../../../src/index.js'
import { efSearchInUse, sampleQueries } from '../../../src/bench-kit.js'
import { median } from '../../report/stats.js'
import { LARGE_ABOVE } from '../tenant-classes.js'
import { BENCH_TABLE, type RagRun } from '../rag-run.js'
import { buildTiered } from './index.js'
import type { RealQueriesReport, RealQueryTenant, RecallMoment } from '../rag-report.js'

/** Tenants measured at most (the largest with their own index). */
const MAX_TENANTS = 8

/**
 * Phase `queries`: recall on what users send. For up to 8 tenants with their own index (largest
 * first): tie-aware recall@10 on the query model's queries (`measureRecall`'s default: points the
 * tenant never stored, at its own scale) and on held-out queries unlike the chunks, at the
 * settings `optimize()` chose before any traffic; then each tenant's traffic queries (disjoint
 * from the held-out ones) go through a store with the query sample on, `optimize()` runs again,
 * and the same two measurements are taken at the settings it chose now — with p50 against the
 * tenant's exact scan on the same held-out queries.
 *
 * ### Examples
 * ```ts
 * await queriesPhase(run)
 * run.report.realQueries?.tenants[0]?.after.evalRecall
 * ```
 */
export async function queriesPhase(run: RagRun): Promise<void> {
  const { config: c, store } = run
  if (!run.strategies.includes('tiered')) return run.log('queries phase skipped: it needs --index tiered or both')
  await buildTiered(run)
  const tuned = new Map((await store.tenantTuning()).map((t) => [t.tenantId, t]))
  const tenants = c.tenants.filter((t) => t.chunks > LARGE_ABOVE && tuned.has(t.id)).slice(0, MAX_TENANTS)
  const inputs = new Map<string, { traffic: Embedding[]; evaluation: Embedding[] }>()
  let what = ''
  for (const t of tenants) {
    const q = await run.source.realQueries(t.id, Math.min(c.queries, 300))
    what = q.what
    if (q.traffic.length && q.evaluation.length) inputs.set(t.id, q)
  }
  if (!inputs.size) return run.log('queries phase skipped: no tenant with its own index has traffic and held-out queries')
  const measured = tenants.filter((t) => inputs.has(t.id))
  run.log(`queries: ${measured.length} tenants, ${what}`)
  const before = new Map<string, RecallMoment>()
  for (const t of measured) before.set(t.id, await moment(run, t.id, inputs.get(t.id)!.evaluation))
  const sampling = await sendTraffic(run, inputs)
  const t0 = performance.now()
  const retuned = await store.optimize({ ownIndexAbove: LARGE_ABOVE, indexBuild: { m: c.m, efConstruction: c.efConstruction } })
  const seconds = (performance.now() - t0) / 1000
  const out: RealQueryTenant[] = []
  for (const t of measured) {
    const q = inputs.get(t.id)!
    out.push({
      tenantId: t.id,
      chunks: t.chunks,
      trafficQueries: q.traffic.length,
      evalQueries: q.evaluation.length,
      nearestChunkDistance: await nearestChunkDistances(run, t.id, q.evaluation),
      before: before.get(t.id)!,
      after: await moment(run, t.id, q.evaluation),
    })
  }
  run.report.realQueries = {
    queries: what,
    tenants: out,
    sampling,
    retune: { seconds, tenants: retuned.tuning.tenants.map((r) => r.tenantId) },
    monitor: (await store.recallReport()).filter((r) => inputs.has(r.tenantId)),
    method:
      "tie-aware recall@10 against exactSearch; chunk recall on 200 of the query model's queries around the tenant's chunks (measureRecall, source chunks), eval recall on the held-out queries (never sent before); " +
      'before: at the settings optimize() chose with no traffic; after: traffic queries searched through a store with the query sample on, then optimize() again; p50 of sequential calls, exact p50 on the same held-out queries',
  }
}

/** Recall on the query model's queries and on the held-out queries at the tenant's current setting. */
async function moment(run: RagRun, tenantId: string, evaluation: readonly Embedding[]): Promise<RecallMoment> {
  const tuning = (await run.store.tenantTuning()).find((t) => t.tenantId === tenantId)
  const chunks = (await run.store.measureRecall({ tenantId, sample: 200, seed: run.config.seed })).tenants[0]!
  const held = (await run.store.measureRecall({ tenantId, queries: evaluation })).tenants[0]!
  return {
    efSearch: efSearchInUse(tuning, run.store.config.defaultEfSearch),
    querySource: tuning?.querySource ?? null,
    chunkRecall: chunks.recall,
    evalRecall: held.recall,
    evalP50Ms: held.searchP50Ms,
    exactP50Ms: held.exactP50Ms,
    p50ToExact: held.searchP50Ms / held.exactP50Ms,
  }
}

/**
 * The traffic: each tenant's traffic queries through a store with the query sample on (flushed
 * before it closes), each also sent — in alternating order — through the bench's store, which
 * samples nothing: their p50s side by side.
 */
async function sendTraffic(run: RagRun, inputs: ReadonlyMap<string, { traffic: Embedding[] }>): Promise<RealQueriesReport['sampling']> {
  const serving = await PgVectorStore.open(run.db, { table: BENCH_TABLE, dimensions: run.config.dim, querySample: { perTenant: 256 } })
  const on: number[] = []
  const off: number[] = []
  const timed = async (store: PgVectorStore, tenantId: string, e: Embedding, into: number[]) => {
    const t0 = performance.now()
    await store.forTenant(tenantId).search(e)
    into.push(performance.now() - t0)
  }
  try {
    let i = 0
    for (const [tenantId, q] of inputs) {
      for (const e of q.traffic) {
        const pair = [() => timed(serving, tenantId, e, on), () => timed(run.store, tenantId, e, off)]
        for (const send of i++ % 2 ? pair.reverse() : pair) await send()
      }
    }
    const flushed = await serving.flushQuerySample()
    if (flushed.error) run.log(`query sample flush failed: ${flushed.error.message}`)
  } finally {
    await serving.close()
  }
  return { searches: on.length, onP50Ms: median(on), offP50Ms: median(off), ratio: median(on) / median(off) }
}

/** Median distance to the nearest chunk: 100 chunk-sample queries, and up to 100 held-out ones. */
async function nearestChunkDistances(run: RagRun, tenantId: string, evaluation: readonly Embedding[]) {
  const handle = run.store.forTenant(tenantId)
  const nearest = async (qs: readonly Embedding[]) => {
    const d: number[] = []
    for (const q of qs.slice(0, 100)) d.push((await handle.exactSearch(q, { k: 1 }))[0]?.distance ?? Number.NaN)
    return median(d)
  }
  const samples = await sampleQueries(adoptDatabase(run.db), run.store.config, tenantId, 100, run.config.seed)
  return { chunkSample: await nearest(samples), evaluation: await nearest(evaluation) }
}
