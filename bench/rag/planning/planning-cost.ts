import { sql } from 'kysely'
import pg from 'pg'
import { median } from '../../report/stats.js'
import type { Database } from '../../../src/index.js'

/** One point of the planning-cost curve. */
export interface PlanningPoint {
  layout: 'one table' | 'hash partitions'
  /** Partial HNSW indexes (one per tenant) on the table, or across its partitions. */
  indexes: number
  /** Median planning time (EXPLAIN SUMMARY) on a warm connection, ms. */
  warmPlanMs: { ownIndex: number; noIndex: number }
  /** Median planning time of the first statement on a fresh connection, ms. */
  freshPlanMs: { ownIndex: number; noIndex: number }
  /** Median end-to-end search (one message, warm connection), ms. */
  searchMs: { ownIndex: number; noIndex: number }
  /** Whether the plan used the tenant's own index (for the tenant that has one). */
  usesOwnIndex: boolean
}

/** Parameters of the planning-cost bench. */
export interface PlanningCostOptions {
  /** Index counts to measure at, ascending (each built on top of the previous). */
  counts: number[]
  /** Chunks per tenant. */
  rowsPerTenant: number
  dim: number
  /** Hash partitions of the partitioned layout (0: skip it). */
  partitions: number
  /** Statements per median. */
  samples: number
}

const SCHEMA = 'pgscale_planning'
const ID = (i: number) => `t${String(i).padStart(6, '0')}`

/**
 * The planning cost of per-tenant partial HNSW indexes: tenants of `rowsPerTenant` chunks, each
 * given its own partial index (`WHERE tenant_id = '…'`), measured at every count of `counts` — in
 * one table, and (with `partitions`) in a table hash-partitioned by tenant with each index on its
 * tenant's partition, where the planner prunes to one partition before it looks at indexes.
 *
 * ### Examples
 * ```ts
 * const curve = await measurePlanningCost(db, url, { counts: [10, 100, 1000], rowsPerTenant: 20, dim: 8, partitions: 64, samples: 50 }, console.error)
 * ```
 */
export async function measurePlanningCost(
  db: Database,
  url: string,
  o: PlanningCostOptions,
  log: (line: string) => void,
): Promise<PlanningPoint[]> {
  const points: PlanningPoint[] = []
  const layouts: Array<PlanningPoint['layout']> = o.partitions > 0 ? ['one table', 'hash partitions'] : ['one table']
  try {
    for (const layout of layouts) {
      const tenants = Math.max(...o.counts) + 1
      await createTable(db, layout, tenants, o)
      let built = 0
      for (const count of o.counts) {
        const started = performance.now()
        for (; built < count; built++) await createTenantIndex(db, layout, ID(built))
        await sql.raw(`analyze ${SCHEMA}.chunks`).execute(db)
        log(`${layout}: ${count} partial HNSW indexes (+${((performance.now() - started) / 1000).toFixed(1)} s to build); measuring`)
        points.push(await measurePoint(url, layout, count, ID(0), ID(tenants - 1), o))
      }
    }
    return points
  } finally {
    await sql.raw(`drop schema if exists ${SCHEMA} cascade`).execute(db)
  }
}

async function createTable(db: Database, layout: PlanningPoint['layout'], tenants: number, o: PlanningCostOptions): Promise<void> {
  await sql.raw(`drop schema if exists ${SCHEMA} cascade; create schema ${SCHEMA}`).execute(db)
  const columns = `tenant_id text collate "C" not null, document_id text collate "C" not null, chunk_index int not null, embedding vector(${o.dim}) not null, primary key (tenant_id, document_id, chunk_index)`
  if (layout === 'one table') {
    await sql.raw(`create table ${SCHEMA}.chunks (${columns})`).execute(db)
  } else {
    await sql.raw(`create table ${SCHEMA}.chunks (${columns}) partition by hash (tenant_id)`).execute(db)
    for (let p = 0; p < o.partitions; p++) {
      await sql
        .raw(`create table ${SCHEMA}.chunks_p${p} partition of ${SCHEMA}.chunks for values with (modulus ${o.partitions}, remainder ${p})`)
        .execute(db)
    }
  }
  await sql
    .raw(
      `insert into ${SCHEMA}.chunks select 't' || lpad((g / ${o.rowsPerTenant})::text, 6, '0'), 'd' || (g % ${o.rowsPerTenant}), 0,
         (select array_agg(sin(g * 7 + d))::real[]::vector(${o.dim}) from generate_series(1, ${o.dim}) d)
       from generate_series(0, ${tenants * o.rowsPerTenant - 1}) g`,
    )
    .execute(db)
}

/** The tenant's partial index: on the table, or on the one partition that holds the tenant. */
async function createTenantIndex(db: Database, layout: PlanningPoint['layout'], tenant: string): Promise<void> {
  let target = `${SCHEMA}.chunks`
  if (layout === 'hash partitions') {
    const { rows } = await sql<{ part: string }>`
      select tableoid::regclass::text as part from ${sql.raw(`${SCHEMA}.chunks`)} where tenant_id = ${tenant} limit 1`.execute(db)
    target = rows[0]!.part
  }
  await sql.raw(`create index on ${target} using hnsw (embedding vector_cosine_ops) where tenant_id = '${tenant}'`).execute(db)
}

function searchText(tenant: string, dim: number): string {
  const vector = `[${Array.from({ length: dim }, (_, d) => Math.cos(d + 1).toFixed(4)).join(',')}]`
  return `select document_id, chunk_index from ${SCHEMA}.chunks where tenant_id = '${tenant}' order by embedding <=> '${vector}' limit 10`
}

async function planningMs(client: pg.Client, text: string): Promise<{ ms: number; indexes: string[] }> {
  const { rows } = await client.query(`explain (summary, format json) ${text}`)
  const plan = rows[0]['QUERY PLAN'][0]
  const indexes: string[] = []
  const walk = (node: { 'Index Name'?: string; Plans?: unknown[] }) => {
    if (node['Index Name']) indexes.push(node['Index Name'])
    for (const child of node.Plans ?? []) walk(child as typeof node)
  }
  walk(plan.Plan)
  return { ms: plan['Planning Time'], indexes }
}

async function measurePoint(
  url: string,
  layout: PlanningPoint['layout'],
  count: number,
  indexed: string,
  plain: string,
  o: PlanningCostOptions,
): Promise<PlanningPoint> {
  const own = searchText(indexed, o.dim)
  const none = searchText(plain, o.dim)
  const warm = new pg.Client({ connectionString: url })
  await warm.connect()
  try {
    const first = await planningMs(warm, own)
    const warmOwn: number[] = []
    const warmNone: number[] = []
    const searchOwn: number[] = []
    const searchNone: number[] = []
    for (let i = 0; i < o.samples; i++) {
      warmOwn.push((await planningMs(warm, own)).ms)
      warmNone.push((await planningMs(warm, none)).ms)
      let t0 = performance.now()
      await warm.query(own)
      searchOwn.push(performance.now() - t0)
      t0 = performance.now()
      await warm.query(none)
      searchNone.push(performance.now() - t0)
    }
    const freshOwn: number[] = []
    const freshNone: number[] = []
    for (let i = 0; i < Math.min(10, o.samples); i++) {
      for (const [text, into] of [
        [own, freshOwn],
        [none, freshNone],
      ] as const) {
        const fresh = new pg.Client({ connectionString: url })
        await fresh.connect()
        into.push((await planningMs(fresh, text)).ms)
        await fresh.end()
      }
    }
    return {
      layout,
      indexes: count,
      warmPlanMs: { ownIndex: median(warmOwn), noIndex: median(warmNone) },
      freshPlanMs: { ownIndex: median(freshOwn), noIndex: median(freshNone) },
      searchMs: { ownIndex: median(searchOwn), noIndex: median(searchNone) },
      usesOwnIndex: first.indexes.some((name) => name.includes('embedding')),
    }
  } finally {
    await warm.end()
  }
}
