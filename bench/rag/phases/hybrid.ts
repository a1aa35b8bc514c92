import { summarize } from '../../report/stats.js'
import { K, queriesFor, type RagRun } from '../rag-run.js'

/**
 * Phase `hybrid`: `hybridSearch` (vector + full text, RRF) beside vector-only `search` on the same
 * queries, interleaved.
 *
 * ### Examples
 * ```ts
 * await hybridPhase(run)
 * run.report.hybrid?.hybridMs.p50
 * ```
 */
export async function hybridPhase(run: RagRun): Promise<void> {
  const { config: c, store } = run
  const vectorMs: number[] = []
  const hybridMs: number[] = []
  let n = 0
  for (const { tenants } of run.sampled) {
    const texts = new Map<string, string[]>()
    for (const t of tenants) texts.set(t.id, await run.source.queryTexts(t.id, c.queries))
    for (const [i, { tenant, q }] of (await queriesFor(run, tenants)).slice(0, Math.max(20, Math.floor(c.queries / 2))).entries()) {
      let t0 = performance.now()
      await store.forTenant(tenant.id).search(q, { k: K })
      vectorMs.push(performance.now() - t0)
      t0 = performance.now()
      await store.forTenant(tenant.id).hybridSearch({ embedding: q, text: texts.get(tenant.id)![i]!, k: K })
      hybridMs.push(performance.now() - t0)
      n++
    }
  }
  run.report.hybrid = { vectorMs: summarize(vectorMs), hybridMs: summarize(hybridMs), queries: n }
}
