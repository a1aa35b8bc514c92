import { sql } from 'kysely'
import {
  countRecall,
  PgVectorStore,
  recallOf,
  type Database,
  type FilterStrategy,
  type IngestRow,
  type OptimizeResult,
  type RecallCount,
  type ServerInfo,
  type TenantStore,
  type TenantTuning,
} from '../../../src/index.js'
import type { FilterTuningReport } from '../../../src/bench-kit.js'
import { machineInfo, type MachineInfo } from '../../report/machine.js'
import { percentile } from '../../report/stats.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { correlatedLadder, filterLadder, LADDER_FIELDS, withCorrelatedField, withLadderFields, type LadderFilter } from './filter-ladder.js'
import type { FilterPeer, FilterPeers } from './filter-peers.js'
import { dropBenchSchema } from '../../report/bench-cleanup.js'

/** Parameters of `rag-bench filters`. */
export interface FilterBenchConfig {
  /** Chunks of the measured tenant (others, small, share the table). */
  chunks: number
  dim: number
  queries: number
  seed: string
  /** `hnsw.ef_search` of the fixed-ef walk strategy. */
  fixedEf: number
  /** pgscale's `exactBelow` (matching rows scored exactly); absent: the tenant's tuned threshold. */
  exactBelow?: number
  keep: boolean
  /** Add the hard tenant (widely spread vectors: a high tuned `ef_search`) beside the easy one. */
  hard?: boolean
  /** Add the correlated ladder: a field that follows the topic, ranges of whole topics. */
  correlated?: boolean
  /** Add pgscale's filtered search as it was before issue #35 (1,000 rows, 40 candidates, no selectivity scaling), side by side. */
  before?: boolean
  /**
   * Searches sent per measured tenant before `optimize()`, as an app's traffic (other seeded
   * queries than the measured ones), each with a filter of the ladder in turn or none: the query
   * sample keeps them, and tuning runs on them. 0: tuning on chunk samples and synthetic filters.
   */
  traffic?: number
}

/** One measured tenant: its unfiltered search and exact scan, and what `optimize()` recorded for it. */
export interface TenantSection {
  id: string
  chunks: number
  efSearch: number | null
  unfiltered: StrategyResult
  /** The unfiltered exact scan (`exactSearch`), for the index's worth: p50 ÷ this. */
  exact: StrategyResult
  tuning: TenantTuning | null
  /** What `optimize()` measured of its filtered path: each budget tried, each filter at the choice. */
  filterTuning?: Pick<FilterTuningReport, 'tried' | 'filters'>
}

/** One strategy (or peer) on one filter. */
export interface StrategyResult {
  recallAt10: number
  p50Ms: number
  p95Ms: number
  /** Searches that returned fewer than min(10, matching rows). */
  short: number
  /** The first search of the filter: for pgscale's choice, the one that also counted its rows. */
  firstMs: number
}

/** One rung of the ladder. */
export interface FilterResult {
  label: string
  kind: LadderFilter['kind']
  target: number
  /** Measured: matching rows / the tenant's rows. */
  selectivity: number
  matching: number
  strategies: Record<string, StrategyResult>
  /** Peers whose filter language cannot say this filter. */
  unsupported: string[]
}

/** What `rag-bench filters --json` writes. */
export interface FilterBenchReport {
  machine: MachineInfo
  server: ServerInfo
  config: FilterBenchConfig
  method: string
  tenant: TenantSection
  /** With `hard`: the hard tenant, its ladder (and correlated ladder) and targets. */
  hard?: { tenant: TenantSection; filters: FilterResult[]; targets: FilterBenchReport['targets'] }
  /** Seconds `optimize()` took (index builds, tuning with its rebuilds and filtered tuning). */
  optimizeSeconds?: number
  indexes: {
    load: { withoutSeconds: number; withSeconds: number; ratio: number }
    built: Array<{ field: string; type: string; seconds: number; bytes: number }>
  }
  filters: FilterResult[]
  /** Per strategy: the rungs below 0.98 recall, and above 3× the unfiltered p50. */
  targets: Record<string, { recallMisses: string[]; latencyMisses: string[] }>
  peers: Array<{ name: string; version: string } | { name: string; skipped: string }>
}

export const FILTER_SCHEMA = 'pgscale_filters'
const TENANT = 'big'
const HARD = 'hard'
export const STRATEGIES: Array<{ name: string; strategy: FilterStrategy; fixedEf?: boolean; before?: boolean }> = [
  { name: 'pgscale (auto)', strategy: 'auto' },
  { name: 'always exact', strategy: 'exact' },
  { name: 'HNSW walk, fixed ef', strategy: 'index', fixedEf: true },
]
/** pgscale as it filtered before issue #35: the tenant's ef_search, 40 candidates, 1,000 rows exact, no selectivity scaling. */
const BEFORE: (typeof STRATEGIES)[number] = { name: 'pgscale before #35', strategy: 'auto', before: true }

/** The hard tenant: 24 topics of its own, spread widely in all 128 directions (HNSW at ef 40 finds ~0.78 of the top 10). */
export function hardSpec(c: Pick<FilterBenchConfig, 'seed' | 'dim' | 'chunks'>): CorpusSpec {
  return {
    seed: c.seed,
    dim: c.dim,
    tenants: [{ id: HARD, chunks: c.chunks }],
    topics: 'per-tenant',
    topicsPerTenant: 24,
    noise: 4,
    topicRank: c.dim,
  }
}

/**
 * `rag-bench filters`: one large tenant (own HNSW index, tuned by `optimize()`) among small ones,
 * metadata fields independent of the vectors declared with `createMetadataIndex`, and the ladder
 * of filters from 0.1% to 50%; per filter and strategy (pgscale's choice, always exact, the HNSW
 * walk at a fixed ef — and each installed peer) the tie-aware recall@10 against the exact filtered
 * answer, p50/p95 and searches short of k. Also what the metadata indexes cost a bulk load.
 *
 * ### Examples
 * ```ts
 * const report = await runFilterBench(db, info, config, [], console.error)
 * ```
 */
export async function runFilterBench(
  db: Database,
  server: ServerInfo,
  c: FilterBenchConfig,
  { peers, skipped }: FilterPeers,
  log: (line: string) => void,
): Promise<FilterBenchReport> {
  await dropBenchSchema(db, FILTER_SCHEMA)
  await sql.raw(`create schema ${FILTER_SCHEMA}`).execute(db)
  const spec: CorpusSpec = {
    seed: c.seed,
    dim: c.dim,
    tenants: [{ id: TENANT, chunks: c.chunks }, ...Array.from({ length: 10 }, (_, i) => ({ id: `small-${i}`, chunks: 300 }))],
    topics: 'shared',
    duplicates: 0.05,
    topicSkew: 1,
  }
  const hard = hardSpec(c)
  const rows = function* () {
    for (const row of generateCorpus(spec)) yield fields(withLadderFields(row, c.seed), 8)
    if (c.hard) for (const row of generateCorpus(hard)) yield fields(withLadderFields(row, c.seed), 24)
  }
  const fields = (row: IngestRow, topics: number) => (c.correlated ? withCorrelatedField(row, c.seed, topics) : row)
  try {
    const { store, load } = await loadPhase(db, c, rows, peers, log)
    if (c.correlated) await store.createMetadataIndex('ct', 'number')
    log('building HNSW indexes and tuning with optimize()')
    await store.createIndex({ parallelWorkers: 1 })
    const ladder = [...filterLadder(), ...(c.correlated ? correlatedLadder() : [])]
    if (c.traffic) {
      log(`traffic: ${c.traffic} searches per measured tenant (the query sample keeps them and their filters)`)
      for (const [s, id] of [[spec, TENANT], ...(c.hard ? [[hard, HARD] as const] : [])] as const) {
        const sent = queryVectors(s, id, c.queries + c.traffic).slice(c.queries)
        const filters = [undefined, ...ladder.map((r) => r.filter)]
        for (const [i, q] of sent.entries()) await store.forTenant(id).search(q, { k: 10, filter: filters[i % filters.length] })
      }
    }
    const t0 = performance.now()
    const optimized = await store.optimize({ ownIndexAbove: 1000, dropUnusedSharedIndex: true })
    const optimizeSeconds = (performance.now() - t0) / 1000
    for (const note of optimized.notes) log(`optimize: ${note}`)
    await sql.raw(`vacuum analyze ${FILTER_SCHEMA}.chunks`).execute(db)
    const tuned = (id: string) => filterTuningOf(optimized, id)
    const easy = await measureTenant(store, spec, TENANT, ladder, c, peers, log, tuned(TENANT))
    const hardOut = c.hard ? await measureTenant(store, hard, HARD, ladder, c, [], log, tuned(HARD)) : undefined
    return {
      machine: machineInfo(),
      server,
      config: c,
      method:
        `one tenant of ${c.chunks.toLocaleString('en-US')} chunks (own HNSW index, m 16, ef_construction 64, tuned by optimize() at its defaults; the shared index dropped by it once no tenant is planned on it) among 10 of 300, ${c.dim}-d shared-topic synthetic embeddings; ` +
        (c.hard
          ? `beside it the hard tenant: ${c.chunks.toLocaleString('en-US')} chunks spread widely around 24 topics of its own (noise 4 in all ${c.dim} directions), the same index and tuning; `
          : '') +
        `metadata fields drawn per row from its own seed, independent of the vectors; every field declared with createMetadataIndex; ` +
        (c.correlated
          ? `the correlated field ct follows the topic (a range keeps whole topics: the nearest matching rows of most queries lie in other clusters); `
          : '') +
        `${c.queries} seeded queries per filter, every strategy on each query in turn (the order rotating), from one client (a filter repeats across its queries, as an ACL does: pgscale's choice counts the matching rows on the first and remembers the branch for a minute; "first" is that query); tie-aware recall@10 against exactSearch with the same filter (a hit: within the exact 10th distance + 0.001); ` +
        `"short": searches returning fewer than min(10, matching rows); pgscale's exactBelow ${c.exactBelow ?? "the tenant's tuned threshold"}; the fixed-ef walk at ef_search ${c.fixedEf}; ` +
        (c.traffic
          ? `before optimize(), ${c.traffic} other seeded queries per measured tenant sent as traffic, each with a filter of the ladder in turn or none (tuning runs on them: the query sample); `
          : 'no traffic before optimize() (tuning on chunk samples and synthetic filters); ') +
        (c.before
          ? `"pgscale before #35": the tenant's tuned ef_search, 40 candidates, 1,000 rows scored exactly, no selectivity scaling (the same queries, interleaved by filter); `
          : '') +
        `load cost: the same rows bulk-loaded (binary COPY) into a table without and one with the metadata indexes`,
      tenant: easy.tenant,
      ...(hardOut ? { hard: hardOut } : {}),
      optimizeSeconds,
      indexes: load,
      filters: easy.filters,
      targets: easy.targets,
      peers: [...peers.map((p) => ({ name: p.name, version: p.version })), ...skipped],
    }
  } finally {
    for (const peer of peers) await peer.close().catch(() => {})
    if (!c.keep) await dropBenchSchema(db, FILTER_SCHEMA)
  }
}

/** One tenant: its unfiltered search and exact scan, then every rung of the ladder. */
async function measureTenant(
  store: PgVectorStore,
  spec: CorpusSpec,
  id: string,
  ladder: readonly LadderFilter[],
  c: FilterBenchConfig,
  peers: FilterPeer[],
  log: (line: string) => void,
  filterTuning?: TenantSection['filterTuning'],
): Promise<{ tenant: TenantSection; filters: FilterResult[]; targets: FilterBenchReport['targets'] }> {
  const tuning = (await store.tenantTuning()).find((t) => t.tenantId === id) ?? null
  const tenant = store.forTenant(id)
  const queries = queryVectors(spec, id, c.queries)
  const truth = (q: Float32Array) => tenant.exactSearch(q, { k: 10 })
  const both = await measureSideBySide(queries, { search: (q) => tenant.search(q, { k: 10 }), exact: truth }, truth, 10)
  const [unfiltered, exact] = [both.search!, both.exact!]
  log(
    `${id}: unfiltered recall ${unfiltered.recallAt10.toFixed(3)}, p50 ${unfiltered.p50Ms.toFixed(2)} ms, exact ${exact.p50Ms.toFixed(2)} ms ` +
      `(ef_search ${tuning?.efSearch ?? 'default'}${tuning?.indexM ? `, rebuilt m ${tuning.indexM} / ef_construction ${tuning.indexEfConstruction}` : ''}; ` +
      `filtered budget ${JSON.stringify(tuning?.filter ?? null)})`,
  )
  const filters: FilterResult[] = []
  for (const rung of ladder) filters.push(await measureRung(tenant, id, rung, queries, c, tuning, peers, log))
  const section = {
    id,
    chunks: spec.tenants[0]!.chunks,
    efSearch: tuning?.efSearch ?? null,
    unfiltered,
    exact,
    tuning,
    ...(filterTuning ? { filterTuning } : {}),
  }
  return { tenant: section, filters, targets: targets(filters, unfiltered.p50Ms) }
}

/** What `optimize()` measured of a tenant's filtered path: each budget tried, each filter at the choice. */
function filterTuningOf(optimized: OptimizeResult, id: string): TenantSection['filterTuning'] {
  const f = optimized.tuning.tenants.find((t) => t.tenantId === id)?.filter
  return f ? { tried: f.tried, filters: f.filters } : undefined
}

/**
 * What the metadata indexes cost a bulk load: the same rows into a table without them (then each
 * index built after the load, timed and sized) and into the measured store with them declared first.
 */
async function loadPhase(
  db: Database,
  c: FilterBenchConfig,
  rows: () => Iterable<IngestRow>,
  peers: FilterPeer[],
  log: (line: string) => void,
): Promise<{ store: PgVectorStore; load: FilterBenchReport['indexes'] }> {
  log(
    `loading ${(c.chunks * (c.hard ? 2 : 1) + 3000).toLocaleString('en-US')} chunks twice: without and with the ${LADDER_FIELDS.length} metadata indexes`,
  )
  const bare = await PgVectorStore.open(db, { table: `${FILTER_SCHEMA}.bare`, dimensions: c.dim, fullText: false })
  const without = await bare.bulkIngest(rows())
  const store = await PgVectorStore.open(db, { table: `${FILTER_SCHEMA}.chunks`, dimensions: c.dim, fullText: false })
  for (const [field, type] of LADDER_FIELDS) await store.createMetadataIndex(field, type)
  const withIndexes = await store.bulkIngest(rows())
  const built: FilterBenchReport['indexes']['built'] = []
  for (const [field, type] of LADDER_FIELDS) {
    const t0 = performance.now()
    const index = await bare.createMetadataIndex(field, type)
    const { rows: size } = await sql<{
      b: string
    }>`select pg_relation_size(${`${FILTER_SCHEMA}.${index.name}`}::regclass)::text as b`.execute(db)
    built.push({ field, type, seconds: (performance.now() - t0) / 1000, bytes: Number(size[0]?.b ?? 0) })
  }
  await sql.raw(`drop table ${FILTER_SCHEMA}.bare`).execute(db)
  for (const peer of peers) {
    log(`loading the same rows into ${peer.name}`)
    await peer.load(rows())
  }
  log(`loads: ${without.seconds.toFixed(1)} s without, ${withIndexes.seconds.toFixed(1)} s with metadata indexes`)
  const load = { withoutSeconds: without.seconds, withSeconds: withIndexes.seconds, ratio: withIndexes.seconds / without.seconds }
  return { store, load: { load, built } }
}

/** One rung: the exact filtered truths once, then every strategy and peer on the same queries. */
async function measureRung(
  tenant: TenantStore,
  id: string,
  rung: LadderFilter,
  queries: readonly Float32Array[],
  c: FilterBenchConfig,
  tuning: TenantTuning | null,
  peers: FilterPeer[],
  log: (line: string) => void,
): Promise<FilterResult> {
  const matching = await tenant.count(rung.filter)
  const truths = new Map<Float32Array, Hit[]>()
  for (const q of queries) truths.set(q, await tenant.exactSearch(q, { k: 10, filter: rung.filter }))
  const truth = async (q: Float32Array) => truths.get(q)!
  const expected = Math.min(10, matching)
  const runs: Record<string, (q: Float32Array) => Promise<Hit[]>> = {}
  for (const s of [...STRATEGIES, ...(c.before ? [BEFORE] : [])]) {
    const options = {
      k: 10,
      filter: rung.filter,
      filterStrategy: s.strategy,
      ...(c.exactBelow !== undefined && !s.before ? { exactBelow: c.exactBelow } : {}),
      ...(s.fixedEf ? { efSearch: c.fixedEf } : {}),
      // An explicit efSearch (the tuned one) turns off the tenant's filtered budget and selectivity scaling.
      ...(s.before ? { exactBelow: 1000, filterCandidates: 40, ...(tuning?.efSearch ? { efSearch: tuning.efSearch } : {}) } : {}),
    }
    runs[s.name] = (q) => tenant.search(q, options)
  }
  const unsupported: string[] = []
  for (const peer of peers) {
    if (peer.search(id, queries[0]!, rung.filter) === undefined) unsupported.push(peer.name)
    else runs[peer.name] = (q) => peer.search(id, q, rung.filter)!
  }
  const strategies = await measureSideBySide(queries, runs, truth, expected)
  log(
    `${id} ${rung.label.padEnd(24)} ${matching.toString().padStart(6)} rows: ` +
      Object.entries(strategies)
        .map(([name, r]) => `${name} ${r.recallAt10.toFixed(3)} @ ${r.p50Ms.toFixed(2)} ms`)
        .join(' | '),
  )
  return { label: rung.label, kind: rung.kind, target: rung.target, selectivity: matching / c.chunks, matching, strategies, unsupported }
}

type Hit = { documentId: string; chunkIndex: number; distance: number }

/**
 * Every strategy on the same queries, side by side: for each query each strategy in turn (the
 * order rotating by query), so a burst of load on a shared machine falls on all of them alike.
 */
async function measureSideBySide(
  queries: readonly Float32Array[],
  runs: Record<string, (q: Float32Array) => Promise<Hit[]>>,
  truth: (q: Float32Array) => Promise<Hit[]>,
  expected: number,
): Promise<Record<string, StrategyResult>> {
  const names = Object.keys(runs)
  const acc = new Map(names.map((n) => [n, { counts: [] as RecallCount[], ms: [] as number[], short: 0 }]))
  for (const [i, q] of queries.entries()) {
    const exact = await truth(q)
    for (let j = 0; j < names.length; j++) {
      const name = names[(i + j) % names.length]!
      const a = acc.get(name)!
      const t0 = performance.now()
      const got = await runs[name]!(q)
      a.ms.push(performance.now() - t0)
      if (got.length < expected) a.short++
      a.counts.push(countRecall(exact, got))
    }
  }
  return Object.fromEntries(
    names.map((n) => {
      const a = acc.get(n)!
      return [
        n,
        {
          recallAt10: recallOf(a.counts).recall,
          p50Ms: percentile(a.ms, 50),
          p95Ms: percentile(a.ms, 95),
          short: a.short,
          firstMs: a.ms[0] ?? Number.NaN,
        },
      ]
    }),
  )
}

/** Which rungs miss the targets (recall@10 ≥ 0.98; p50 ≤ 3× the unfiltered search's), per strategy. */
export function targets(filters: readonly FilterResult[], unfilteredP50: number): FilterBenchReport['targets'] {
  const out: FilterBenchReport['targets'] = {}
  for (const name of new Set(filters.flatMap((f) => Object.keys(f.strategies)))) {
    out[name] = {
      recallMisses: filters.filter((f) => (f.strategies[name]?.recallAt10 ?? 0) < 0.98).map((f) => f.label),
      latencyMisses: filters.filter((f) => (f.strategies[name]?.p50Ms ?? Infinity) > 3 * unfilteredP50).map((f) => f.label),
    }
  }
  return out
}
