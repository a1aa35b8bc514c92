import { sql } from 'kysely'
import {
  countRecall,
  PgVectorStore,
  recallOf,
  type Database,
  type FilterStrategy,
  type IngestRow,
  type RecallCount,
  type ServerInfo,
  type TenantStore,
} from '../../../src/index.js'
import { machineInfo, type MachineInfo } from '../../report/machine.js'
import { percentile } from '../../report/stats.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { filterLadder, LADDER_FIELDS, withLadderFields, type LadderFilter } from './filter-ladder.js'
import type { FilterPeer, FilterPeers } from './filter-peers.js'

/** Parameters of `rag-bench filters`. */
export interface FilterBenchConfig {
  /** Chunks of the measured tenant (others, small, share the table). */
  chunks: number
  dim: number
  queries: number
  seed: string
  /** `hnsw.ef_search` of the fixed-ef walk strategy. */
  fixedEf: number
  /** pgscale's `exactBelow` (matching rows scored exactly). */
  exactBelow: number
  keep: boolean
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
  tenant: { id: string; chunks: number; efSearch: number | null; unfiltered: StrategyResult }
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
export const STRATEGIES: Array<{ name: string; strategy: FilterStrategy; fixedEf?: boolean }> = [
  { name: 'pgscale (auto)', strategy: 'auto' },
  { name: 'always exact', strategy: 'exact' },
  { name: 'HNSW walk, fixed ef', strategy: 'index', fixedEf: true },
]

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
  await sql.raw(`drop schema if exists ${FILTER_SCHEMA} cascade; create schema ${FILTER_SCHEMA}`).execute(db)
  const spec: CorpusSpec = {
    seed: c.seed,
    dim: c.dim,
    tenants: [{ id: TENANT, chunks: c.chunks }, ...Array.from({ length: 10 }, (_, i) => ({ id: `small-${i}`, chunks: 300 }))],
    topics: 'shared',
    duplicates: 0.05,
    topicSkew: 1,
  }
  const rows = function* () {
    for (const row of generateCorpus(spec)) yield withLadderFields(row, c.seed)
  }
  try {
    const { store, load } = await loadPhase(db, c, rows, peers, log)
    log('building HNSW indexes and tuning with optimize()')
    await store.createIndex({ parallelWorkers: 1 })
    await store.optimize({ ownIndexAbove: 1000 })
    await sql.raw(`vacuum analyze ${FILTER_SCHEMA}.chunks`).execute(db)
    const tuning = (await store.tenantTuning()).find((t) => t.tenantId === TENANT)
    const tenant = store.forTenant(TENANT)
    const queries = queryVectors(spec, TENANT, c.queries)
    const unfiltered = await measure(
      queries,
      (q) => tenant.search(q, { k: 10 }),
      (q) => tenant.exactSearch(q, { k: 10 }),
      10,
    )
    log(
      `unfiltered: recall ${unfiltered.recallAt10.toFixed(3)}, p50 ${unfiltered.p50Ms.toFixed(2)} ms (ef_search ${tuning?.efSearch ?? 'default'})`,
    )
    const filters: FilterResult[] = []
    for (const rung of filterLadder()) filters.push(await measureRung(tenant, rung, queries, c, peers, log))
    return {
      machine: machineInfo(),
      server,
      config: c,
      method:
        `one tenant of ${c.chunks.toLocaleString('en-US')} chunks (own HNSW index, m 16, ef_construction 64, tuned by optimize() at its defaults) among 10 of 300, ${c.dim}-d shared-topic synthetic embeddings; ` +
        `metadata fields drawn per row from its own seed, independent of the vectors; every field declared with createMetadataIndex; ` +
        `${c.queries} seeded queries per filter, run one after another from one client (a filter repeats across its queries, as an ACL does: pgscale's choice counts the matching rows on the first and remembers the branch for a minute; "first" is that query); tie-aware recall@10 against exactSearch with the same filter (a hit: within the exact 10th distance + 0.001); ` +
        `"short": searches returning fewer than min(10, matching rows); pgscale's exactBelow ${c.exactBelow}; the fixed-ef walk at ef_search ${c.fixedEf}; load cost: the same rows bulk-loaded (binary COPY) into a table without and one with the metadata indexes`,
      tenant: { id: TENANT, chunks: c.chunks, efSearch: tuning?.efSearch ?? null, unfiltered },
      indexes: load,
      filters,
      targets: targets(filters, unfiltered.p50Ms),
      peers: [...peers.map((p) => ({ name: p.name, version: p.version })), ...skipped],
    }
  } finally {
    for (const peer of peers) await peer.close().catch(() => {})
    if (!c.keep) await sql.raw(`drop schema if exists ${FILTER_SCHEMA} cascade`).execute(db)
  }
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
  log(`loading ${(c.chunks + 3000).toLocaleString('en-US')} chunks twice: without and with the ${LADDER_FIELDS.length} metadata indexes`)
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
  rung: LadderFilter,
  queries: readonly Float32Array[],
  c: FilterBenchConfig,
  peers: FilterPeer[],
  log: (line: string) => void,
): Promise<FilterResult> {
  const matching = await tenant.count(rung.filter)
  const truths = new Map<Float32Array, Hit[]>()
  for (const q of queries) truths.set(q, await tenant.exactSearch(q, { k: 10, filter: rung.filter }))
  const truth = async (q: Float32Array) => truths.get(q)!
  const expected = Math.min(10, matching)
  const strategies: Record<string, StrategyResult> = {}
  for (const s of STRATEGIES) {
    const options = {
      k: 10,
      filter: rung.filter,
      filterStrategy: s.strategy,
      exactBelow: c.exactBelow,
      ...(s.fixedEf ? { efSearch: c.fixedEf } : {}),
    }
    strategies[s.name] = await measure(queries, (q) => tenant.search(q, options), truth, expected)
  }
  const unsupported: string[] = []
  for (const peer of peers) {
    if (peer.search(TENANT, queries[0]!, rung.filter) === undefined) unsupported.push(peer.name)
    else strategies[peer.name] = await measure(queries, (q) => peer.search(TENANT, q, rung.filter)!, truth, expected)
  }
  log(
    `${rung.label.padEnd(24)} ${matching.toString().padStart(6)} rows: ` +
      Object.entries(strategies)
        .map(([name, r]) => `${name} ${r.recallAt10.toFixed(3)} @ ${r.p50Ms.toFixed(2)} ms`)
        .join(' | '),
  )
  return { label: rung.label, kind: rung.kind, target: rung.target, selectivity: matching / c.chunks, matching, strategies, unsupported }
}

type Hit = { documentId: string; chunkIndex: number; distance: number }

async function measure(
  queries: readonly Float32Array[],
  run: (q: Float32Array) => Promise<Hit[]>,
  truth: (q: Float32Array) => Promise<Hit[]>,
  expected: number,
): Promise<StrategyResult> {
  const counts: RecallCount[] = []
  const ms: number[] = []
  let short = 0
  for (const q of queries) {
    const t0 = performance.now()
    const got = await run(q)
    ms.push(performance.now() - t0)
    if (got.length < expected) short++
    counts.push(countRecall(await truth(q), got))
  }
  return { recallAt10: recallOf(counts).recall, p50Ms: percentile(ms, 50), p95Ms: percentile(ms, 95), short, firstMs: ms[0] ?? Number.NaN }
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
