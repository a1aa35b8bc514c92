import { sql } from 'kysely'
import pg from 'pg'

/**
 * The regression gate's hot paths, written against pgscale's public API only and handed the
 * module to use: the gate runs the same scenarios on the base commit's tree and on the head's,
 * both loaded into one process (bench/perf-gate/run-gate.ts), so nothing here imports src/.
 */

/** pgscale's public API, as one tree's `src/index.ts` exports it. */
export type Pgscale = typeof import('../../src/index.js')

/** One hot path: `run(i)` is one call; the gate times blocks of calls. */
export interface GateScenario {
  name: string
  /** What one call is, for the report. */
  what: string
  run(i: number): Promise<unknown>
}

/** The vector size of the gate's store: the common 384 (validation and the text form are per float). */
export const GATE_DIMENSIONS = 384
const CHUNKS_PER_TENANT = 300
const QUERIES = 64
const KINDS = ['invoice', 'contract', 'memo', 'faq'] as const

/** A small seeded generator (mulberry32): the same data on both sides. */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function vector(next: () => number): number[] {
  const v = new Array<number>(GATE_DIMENSIONS)
  for (let i = 0; i < GATE_DIMENSIONS; i++) v[i] = next() * 2 - 1
  return v
}

function* corpus(tenant: string, seed: number) {
  const next = random(seed)
  for (let i = 0; i < CHUNKS_PER_TENANT; i++) {
    yield {
      tenantId: tenant,
      documentId: `doc-${Math.floor(i / 4)}`,
      chunkIndex: i % 4,
      content: `chunk ${i} of ${tenant}: terms invoice payment contract clause ${i % 17}`,
      embedding: vector(next),
      metadata: { kind: KINDS[i % KINDS.length], year: 2020 + (i % 6), n: i },
    }
  }
}

/** Everything a side prepared, and how to let go of it. */
export interface PreparedGate {
  scenarios: GateScenario[]
  close(): Promise<void>
}

/**
 * Prepares one side's data in the (fresh) database at `url` with that side's pgscale `P`, and
 * returns the gate's scenarios: `search` (k 10, the tenant's defaults), `search.filtered`, `refreshAt`
 * and `replicas.route` (a ReplicaSet choosing a node for a tenant read after its write).
 *
 * ### Examples
 * ```ts
 * const { scenarios, close } = await prepareGate(await import(indexOfTree), url)
 * ```
 */
export async function prepareGate(P: Pgscale, url: string): Promise<PreparedGate> {
  const db = await P.connect(url, { maxConnections: 4 })
  const store = await P.PgVectorStore.open(db, { table: 'gate_chunks', dimensions: GATE_DIMENSIONS })
  await store.bulkIngest([...corpus('acme', 1), ...corpus('globex', 2)])
  await sql`analyze gate_chunks`.execute(db)
  const next = random(3)
  const queries = Array.from({ length: QUERIES }, () => vector(next))
  const acme = store.forTenant('acme')
  const rollup = await prepareRollup(P, db)
  const route = await prepareRouting(P, db, url)
  const q = (i: number) => queries[i % QUERIES]!
  const scenarios: GateScenario[] = [
    { name: 'search', what: "forTenant('acme').search(q, { k: 10 })", run: (i) => acme.search(q(i), { k: 10 }) },
    {
      name: 'search.filtered',
      what: "search(q, { k: 10, filter: { kind: 'invoice', year: { $gte: 2022 } }, filterStrategy: 'index' }) (the walk, one statement)",
      // The walk alone, no exact fallback, no selectivity estimate: the same statements on both
      // sides. Under 'auto' the path depended on each database's HNSW graph (pgvector draws node
      // levels at random): where a walk ran out, the exact fallback added a statement, and identical
      // trees measured 1.27-1.48x apart.
      run: (i) =>
        acme.search(q(i), {
          k: 10,
          filter: { kind: 'invoice', year: { $gte: 2022 } },
          filterStrategy: 'index',
          exactFallback: false,
          selectivityScale: 1,
        }),
    },
    { name: 'refreshAt', what: 'rollup.refreshAt(db, { tenantId: 2, moment }) (a ~80-row bucket)', run: rollup.run },
    { name: 'replicas.route', what: "replicas.read('acme', {}, run) after a noted write (routing only)", run: route.run },
  ]
  return {
    scenarios,
    close: async () => {
      await route.close()
      await store.close()
      await db.close()
    },
  }
}

/** An expenses table of 20 tenants × 12 months and its monthly rollup; one call refreshes one bucket. */
async function prepareRollup(P: Pgscale, db: Awaited<ReturnType<Pgscale['connect']>>): Promise<{ run: () => Promise<void> }> {
  await sql`create table gate_expenses (tenant_id bigint not null, paid_at timestamptz not null, category varchar(64) not null,
      amount numeric(14,2) not null, status text not null)`.execute(db)
  await sql`insert into gate_expenses
      select 1 + i % 20, timestamptz '2025-01-01 00:00Z' + (i * 1571 % 525600) * interval '1 minute',
        (array['travel','meals','office','software','hardware'])[1 + i % 5], (i % 9973) / 100.0,
        case when i % 11 = 0 then 'cancelled' else 'paid' end
      from generate_series(1, 20000) as i`.execute(db)
  await sql`create index on gate_expenses (tenant_id, paid_at)`.execute(db)
  await sql`analyze gate_expenses`.execute(db)
  const target = P.rollupTable('gate_monthly', {
    groupBy: { category: 'varchar(64)' },
    measures: { total: 'numeric(14,2)', count: 'integer' },
    tenantType: 'bigint',
  })
  await target.create(db)
  const rollup = new P.MonthlyRollup({
    source: 'gate_expenses',
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)`, count: sql`count(*)` },
    where: sql`status <> 'cancelled'`,
    zone: 'America/Mexico_City',
  })
  const moment = new Date('2025-06-15T12:00:00Z')
  return { run: () => rollup.refreshAt(db, { tenantId: 2, moment }) }
}

/**
 * A ReplicaSet over the primary and one "standby" that is the same server seen through a
 * `search_path` whose first schema answers the replay-position functions as a caught-up standby
 * would (functions there shadow pg_catalog's when pg_catalog is listed after it): routing runs its
 * real code — the noted write, the replay position read every `positionCacheMs`, the choice — with
 * no second server. One call routes one read of a tenant that wrote; the read itself does nothing.
 */
async function prepareRouting(
  P: Pgscale,
  db: Awaited<ReturnType<Pgscale['connect']>>,
  url: string,
): Promise<{ run: () => Promise<unknown>; close: () => Promise<void> }> {
  await sql`create schema gate_standby`.execute(db)
  await sql
    .raw(
      `
    create function gate_standby.pg_is_in_recovery() returns boolean language sql as 'select true';
    create function gate_standby.pg_last_wal_replay_lsn() returns pg_lsn language sql as 'select pg_catalog.pg_current_wal_insert_lsn()';
    create function gate_standby.pg_last_wal_receive_lsn() returns pg_lsn language sql as 'select pg_catalog.pg_current_wal_insert_lsn()';
    create function gate_standby.pg_last_xact_replay_timestamp() returns timestamptz language sql as 'select pg_catalog.now()';
  `,
    )
    .execute(db)
  const standby = new pg.Pool({ connectionString: url, max: 2, options: '-c search_path=gate_standby,pg_catalog,public' })
  // The replay position is read once a minute, not every 25 ms: a call measures routing's own code, not a share of a periodic query.
  const replicas = new P.ReplicaSet(db, [standby], { positionCacheMs: 60_000 })
  await replicas.noteWrite('acme')
  const options = {}
  const nothing = async () => undefined
  // The standby is chosen (it replayed the write): a read routed elsewhere would measure something else.
  await replicas.read('acme', options, nothing)
  if (replicas.stats().replicaReads !== 1) throw new Error('the gate standby was not chosen: routing did not see it as caught up')
  return {
    run: () => replicas.read('acme', options, nothing),
    close: async () => {
      await replicas.close()
      await standby.end()
    },
  }
}
