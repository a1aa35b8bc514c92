import { countRecall, recallOf, type RecallCount, type SearchResult } from '../../../src/index.js'
import { progress, type Progress } from '../../report/progress.js'
import { summarize } from '../../report/stats.js'
import type { TenantSize } from '../../synthetic/corpus.js'
import type { PlanKind } from '../plan-kind.js'
import type { SearchRow, Strategy, TenantClass } from '../rag-report.js'
import { K, queriesFor, recordSizes, searchPlan, type RagRun } from '../rag-run.js'
import { buildTiered } from './index.js'

/**
 * Phase `search`: tie-aware recall@10 against `exactSearch` and latency per tenant class, strategy,
 * `ef_search` and iterative scan; after the tiered strategy, `measureRecall` at the tuned settings.
 *
 * ### Examples
 * ```ts
 * await searchPhase(run)
 * run.report.search?.rows.length
 * ```
 */
export async function searchPhase(run: RagRun): Promise<void> {
  const { config: c } = run
  const rows: SearchRow[] = []
  const truth = await exactAnswers(run)
  const bar = progress('recall + latency', run.sampled.length * run.strategies.length * c.efSearch.length * 2 * c.queries, {
    enabled: c.showProgress,
  })
  for (const strategy of run.strategies) {
    if (strategy === 'tiered') {
      await buildTiered(run)
      await recordSizes(run)
    }
    for (const { cls, tenants } of run.sampled) {
      for (const efSearch of c.efSearch) {
        for (const iterativeScan of ['relaxed', 'off'] as const) {
          rows.push(await measureConfiguration(run, { strategy, cls, tenants, efSearch, iterativeScan }, truth.get(cls)!, bar))
        }
      }
    }
  }
  bar.done(`${rows.length} configurations measured`)
  run.report.search = { k: K, rows }
  if (run.strategies.includes('tiered')) {
    // What a deployment gets by default after optimize(): each indexed tenant at its tuned setting,
    // for the tenants this phase sampled (up to 4 per class), each on its own queries.
    const measured = run.sampled.flatMap((x) => x.tenants.map((t) => t.id))
    run.report.tunedRecall = await run.store.measureRecall({ tenantId: measured, sample: Math.min(c.queries, 200), seed: c.seed })
  }
}

/** The exact top-k of every class's queries, computed once for all configurations. */
async function exactAnswers(run: RagRun): Promise<Map<TenantClass, SearchResult[][]>> {
  const truth = new Map<TenantClass, SearchResult[][]>()
  for (const { cls, tenants } of run.sampled) {
    const answers: SearchResult[][] = []
    for (const { tenant, q } of await queriesFor(run, tenants)) answers.push(await run.store.forTenant(tenant.id).exactSearch(q, { k: K }))
    truth.set(cls, answers)
  }
  return truth
}

interface Configuration {
  strategy: Strategy
  cls: TenantClass
  tenants: TenantSize[]
  efSearch: number
  iterativeScan: 'relaxed' | 'off'
}

/** One row of the search table: the class's queries at one setting, without the exact fallback. */
async function measureConfiguration(run: RagRun, x: Configuration, exact: SearchResult[][], bar: Progress): Promise<SearchRow> {
  const queries = await queriesFor(run, x.tenants)
  const plans = new Set<PlanKind>()
  for (const t of x.tenants) plans.add(await searchPlan(run, t.id, x.efSearch, x.iterativeScan))
  const ms: number[] = []
  const counts: RecallCount[] = []
  let short = 0
  for (let i = 0; i < queries.length; i++) {
    const { tenant, q } = queries[i]!
    const t0 = performance.now()
    const got = await run.store
      .forTenant(tenant.id)
      .search(q, { k: K, efSearch: x.efSearch, iterativeScan: x.iterativeScan, exactFallback: false })
    ms.push(performance.now() - t0)
    counts.push(countRecall(exact[i]!, got))
    if (got.length < Math.min(K, tenant.chunks)) short++
    bar.advance()
  }
  const sizes = x.tenants.map((t) => t.chunks)
  return {
    strategy: x.strategy,
    tenantClass: x.cls,
    tenantChunks: { min: Math.min(...sizes), max: Math.max(...sizes) },
    efSearch: x.efSearch,
    iterativeScan: x.iterativeScan,
    recallAt10: recallOf(counts).recall,
    recallAt10ById: recallOf(counts).recallById,
    latencyMs: summarize(ms),
    plans: [...plans],
    shortResults: short,
    queries: queries.length,
  }
}
