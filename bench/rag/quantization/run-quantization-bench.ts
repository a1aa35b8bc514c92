import { sql } from 'kysely'
import {
  countRecall,
  PgVectorStore,
  recallOf,
  type Database,
  type Quantization,
  type RecallCount,
  type ServerInfo,
  type VectorType,
} from '../../../src/index.js'
import { machineInfo, type MachineInfo } from '../../report/machine.js'
import { percentile } from '../../report/stats.js'
import { generateCorpus, queryVectors, type CorpusSpec, type TenantSize } from '../../synthetic/corpus.js'
import { sampleByClass } from '../tenant-classes.js'
import type { TenantClass } from '../rag-report.js'
import { dropBenchSchema } from '../../report/bench-cleanup.js'

/** One storage option measured: the column type, the index's quantization, the re-rank factor. */
export interface QuantizationOption {
  vectorType: VectorType
  quantization: Quantization
  rerank: number
}

/** Parameters of `rag-bench quantization`. */
export interface QuantizationBenchConfig {
  tenants: TenantSize[]
  mixLabel: string
  dim: number
  seed: string
  options: QuantizationOption[]
  efSearch: number
  queries: number
  keep: boolean
}

/** What one option measured. */
export interface OptionResult extends QuantizationOption {
  label: string
  ingest: { seconds: number; chunksPerSecond: number }
  build: { seconds: number; indexes: number }
  bytes: { heap: number; hnsw: number }
  classes: Array<{ cls: TenantClass; tenants: number; recallAt10: number; p50Ms: number; p95Ms: number }>
}

/** What `rag-bench quantization --json` writes. */
export interface QuantizationReport {
  machine: MachineInfo
  server: ServerInfo
  config: Omit<QuantizationBenchConfig, 'tenants'> & { chunks: number; tenantCount: number }
  method: string
  options: OptionResult[]
  /** Per tenant class, the option with the smallest HNSW indexes whose recall@10 ≥ 0.98 (none: null). */
  cheapest: Array<{ cls: TenantClass; option: string | null; recallAt10: number | null; hnswBytes: number | null }>
}

export const QUANT_SCHEMA = 'pgscale_quantization'

/**
 * Loads the same corpus once per option (a table each; re-rank variants of one quantization share
 * its table), gives every tenant its own HNSW index the way `optimize()` would (tenants of ≥ 1,000
 * chunks; smaller ones take the exact path), and measures per option: ingest rate, build time, heap
 * and index bytes, and per tenant class the tie-aware recall@10 against `exactSearch` on the full
 * vectors with p50/p95 of the same searches.
 *
 * ### Examples
 * ```ts
 * const report = await runQuantizationBench(db, info, config, console.error)
 * ```
 */
export async function runQuantizationBench(
  db: Database,
  server: ServerInfo,
  c: QuantizationBenchConfig,
  log: (line: string) => void,
): Promise<QuantizationReport> {
  await dropBenchSchema(db, QUANT_SCHEMA)
  await sql.raw(`create schema ${QUANT_SCHEMA}`).execute(db)
  const spec: CorpusSpec = { seed: c.seed, dim: c.dim, tenants: c.tenants, topics: 'shared', duplicates: 0.05 }
  const built = new Map<
    string,
    { store: PgVectorStore; ingest: OptionResult['ingest']; build: OptionResult['build']; bytes: OptionResult['bytes'] }
  >()
  const options: OptionResult[] = []
  try {
    for (const option of c.options) {
      const table = `${QUANT_SCHEMA}.${option.vectorType}_${option.quantization}`
      let base = built.get(table)
      if (!base) {
        base = await loadOption(db, table, spec, option, log)
        built.set(table, base)
      }
      const store = await PgVectorStore.open(db, {
        table,
        dimensions: c.dim,
        vectorType: option.vectorType,
        index: { quantization: option.quantization, rerank: option.rerank },
        defaultEfSearch: c.efSearch,
        fullText: false,
      })
      const label = optionLabel(option)
      log(`${label}: measuring recall and latency`)
      options.push({
        ...option,
        label,
        ingest: base.ingest,
        build: base.build,
        bytes: base.bytes,
        classes: await measureClasses(store, spec, c),
      })
    }
  } finally {
    if (!c.keep) await dropBenchSchema(db, QUANT_SCHEMA)
  }
  return {
    machine: machineInfo(),
    server,
    config: { ...withoutTenants(c), chunks: c.tenants.reduce((s, t) => s + t.chunks, 0), tenantCount: c.tenants.length },
    method: `the same seeded shared-topic corpus loaded once per option with bulkIngest (binary COPY); every tenant of ≥ 1,000 chunks given its own partial HNSW index (m 16, ef_construction 64), smaller tenants on the exact path; per tenant class up to 4 tenants × ${c.queries} seeded queries at ef_search ${c.efSearch} (relaxed iterative scan): tie-aware recall@10 against exactSearch on the full vectors (a hit: within the exact 10th distance + 0.001), p50/p95 of those searches; bytes from pg_relation_size`,
    options,
    cheapest: cheapestPerClass(options),
  }
}

function withoutTenants(c: QuantizationBenchConfig): Omit<QuantizationBenchConfig, 'tenants'> {
  const { tenants: _tenants, ...rest } = c
  return rest
}

/** `vector`, `vector + halfvec index`, `vector + binary index, rerank ×4`, `halfvec`… */
export function optionLabel(o: QuantizationOption): string {
  const index = o.quantization === 'none' ? '' : ` + ${o.quantization} index`
  return `${o.vectorType}${index}${o.quantization === 'binary' ? `, rerank ×${o.rerank}` : ''}`
}

async function loadOption(db: Database, table: string, spec: CorpusSpec, option: QuantizationOption, log: (line: string) => void) {
  const store = await PgVectorStore.open(db, {
    table,
    dimensions: spec.dim,
    vectorType: option.vectorType,
    index: { quantization: option.quantization, rerank: option.rerank },
    fullText: false,
  })
  log(`${table}: loading ${spec.tenants.reduce((s, t) => s + t.chunks, 0).toLocaleString('en-US')} chunks`)
  const ingested = await store.bulkIngest(generateCorpus(spec))
  const started = performance.now()
  let indexes = 0
  for (const tenant of spec.tenants.filter((t) => t.chunks >= 1000)) {
    await store.createTenantIndex(tenant.id, { parallelWorkers: 1 })
    indexes++
  }
  const seconds = (performance.now() - started) / 1000
  await sql.raw(`analyze ${table}`).execute(db)
  const stats = await store.stats()
  const hnsw = Object.entries(stats.bytes.indexes)
    .filter(([name]) => !name.endsWith('_pkey'))
    .reduce((s, [, b]) => s + b, 0)
  log(
    `${table}: ${ingested.rowsPerSecond.toFixed(0)} chunks/s; ${indexes} tenant indexes in ${seconds.toFixed(1)} s, ${(hnsw / 1024 ** 2).toFixed(1)} MB`,
  )
  return {
    store,
    ingest: { seconds: ingested.seconds, chunksPerSecond: ingested.rowsPerSecond },
    build: { seconds, indexes },
    bytes: { heap: stats.bytes.heap + stats.bytes.toast, hnsw },
  }
}

async function measureClasses(store: PgVectorStore, spec: CorpusSpec, c: QuantizationBenchConfig): Promise<OptionResult['classes']> {
  const out: OptionResult['classes'] = []
  for (const { cls, tenants } of sampleByClass(c.tenants, 4)) {
    const counts: RecallCount[] = []
    const ms: number[] = []
    const perTenant = Math.max(1, Math.ceil(c.queries / tenants.length))
    for (const tenant of tenants) {
      const handle = store.forTenant(tenant.id)
      for (const q of queryVectors(spec, tenant.id, perTenant)) {
        const t0 = performance.now()
        const got = await handle.search(q, { k: 10, efSearch: c.efSearch, iterativeScan: 'relaxed' })
        ms.push(performance.now() - t0)
        counts.push(countRecall(await handle.exactSearch(q, { k: 10 }), got))
      }
    }
    out.push({ cls, tenants: tenants.length, recallAt10: recallOf(counts).recall, p50Ms: percentile(ms, 50), p95Ms: percentile(ms, 95) })
  }
  return out
}

function cheapestPerClass(options: OptionResult[]): QuantizationReport['cheapest'] {
  const classes = [...new Set(options.flatMap((o) => o.classes.map((x) => x.cls)))]
  return classes.map((cls) => {
    const ok = options
      .map((o) => ({ o, r: o.classes.find((x) => x.cls === cls)! }))
      .filter(({ r }) => r.recallAt10 >= 0.98)
      .sort((a, b) => a.o.bytes.hnsw - b.o.bytes.hnsw || a.r.p50Ms - b.r.p50Ms)
    const best = ok[0]
    return { cls, option: best?.o.label ?? null, recallAt10: best?.r.recallAt10 ?? null, hnswBytes: best?.o.bytes.hnsw ?? null }
  })
}
