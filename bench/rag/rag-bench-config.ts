import { MAX_HNSW_DIMENSIONS, MAX_VECTOR_DIMENSIONS } from '../../src/bench-kit.js'
import { PHASES, type Phase } from './rag-report.js'
import type { TenantSize } from '../synthetic/corpus.js'
import type { CorpusDir } from './corpus-dir.js'
import { equalTenants, mixTotal, parseTenantMix, tenantsOf, TenantMixError } from './tenant-mix.js'

/** The validated configuration of a run. */
export interface RagBenchConfig {
  chunks: number
  tenants: TenantSize[]
  mix: string
  dim: number
  chunksPerDoc: number
  writers: number
  topics: 'shared' | 'per-tenant'
  index: 'shared' | 'tiered' | 'both'
  m: number
  efConstruction: number
  efSearch: number[]
  queries: number
  /** Share of boilerplate near-duplicate chunks in the synthetic corpus. */
  duplicates: number
  /** Zipf exponent of documents over a tenant's topics in the synthetic corpus. */
  topicSkew: number
  seed: string
  phases: ReadonlySet<Phase>
  keep: boolean
  showProgress: boolean
  /** A corpus of the user's own (`--corpus DIR`) instead of the synthetic one. */
  corpus?: CorpusDir
}

/** The options as commander hands them over (strings where the user typed them). */
export interface RagBenchCliOptions {
  chunks?: string
  tenants?: string
  tenantMix?: string
  dim: string
  chunksPerDoc: string
  writers: string
  topics: string
  index: string
  m: string
  efConstruction: string
  efSearch: string
  queries: string
  seed: string
  phases?: string
  /** `--corpus DIR` (read by the CLI; here it only turns the queries phase on by default). */
  corpus?: string
  keep?: boolean
  duplicates?: string
  topicSkew?: string
}

/** A bad option; the CLI prints the message as one line and exits 2. */
export class RagBenchOptionError extends Error {}

function int(name: string, value: string, min: number, max: number): number {
  const n = Number(value)
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new RagBenchOptionError(
      `${name} must be an integer from ${min.toLocaleString('en-US')} to ${max.toLocaleString('en-US')}, got "${value}"`,
    )
  }
  return n
}

function share(name: string, value: string, min: number, max: number): number {
  const n = Number(value)
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || n < min || n > max)
    throw new RagBenchOptionError(`${name} must be a number from ${min} to ${max}, got "${value}"`)
  return n
}

/**
 * Validates rag-bench's options and resolves the tenant shape. `--tenant-mix` with explicit sizes
 * defines the chunk count; `--chunks` then must agree or be left out. Default: 20,000 chunks over
 * 20 equal tenants.
 *
 * ### Examples
 * ```ts
 * resolveRagBenchConfig({ ...defaults, chunks: '300000', tenantMix: '1000x300' }).tenants.length // 1000
 * ```
 */
export function resolveRagBenchConfig(o: RagBenchCliOptions, showProgress = false): RagBenchConfig {
  const dim = int('--dim', o.dim, 1, MAX_VECTOR_DIMENSIONS)
  const phases = new Set<Phase>()
  // The queries phase runs by default on a corpus of your own (--corpus); on the synthetic corpus when asked.
  const defaults = PHASES.filter((p) => p !== 'queries' || o.corpus !== undefined)
  for (const p of (o.phases ?? defaults.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(PHASES as readonly string[]).includes(p)) throw new RagBenchOptionError(`unknown phase "${p}": use ${PHASES.join(', ')}`)
    phases.add(p as Phase)
  }
  if (!['shared', 'tiered', 'both'].includes(o.index))
    throw new RagBenchOptionError(`--index must be shared, tiered or both, got "${o.index}"`)
  if (!['shared', 'per-tenant'].includes(o.topics))
    throw new RagBenchOptionError(`--topics must be shared or per-tenant, got "${o.topics}"`)
  const needsHnsw = ['index', 'ingest-indexed', 'search'].some((p) => phases.has(p as Phase))
  if (needsHnsw && dim > MAX_HNSW_DIMENSIONS) {
    throw new RagBenchOptionError(
      `--dim ${dim} is above pgvector's HNSW limit of ${MAX_HNSW_DIMENSIONS} dimensions (vectors allow up to ${MAX_VECTOR_DIMENSIONS}, but cannot be indexed)`,
    )
  }
  const efSearch = o.efSearch.split(',').map((s) => int('--ef-search', s.trim(), 1, 1000))
  const m = int('--m', o.m, 2, 100)
  const efConstruction = int('--ef-construction', o.efConstruction, Math.max(4, 2 * m), 1000)

  let chunks = o.chunks === undefined ? undefined : int('--chunks', o.chunks, 1, 100_000_000)
  let mixLabel: string
  let tenants
  try {
    if (o.tenantMix !== undefined && o.tenants !== undefined) throw new RagBenchOptionError('give --tenants or --tenant-mix, not both')
    if (o.tenantMix !== undefined) {
      const mix = parseTenantMix(o.tenantMix)
      const total = mixTotal(mix)
      if (total !== undefined && chunks !== undefined && chunks !== total) {
        throw new RagBenchOptionError(
          `--tenant-mix ${o.tenantMix} adds up to ${total.toLocaleString('en-US')} chunks, but --chunks is ${chunks.toLocaleString('en-US')}`,
        )
      }
      chunks = total ?? chunks ?? 20_000
      tenants = tenantsOf(mix, chunks)
      mixLabel = o.tenantMix
    } else {
      chunks ??= 20_000
      const count = o.tenants === undefined ? Math.min(20, chunks) : int('--tenants', o.tenants, 1, chunks)
      tenants = equalTenants(count, chunks)
      mixLabel = `${count} equal tenants`
    }
  } catch (err) {
    if (err instanceof TenantMixError) throw new RagBenchOptionError(err.message)
    throw err
  }
  return {
    chunks: tenants.reduce((s, t) => s + t.chunks, 0),
    tenants,
    mix: mixLabel,
    dim,
    chunksPerDoc: int('--chunks-per-doc', o.chunksPerDoc, 1, 10_000),
    writers: int('--writers', o.writers, 1, 256),
    topics: o.topics as RagBenchConfig['topics'],
    index: o.index as RagBenchConfig['index'],
    m,
    efConstruction,
    efSearch: [...new Set(efSearch)].sort((a, b) => a - b),
    queries: int('--queries', o.queries, 1, 100_000),
    duplicates: share('--duplicates', o.duplicates ?? '0.05', 0, 0.5),
    topicSkew: share('--topic-skew', o.topicSkew ?? '1', 0, 4),
    seed: o.seed,
    phases,
    keep: Boolean(o.keep),
    showProgress,
  }
}
