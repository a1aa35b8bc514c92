import type { ResolvedStoreConfig } from '../config/index.js'
import type { Embedding } from '../ingest/index.js'
import type { TunedAlternative } from '../schema/index.js'
import type { SearchResult, TenantStore } from '../tenant/index.js'
import { percentile, searchRecall } from './measure-recall.js'
import { DEFAULT_RECALL_EPSILON } from './recall.js'

/** An HNSW graph's build parameters. */
export interface Graph {
  m: number
  efConstruction: number
}

/** A setting that met the target: its `ef_search` on a graph (undefined: the tenant's index as it was). */
export interface IndexChoice {
  efSearch: number
  recall: number
  p50Ms: number
  graph: Graph | undefined
}

/** One measured step of the `ef_search` ladder. */
export interface LadderStep {
  efSearch: number
  m: number | null
  efConstruction: number | null
  recall: number
  p50Ms: number
}

/** What choosing the tenant's index setting needs. */
export interface AlternativesContext {
  handle: TenantStore
  config: ResolvedStoreConfig
  queries: readonly Embedding[]
  truth: readonly SearchResult[][]
  steps: readonly number[]
  /** Recall a setting must reach on the sample. */
  required: number
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
 * const { chosen, alternatives } = await chooseIndexSetting({ handle, config, queries, truth, steps, required: 0.9851, boundMs: 20, cheapMs: 10, … })
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
 * The `ef_search` ladder on the index as it is: ascending, stopping at the first step that meets
 * `required` within the bound (the choice) or that meets it too slowly or exceeds the bound (none).
 */
async function ladder(ctx: AlternativesContext, graph: Graph | undefined, tried: LadderStep[]): Promise<IndexChoice | undefined> {
  for (const efSearch of ctx.steps) {
    const r = await searchRecall(ctx.handle, ctx.queries, ctx.truth, 10, DEFAULT_RECALL_EPSILON, {
      efSearch,
      iterativeScan: 'relaxed',
      exactFallback: false,
    })
    const p50Ms = percentile(r.ms, 50)
    tried.push({ efSearch, m: graph?.m ?? null, efConstruction: graph?.efConstruction ?? null, recall: r.recall, p50Ms })
    if (r.recall >= ctx.required && p50Ms <= ctx.boundMs) return { efSearch, recall: r.recall, p50Ms, graph }
    // A larger ef_search only costs more time: stop at the first that meets the target or the bound.
    if (r.recall >= ctx.required || p50Ms > ctx.boundMs) return undefined
  }
  return undefined
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
