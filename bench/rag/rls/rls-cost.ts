import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { connect, PgVectorStore, type Database, type Embedding } from '../../../src/index.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { progress } from '../../report/progress.js'
import { summarize, type Percentiles } from '../../report/stats.js'

/** What `rag-bench rls` is asked to measure. */
export interface RlsCostOptions {
  /** Chunks of the tenant with its own HNSW index. */
  bigTenantChunks: number
  /** Tenants of `smallTenantChunks` each (served by the primary key and an exact sort). */
  smallTenants: number
  smallTenantChunks: number
  dim: number
  /** Searches per kind and mode (each mode's search alternates with the other's). */
  searches: number
}

/** One search kind, without and with row-level security, as the app's runtime role. */
export interface RlsCostRow {
  kind: string
  none: Percentiles
  rls: Percentiles
  /** rls p50 ÷ none p50. */
  ratio: number
}

/** The report of `rag-bench rls`. */
export interface RlsCostReport {
  rows: RlsCostRow[]
  method: string
}

const KINDS = [
  'search, tenant with its own index',
  'search, small tenant',
  "search with a filter ({ kind: 'invoice' })",
  'count()',
] as const

/**
 * The cost of `isolation: 'rls'`: two stores of the same rows, one with row-level security and
 * one without, searched by the app's runtime role (DML rights only: RLS applies to it, not to the
 * owner), every search of one mode followed by the same search in the other, for a tenant with its
 * own HNSW index, a small one, a filtered search and a count.
 *
 * ### Examples
 * ```ts
 * const report = await measureRlsCost(db, url, { bigTenantChunks: 20_000, smallTenants: 50, smallTenantChunks: 200, dim: 384, searches: 400 }, log)
 * ```
 */
export async function measureRlsCost(owner: Database, url: string, o: RlsCostOptions, log: (line: string) => void): Promise<RlsCostReport> {
  const role = `rls_bench_${randomBytes(3).toString('hex')}`
  const password = randomBytes(12).toString('hex')
  const spec: CorpusSpec = {
    seed: 'rls-bench',
    dim: o.dim,
    tenants: [
      { id: 'big', chunks: o.bigTenantChunks },
      ...Array.from({ length: o.smallTenants }, (_, i) => ({ id: `small-${i}`, chunks: o.smallTenantChunks })),
    ],
  }
  await sql.raw(`create role ${role} login password '${password}'`).execute(owner)
  try {
    for (const isolation of ['none', 'rls'] as const) await prepareStore(owner, spec, isolation, role, log)
    const u = new URL(url)
    u.username = role
    u.password = password
    const app = await connect(u.toString(), { maxConnections: 1, requireVector: false })
    try {
      return { rows: await timeKinds(app, spec, o, log), method: methodOf(o) }
    } finally {
      await app.close()
    }
  } finally {
    await sql
      .raw(
        `drop table if exists rls_bench_none, rls_bench_rls, rls_bench_none_tenant_tuning, rls_bench_rls_tenant_tuning, rls_bench_none_query_sample, rls_bench_rls_query_sample, rls_bench_none_recall_monitor, rls_bench_rls_recall_monitor cascade`,
      )
      .execute(owner)
    await sql.raw(`delete from pgscale_object_version where object like 'store:public.rls_bench_%'`).execute(owner)
    await sql.raw(`drop owned by ${role}; drop role ${role}`).execute(owner)
  }
}

async function prepareStore(
  owner: Database,
  spec: CorpusSpec,
  isolation: 'none' | 'rls',
  role: string,
  log: (line: string) => void,
): Promise<void> {
  const config = { table: `rls_bench_${isolation}`, dimensions: spec.dim, isolation, querySample: false as const }
  await PgVectorStore.migration(config, { runtimeRole: role }).up(owner)
  const store = await PgVectorStore.open(owner, config)
  const total = spec.tenants.reduce((n, t) => n + t.chunks, 0)
  const bar = progress(`load ${config.table}`, total, { enabled: process.stderr.isTTY })
  const started = performance.now()
  await store.bulkIngest(generateCorpus(spec), { onProgress: ({ rows }) => bar.update(rows) })
  bar.done(`${total.toLocaleString('en-US')} rows in ${((performance.now() - started) / 1000).toFixed(0)} s`)
  log(`${config.table}: ${total} rows loaded; building the big tenant's index`)
  await store.createMetadataIndex('kind', 'string')
  await store.optimize({ ownIndexAbove: Math.max(1000, spec.tenants[1]?.chunks ?? 0), targetRecall: null })
  await sql.raw(`vacuum analyze ${config.table}`).execute(owner)
  await store.close()
}

async function timeKinds(app: Database, spec: CorpusSpec, o: RlsCostOptions, log: (line: string) => void): Promise<RlsCostRow[]> {
  const stores = {
    none: await PgVectorStore.open(app, { table: 'rls_bench_none', dimensions: spec.dim, migrate: false, querySample: false }),
    rls: await PgVectorStore.open(app, {
      table: 'rls_bench_rls',
      dimensions: spec.dim,
      isolation: 'rls',
      migrate: false,
      querySample: false,
    }),
  }
  const rows: RlsCostRow[] = []
  for (const kind of KINDS) {
    const tenant = kind.includes('small') ? 'small-3' : 'big'
    const queries = queryVectors(spec, tenant, o.searches)
    const run = (store: PgVectorStore, q: Embedding) => {
      const t = store.forTenant(tenant)
      if (kind === 'count()') return t.count()
      return t.search(q, { k: 10, ...(kind.includes('filter') ? { filter: { kind: 'invoice' } } : {}) })
    }
    for (const q of queries.slice(0, 20)) for (const s of [stores.none, stores.rls]) await run(s, q)
    const times = { none: [] as number[], rls: [] as number[] }
    for (const [i, q] of queries.entries()) {
      for (const mode of i % 2 ? (['rls', 'none'] as const) : (['none', 'rls'] as const)) {
        const started = performance.now()
        await run(stores[mode], q)
        times[mode].push(performance.now() - started)
      }
    }
    const none = summarize(times.none)
    const rls = summarize(times.rls)
    rows.push({ kind, none, rls, ratio: rls.p50 / none.p50 })
    log(`${kind}: p50 ${none.p50.toFixed(2)} ms without RLS, ${rls.p50.toFixed(2)} ms with (${(rls.p50 / none.p50).toFixed(3)}×)`)
  }
  await stores.none.close()
  await stores.rls.close()
  return rows
}

function methodOf(o: RlsCostOptions): string {
  return (
    `two stores of the same seeded rows (one tenant of ${o.bigTenantChunks} chunks with its own HNSW index after optimize(), ` +
    `${o.smallTenants} of ${o.smallTenantChunks}; ${o.dim} dims; a metadata index on kind), one with isolation: 'rls'; searched ` +
    `by a runtime role with DML rights only over one connection, ${o.searches} queries per kind, each query sent to one store ` +
    `then the other (the order alternating), after 20 warm-up pairs; p50 of each mode and their ratio`
  )
}
