import type { ResolvedStoreConfig } from '../config/index.js'
import type { Embedding } from '../ingest/index.js'
import type { TunedAlternative } from '../schema/index.js'
import type { TenantStore } from '../tenant/index.js'
import type { ScoredRow } from './tenant-vectors.js'
import { percentile, searchRecall } from './measure-recall.js'
import { DEFAULT_RECALL_EPSILON } from './recall.js'

/** An HNSW graph's build parameters. */
export interface Graph {
  m: number
  efConstruction: number
}

/**
 * Whether a setting's per-query recall meets the target, and the stated interval: the one-sided
 * lower bound (the worst query family's, with the query model) and the mean it goes with.
 */
export interface RecallJudgement {
  ok: boolean
  lower: number
  mean: number
  /** The queries the stated bound rests on. */
  queries: number
}

/** A setting that met the target: its `ef_search` on a graph (undefined: the tenant's index as it was). */
export interface IndexChoice {
  efSearch: number
  /** Mean per-query recall over every tuning query. */
  recall: number
  /** The stated interval of the setting (see {@link RecallJudgement}). */
  judged: RecallJudgement
  /** Each tuning query's recall at the setting, in order. */
  perQuery: number[]
  p50Ms: number
  graph: Graph | undefined
  /**
   * Accepted on the queries still open, too slow to end the search for a cheaper setting: its
   * p50 (and `perQuery`) from a spread {@link MIN_TIMED} of the queries only. It is measured on
   * every query ({@link settle}) only if no rebuild beats it.
   */
  provisional?: true
}

/** One measured step of the `ef_search` ladder. */
export interface LadderStep {
  efSearch: number
  m: number | null
  efConstruction: number | null
  /** Mean per-query recall over every tuning query. */
  recall: number
  /** The one-sided 95% lower bound the target is judged on. */
  lower?: number
  /**
   * Queries searched at this step when fewer than all: the ones not yet perfect at a smaller
   * `ef_search` (the others count as perfect; `recall` and `lower` are over all of them, `p50Ms`
   * over these) — or, at a step accepted on those, the spread 20 it was timed on when their p50
   * rejected it (over the latency bound) or left it provisional (a rebuild beat it, or it was
   * measured on all of them afterwards: the next entry of the same graph and `ef_search`).
   */
  measured?: number
  p50Ms: number
}

/** What choosing the tenant's index setting needs. */
export interface AlternativesContext {
  handle: TenantStore
  config: ResolvedStoreConfig
  queries: readonly Embedding[]
  truth: ReadonlyArray<readonly ScoredRow[]>
  steps: readonly number[]
  /** Judges a setting's per-query recall (in the order of `queries`) against the target. */
  judge(perQuery: readonly number[]): RecallJudgement
  /** The slowest p50 a setting may have (the exact scan's, by default). */
  boundMs: number
  /** Above this p50, the cheapest setting is near-exhaustive: the alternatives are tried (`cheapFraction` × the exact p50). */
  cheapMs: number
  rebuilds: readonly Graph[]
  /** The graph the tenant's index has now (restored if a rebuild loses to it). */
  current: Graph
  /** Rebuilds the tenant's index with a graph; resolves to the seconds it took. */
  rebuild(graph: Graph): Promise<number>
  /** Builds, measures and drops a binary-quantized index of the tenant (a store of full-vector indexes); absent: not tried. */
  binaryTrial?(trial: { hnswP50Ms: number | undefined; judge(perQuery: readonly number[]): RecallJudgement }): Promise<TunedAlternative>
}

/** What {@link chooseIndexSetting} found. */
export interface IndexSettingChoice {
  chosen: IndexChoice | undefined
  /** The graph the tenant's index was left with, when a rebuild was kept. */
  rebuiltWith: Graph | undefined
  tried: LadderStep[]
  alternatives: TunedAlternative[]
}

/**
 * The tenant's cheapest index setting that meets the target: the `ef_search` ladder on its index as
 * it is; and when the cheapest that meets it costs more than `cheapMs` (a near-exhaustive
 * `ef_search`: by default half the exact scan), or none does, the alternatives — each rebuild of
 * its index with a larger graph (built beside the old one and swapped in, its build time
 * measured), until one is cheap enough — then the quantized paths where the store has them
 * ({@link quantizedAlternatives}). The cheapest setting that meets the target within the bound
 * wins; a rebuilt graph that lost is replaced by the winner's graph again (re-measured). A slow
 * setting a rebuild is still to try to beat is compared on the p50 of a spread few of the queries,
 * and measured on all of them only when it wins. Every alternative is reported with why it lost.
 *
 * ### Examples
 * ```ts
 * const { chosen, alternatives } = await chooseIndexSetting({ handle, config, queries, truth, steps, judge, boundMs: 20, cheapMs: 10, … })
 * ```
 */
export async function chooseIndexSetting(ctx: AlternativesContext): Promise<IndexSettingChoice> {
  const tried: LadderStep[] = []
  // A slow setting on this graph is only the one to beat while a rebuild is still to be tried.
  const deferring = ctx.rebuilds.length > 0 && ctx.cheapMs > 0
  let best = await ladder(ctx, undefined, tried, deferring)
  // Cheap enough; or met at the ladder's first step, where a larger graph cannot lower ef_search
  // further (a small tenant, whose exact scan is as fast as any walk) — unless `cheapMs` is 0: always try.
  // A larger graph brings the cost down toward the first step's on this one at best (it costs more
  // per step): when that is within a quarter of the exact scan (half of `cheapMs`), no rebuild pays.
  const noRebuildPays = (choice: IndexChoice) => {
    const firstStep = choice.efSearch === ctx.steps[0] && ctx.cheapMs > 0
    const gainable = tried[0] ? choice.p50Ms - tried[0].p50Ms : Infinity
    return choice.p50Ms <= ctx.cheapMs || firstStep || (ctx.cheapMs > 0 && gainable <= ctx.cheapMs / 2)
  }
  if (best?.provisional && noRebuildPays(best)) best = await settle(ctx, best, tried)
  if (best && noRebuildPays(best)) return { chosen: best, rebuiltWith: undefined, tried, alternatives: [] }
  // None met the target and the walk's cheapest step already costs the exact scan (a small tenant,
  // where the planner scans anyway): no larger graph or binary index can be cheaper — the exact path,
  // without building either (each would only add builds and searches to the tuning).
  const floor = tried[0]?.p50Ms
  if (!best && floor !== undefined && ctx.cheapMs > 0 && floor >= ctx.boundMs)
    return { chosen: undefined, rebuiltWith: undefined, tried, alternatives: [] }
  const rebuilt: Array<{ graph: Graph; buildSeconds: number; found: IndexChoice | undefined }> = []
  for (const [i, graph] of ctx.rebuilds.entries()) {
    const buildSeconds = await ctx.rebuild(graph)
    const found = await ladder(ctx, graph, tried, i < ctx.rebuilds.length - 1)
    rebuilt.push({ graph, buildSeconds, found })
    if (found && (!best || found.p50Ms < best.p50Ms)) best = found
    if (best && best.p50Ms <= ctx.cheapMs) break
  }
  const alternatives: TunedAlternative[] = rebuilt.map(({ graph, buildSeconds, found }) => ({
    kind: 'rebuild',
    ...graph,
    buildSeconds,
    ...settingOf(found),
    outcome: found === undefined ? 'missed the target' : best?.graph === graph ? 'chosen' : 'slower',
  }))
  const built = rebuilt.at(-1)?.graph
  for (const quantized of quantizedAlternatives(ctx.config)) {
    // The binary path a full-vector store lacks is tried on the tenant (built, measured, dropped),
    // unless a rebuilt graph already brought the full-vector index within `cheapMs`.
    const trial = quantized.kind === 'binary-rerank' && quantized.outcome === 'not available' && binaryTrialPossible(ctx.config)
    if (!trial || !ctx.binaryTrial) alternatives.push(quantized)
    else if (best && best.p50Ms <= ctx.cheapMs) alternatives.push(cheapAfterRebuild(best, ctx.cheapMs))
    else alternatives.push(await ctx.binaryTrial({ hnswP50Ms: best?.p50Ms, judge: ctx.judge }))
  }
  if (!built || !best || best.graph === built) return { chosen: await settle(ctx, best, tried), rebuiltWith: built, tried, alternatives }
  // A later rebuild lost: the index goes back to the winner's graph.
  const graph = best.graph ?? ctx.current
  return { chosen: await restore(ctx, best, tried), rebuiltWith: graph, tried, alternatives }
}

/**
 * A provisional choice on the index as it is now, measured on every query: the ladder again from
 * its `ef_search` up (undefined when no step there is accepted within the bound); any other as it is.
 */
async function settle(ctx: AlternativesContext, best: IndexChoice | undefined, tried: LadderStep[]): Promise<IndexChoice | undefined> {
  if (!best?.provisional) return best
  return ladderFrom(ctx, best.efSearch, best.graph, tried)
}

/** The ladder on the index as it is, from `efSearch` up (every query measured at its first step). */
function ladderFrom(
  ctx: AlternativesContext,
  efSearch: number,
  graph: Graph | undefined,
  tried: LadderStep[],
): Promise<IndexChoice | undefined> {
  return ladder({ ...ctx, steps: ctx.steps.filter((s) => s >= efSearch) }, graph, tried)
}

/**
 * Rebuilds the winner's graph (the tenant's index as it was, or an earlier rebuild) after a later
 * rebuild lost to it, and measures it again from the winner's `ef_search` up (a new graph of the
 * same parameters: its levels are random).
 */
async function restore(ctx: AlternativesContext, best: IndexChoice, tried: LadderStep[]): Promise<IndexChoice | undefined> {
  const graph = best.graph ?? ctx.current
  await ctx.rebuild(graph)
  return ladderFrom(ctx, best.efSearch, graph, tried)
}

/**
 * The `ef_search` ladder on the index as it is, in one pass over the queries: every query is
 * searched at the first step, and at each later step only the queries not yet perfect (a query
 * that found all its neighbours at a smaller `ef_search` is taken to find them at a larger one —
 * `ef_search` changes the search, not the index). At each step the per-query recall so far is
 * judged; the first step the judge accepts is measured again on every query (its stated interval
 * and its p50 rest on all of them) and chosen when that measurement is accepted within the bound
 * — a spread {@link MIN_TIMED} of them first: their p50 over the bound rejects it unmeasured
 * further, and with `defer` (a rebuild still to be tried) their p50 over `cheapMs`, still accepted,
 * returns it `provisional` (measured on all by {@link settle} if no rebuild beats it).
 * Ascending, the ladder stops at a step whose p50 exceeds the bound or that is accepted too slowly
 * (none). A step the full measurement does not accept after all is passed over, and later steps
 * are then measured on every query.
 */
async function ladder(
  ctx: AlternativesContext,
  graph: Graph | undefined,
  tried: LadderStep[],
  defer = false,
): Promise<IndexChoice | undefined> {
  const n = ctx.queries.length
  const perQuery = new Array<number>(n).fill(1)
  let active = Array.from({ length: n }, (_, i) => i)
  let full = false
  const record = (efSearch: number, r: { recall: number; lower: number; p50Ms: number; measured: number }) =>
    tried.push({
      efSearch,
      m: graph?.m ?? null,
      efConstruction: graph?.efConstruction ?? null,
      recall: r.recall,
      lower: r.lower,
      p50Ms: r.p50Ms,
      ...(r.measured < n ? { measured: r.measured } : {}),
    })
  for (const efSearch of ctx.steps) {
    const indexes = full ? Array.from({ length: n }, (_, i) => i) : active
    const r = await measure(ctx, efSearch, indexes)
    indexes.forEach((q, j) => (perQuery[q] = r.perQuery[j]!))
    const p50Ms = percentile(r.ms, 50)
    const judged = ctx.judge(perQuery)
    const recall = meanOf(perQuery)
    if (judged.ok && indexes.length < n) {
      // Accepted on the queries still open: measured again on all of them — a spread few first,
      // whose p50 over the bound rejects the step without the rest (judged on MIN_TIMED searches,
      // as the ladder's own stop is: near the exact scan's cost, the step that finds the last
      // queries' neighbours is often one that walks most of the graph).
      const few = await measureFew(ctx, efSearch)
      const sofar = [...perQuery]
      few.indexes.forEach((q, j) => (sofar[q] = few.perQuery[j]!))
      const fewP50 = percentile(few.ms, 50)
      const judgedFew = ctx.judge(sofar)
      const over = few.indexes.length < n && fewP50 > ctx.boundMs
      // With `defer`: accepted, yet slower than `cheapMs` — the one to beat, measured on all only if nothing does.
      const deferred = few.indexes.length < n && defer && fewP50 > ctx.cheapMs && judgedFew.ok
      if (over || deferred) {
        record(efSearch, { recall: meanOf(sofar), lower: judgedFew.lower, p50Ms: fewP50, measured: few.indexes.length })
        if (over) return undefined
        return { efSearch, recall: meanOf(sofar), judged: judgedFew, perQuery: sofar, p50Ms: fewP50, graph, provisional: true }
      }
      const all = await measureRest(ctx, efSearch, few)
      const again = ctx.judge(all.perQuery)
      const allP50 = percentile(all.ms, 50)
      record(efSearch, { recall: meanOf(all.perQuery), lower: again.lower, p50Ms: allP50, measured: n })
      if (again.ok && allP50 <= ctx.boundMs)
        return { efSearch, recall: meanOf(all.perQuery), judged: again, perQuery: all.perQuery, p50Ms: allP50, graph }
      if (again.ok || allP50 > ctx.boundMs) return undefined
      all.perQuery.forEach((v, q) => (perQuery[q] = v))
      full = true
      continue
    }
    record(efSearch, { recall, lower: judged.lower, p50Ms, measured: indexes.length })
    if (judged.ok && p50Ms <= ctx.boundMs) return { efSearch, recall, judged, perQuery: [...perQuery], p50Ms, graph }
    // A larger ef_search only costs more time: stop at the first that meets the target or the bound
    // (the bound judged on a p50 of enough searches: a few open queries time too noisily).
    if (judged.ok || (p50Ms > ctx.boundMs && indexes.length >= MIN_TIMED)) return undefined
    active = active.filter((q) => perQuery[q]! < 1)
    if (active.length === 0 && !full) return undefined // every query perfect, yet not accepted: no step will be
  }
  return undefined
}

/** Searches a step's p50 must rest on before it can stop the ladder at the latency bound. */
const MIN_TIMED = 20

/** A spread {@link MIN_TIMED} of the queries searched at `efSearch` (all of them when there are no more). */
async function measureFew(ctx: AlternativesContext, efSearch: number): Promise<{ indexes: number[]; perQuery: number[]; ms: number[] }> {
  const indexes = spreadIndexes(ctx.queries.length, MIN_TIMED)
  return { indexes, ...(await measure(ctx, efSearch, indexes)) }
}

/** Every query's recall at `efSearch` (in order) and every search's time: the few measured already, and the rest. */
async function measureRest(
  ctx: AlternativesContext,
  efSearch: number,
  few: { indexes: number[]; perQuery: number[]; ms: number[] },
): Promise<{ perQuery: number[]; ms: number[] }> {
  const n = ctx.queries.length
  const perQuery = new Array<number>(n).fill(1)
  few.indexes.forEach((q, j) => (perQuery[q] = few.perQuery[j]!))
  const taken = new Set(few.indexes)
  const rest = Array.from({ length: n }, (_, i) => i).filter((i) => !taken.has(i))
  if (rest.length === 0) return { perQuery, ms: few.ms }
  const tail = await measure(ctx, efSearch, rest)
  rest.forEach((q, j) => (perQuery[q] = tail.perQuery[j]!))
  return { perQuery, ms: [...few.ms, ...tail.ms] }
}

/** `count` of the indexes 0..n-1 spread evenly (all of them when `n` ≤ `count`). */
function spreadIndexes(n: number, count: number): number[] {
  if (n <= count) return Array.from({ length: n }, (_, i) => i)
  return Array.from({ length: count }, (_, j) => Math.floor((j * n) / count))
}

/** The queries at `indexes` searched at `efSearch` (relaxed iterative scan, no exact fallback). */
async function measure(
  ctx: AlternativesContext,
  efSearch: number,
  indexes: readonly number[],
): Promise<{ perQuery: number[]; ms: number[] }> {
  const r = await searchRecall(
    ctx.handle,
    indexes.map((i) => ctx.queries[i]!),
    indexes.map((i) => ctx.truth[i]!),
    10,
    DEFAULT_RECALL_EPSILON,
    { efSearch, iterativeScan: 'relaxed', exactFallback: false },
  )
  return { perQuery: r.perQuery, ms: r.ms }
}

function meanOf(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / Math.max(1, values.length)
}

function settingOf(found: IndexChoice | undefined): Pick<TunedAlternative, 'efSearch' | 'recall' | 'p50Ms'> {
  return found ? { efSearch: found.efSearch, recall: found.recall, p50Ms: found.p50Ms } : { efSearch: null }
}

/** The binary trial skipped: a rebuilt full-vector graph met the target within `cheapMs` (nothing a binary index could gain enough on). */
function cheapAfterRebuild(best: IndexChoice, cheapMs: number): TunedAlternative {
  return {
    kind: 'binary-rerank',
    outcome: 'not needed',
    reason: `not tried: the full-vector index met the target at ${best.p50Ms.toFixed(2)} ms p50 after a rebuild, within the cheap bound (${cheapMs.toFixed(2)} ms)`,
  }
}

/** Whether a binary trial can run on this store: full-vector indexes on a `vector` or `halfvec` column (binary_quantize takes both). */
function binaryTrialPossible(config: ResolvedStoreConfig): boolean {
  return config.quantization === 'none' && (config.vectorType === 'vector' || config.vectorType === 'halfvec')
}

/**
 * The quantized paths, as far as this store has them. A binary-quantized store's index path already
 * is a binary index with re-rank (its `index.rerank`), and a `halfvec` column's exact path already
 * scans half floats; on a store of 4-byte vectors with full-vector indexes neither exists — they
 * are chosen when the store is created (`vectorType`, `index.quantization`), not per tenant.
 *
 * ### Examples
 * ```ts
 * quantizedAlternatives(config) // [{ kind: 'binary-rerank', outcome: 'not available', reason: '…' }, …]
 * ```
 */
export function quantizedAlternatives(config: ResolvedStoreConfig): TunedAlternative[] {
  const binary: TunedAlternative =
    config.quantization === 'binary'
      ? {
          kind: 'binary-rerank',
          outcome: 'not needed',
          reason: `the index path is a binary index re-ranked ×${config.rerank}: measured above`,
        }
      : {
          kind: 'binary-rerank',
          outcome: 'not available',
          reason:
            "the store's HNSW indexes hold full vectors (a binary index with re-rank is chosen at creation: index: { quantization: 'binary' })",
        }
  const half: TunedAlternative =
    config.vectorType === 'halfvec'
      ? { kind: 'halfvec-exact', outcome: 'not needed', reason: 'the exact path scans the halfvec column: it is the exact alternative' }
      : {
          kind: 'halfvec-exact',
          outcome: 'not available',
          reason: "the column holds 4-byte floats (a halfvec exact scan needs a halfvec column: vectorType: 'halfvec' at creation)",
        }
  return [binary, half]
}
