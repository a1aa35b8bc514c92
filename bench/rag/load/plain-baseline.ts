import { percentile } from '../../report/stats.js'
import type { LoadContext } from './load-step.js'

/** A plain loop of `store.search` on the load's corpus: what one client's search costs without the harness. */
export interface PlainBaseline {
  searches: number
  p50Ms: number
  p95Ms: number
}

/**
 * Times `searches` calls of `store.search(query, { k: 10 })` one after another in this thread,
 * tenants drawn with the corpus's skew and queries from the pre-made inputs (after `warmup`
 * untimed calls): the yardstick a 1-client step's search p50 is read against.
 *
 * ### Examples
 * ```ts
 * const baseline = await plainSearchBaseline(ctx, 1000)
 * step.operations.search.p50Ms / baseline.p50Ms // ≈ 1: the harness adds nothing
 * ```
 */
export async function plainSearchBaseline(ctx: LoadContext, searches: number, warmup = 100): Promise<PlainBaseline> {
  const draws = Array.from({ length: warmup + searches }, () => {
    const tenantId = ctx.pickTenant()
    return { tenantId, embedding: ctx.query(tenantId).embedding }
  })
  const ms: number[] = []
  for (const [i, d] of draws.entries()) {
    const t0 = performance.now()
    await ctx.store.forTenant(d.tenantId).search(d.embedding, { k: 10 })
    if (i >= warmup) ms.push(performance.now() - t0)
  }
  return { searches, p50Ms: percentile(ms, 50), p95Ms: percentile(ms, 95) }
}
