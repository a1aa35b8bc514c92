import type { ResolvedStoreConfig } from '../config/index.js'
import type { Embedding } from '../ingest/index.js'
import type { TunedAlternative } from '../schema/index.js'
import type { SearchResult, TenantStore } from '../tenant/index.js'
import { percentile, searchRecall } from './measure-recall.js'
import { DEFAULT_RECALL_EPSILON } from './recall.js'
import { studentT } from './recall-bound.js'

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
}

/** One measured step of the `ef_search` ladder. */
export interface LadderStep {
  efSearch: number
  m: number | null
  efConstruction: number | null
  /** Mean per-query recall over every tuning query. */
  recall: number
  /** The one-sided 95% lower bound the target is judged on (0 when the step stopped early). */
  lower?: number
  /** The step stopped after this many queries: its mean was credibly below the target. */
  stoppedAt?: number
  p50Ms: number
}

/** What choosing the tenant's index setting needs. */
export interface AlternativesContext {
  handle: TenantStore
  config: ResolvedStoreConfig
  queries: readonly Embedding[]
  truth: readonly SearchResult[][]
  steps: readonly number[]
  /** Judges a setting's per-query recall (in the order of `queries`) against the target. */
  judge(perQuery: readonly number[]): RecallJudgement
  /** The target: a step whose mean so far is credibly below it stops early (absent: every step measured to the end). */
  target?: number
  /** The slowest p50 a setting may have (the exact scan's, by default). */
  boundMs: number
  /** Above this p50, the cheapest setting is near-exhaustive: the alternatives are tried (`cheapFraction` × the exact p50). */
  cheapMs: number
  rebuilds: readonly Graph[]
  /** The graph the tenant's index has now (restored if a rebuild loses to it). */
  current: Graph
  /** Rebuilds the tenant's index with a graph; resolves to the seconds it took. */
  rebuild(graph: Graph): Promise<number>
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
 * wins; a rebuilt graph that lost is replaced by the winner's graph again (re-measured). Every
 * alternative is reported with why it lost.
 *
 * ### Examples
 * ```ts
 * const { chosen, alternatives } = await chooseIndexSetting({ handle, config, queries, truth, steps, judge, boundMs: 20, cheapMs: 10, … })
 * ```
 */
export async function chooseIndexSetting(ctx: AlternativesContext): Promise<IndexSettingChoice> {
  const tried: LadderStep[] = []
  let best = await ladder(ctx, undefined, tried)
  // Cheap enough; or met at the ladder's first step, where a larger graph cannot lower ef_search
  // further (a small tenant, whose exact scan is as fast as any walk) — unless `cheapMs` is 0: always try.
  const firstStep = best?.efSearch === ctx.steps[0] && ctx.cheapMs > 0
  if (best && (best.p50Ms <= ctx.cheapMs || firstStep)) return { chosen: best, rebuiltWith: undefined, tried, alternatives: [] }
  const rebuilt: Array<{ graph: Graph; buildSeconds: number; found: IndexChoice | undefined }> = []
  for (const graph of ctx.rebuilds) {
    const buildSeconds = await ctx.rebuild(graph)
    const found = await ladder(ctx, graph, tried)
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
  alternatives.push(...quantizedAlternatives(ctx.config))
  if (!built || !best || best.graph === built) return { chosen: best, rebuiltWith: built, tried, alternatives }
  // A later rebuild lost: the index goes back to the winner's graph.
  const graph = best.graph ?? ctx.current
  return { chosen: await restore(ctx, best, tried), rebuiltWith: graph, tried, alternatives }
}

/**
 * Rebuilds the winner's graph (the tenant's index as it was, or an earlier rebuild) after a later
 * rebuild lost to it, and measures it again from the winner's `ef_search` up (a new graph of the
 * same parameters: its levels are random).
 */
async function restore(ctx: AlternativesContext, best: IndexChoice, tried: LadderStep[]): Promise<IndexChoice | undefined> {
  const graph = best.graph ?? ctx.current
  await ctx.rebuild(graph)
  return ladder({ ...ctx, steps: ctx.steps.filter((s) => s >= best.efSearch) }, graph, tried)
}

/**
 * The `ef_search` ladder on the index as it is: ascending, stopping at the first step the judge
 * accepts within the bound (the choice) or that it accepts too slowly or exceeds the bound (none).
 */
async function ladder(ctx: AlternativesContext, graph: Graph | undefined, tried: LadderStep[]): Promise<IndexChoice | undefined> {
  for (const efSearch of ctx.steps) {
    const r = await stepRecall(ctx, efSearch)
    const p50Ms = percentile(r.ms, 50)
    const judged: RecallJudgement = r.stoppedAt ? { ok: false, lower: 0, mean: r.recall, queries: r.stoppedAt } : ctx.judge(r.perQuery)
    tried.push({
      efSearch,
      m: graph?.m ?? null,
      efConstruction: graph?.efConstruction ?? null,
      recall: r.recall,
      lower: judged.lower,
      p50Ms,
      ...(r.stoppedAt ? { stoppedAt: r.stoppedAt } : {}),
    })
    if (judged.ok && p50Ms <= ctx.boundMs) return { efSearch, recall: r.recall, judged, perQuery: r.perQuery, p50Ms, graph }
    // A larger ef_search only costs more time: stop at the first that meets the target or the bound.
    if (judged.ok || p50Ms > ctx.boundMs) return undefined
  }
  return undefined
}

/** Queries measured between looks at whether a step is hopeless. */
const LOOK_EVERY = 50

/**
 * One step's recall on the tuning queries, measured in slices of {@link LOOK_EVERY}: a step whose
 * mean so far is credibly below the target (its one-sided 99% upper bound, over the queries so
 * far) stops there (`stoppedAt`) — a larger `ef_search` will be measured anyway, and a failing step
 * need not be measured to the end. The model's queries come one family after another per anchor,
 * so every slice holds each family.
 */
async function stepRecall(
  ctx: AlternativesContext,
  efSearch: number,
): Promise<{ recall: number; perQuery: number[]; ms: number[]; stoppedAt?: number }> {
  const perQuery: number[] = []
  const ms: number[] = []
  for (let from = 0; from < ctx.queries.length; from += LOOK_EVERY) {
    const to = Math.min(ctx.queries.length, from + LOOK_EVERY)
    const r = await searchRecall(ctx.handle, ctx.queries.slice(from, to), ctx.truth.slice(from, to), 10, DEFAULT_RECALL_EPSILON, {
      efSearch,
      iterativeScan: 'relaxed',
      exactFallback: false,
    })
    perQuery.push(...r.perQuery)
    ms.push(...r.ms)
    const mean = perQuery.reduce((a, b) => a + b, 0) / perQuery.length
    if (to < ctx.queries.length && ctx.target !== undefined && upperBound(perQuery, mean) < ctx.target)
      return { recall: mean, perQuery, ms, stoppedAt: perQuery.length }
  }
  return { recall: perQuery.reduce((a, b) => a + b, 0) / Math.max(1, perQuery.length), perQuery, ms }
}

/** A one-sided 99% upper bound of the mean of `values` (Student t). */
function upperBound(values: readonly number[], mean: number): number {
  const n = values.length
  if (n < 2) return 1
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1)
  return mean + studentT(0.99, n - 1) * Math.sqrt(variance / n)
}

function settingOf(found: IndexChoice | undefined): Pick<TunedAlternative, 'efSearch' | 'recall' | 'p50Ms'> {
  return found ? { efSearch: found.efSearch, recall: found.recall, p50Ms: found.p50Ms } : { efSearch: null }
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
