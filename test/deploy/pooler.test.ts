import { sql } from 'kysely'
import { beforeAll, describe, expect } from 'vitest'
import { connect, PgVectorStore, type Database } from '../../src/index.js'
import { expensesRollup, seedExpenses } from '../rollup/rollup-fixture.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * Every store and rollup path from several clients at once — the run CI makes through PgBouncer in
 * transaction mode with 3 server connections (PGSCALE_TEST_PGBOUNCER=1), and on the server
 * directly otherwise: searches of every kind, replaces and deletes, bulk loads, index builds plain
 * and concurrently, the query sample's flush, refreshes, tracking and drains. Afterwards, seen on
 * the server itself: no advisory lock held, no session idle in a transaction, every result right.
 */
const t = useTestDatabase()
const DIM = 8
const CLIENTS = 8
const config = { table: 'pool_chunks', dimensions: DIM, querySample: { perTenant: 16, flushIntervalMs: 100 } }
const { target, rollup } = expensesRollup('UTC', 'pool_monthly')

const rows = (tenantId: string, n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    tenantId,
    documentId: `d${Math.floor(i / 4)}`,
    chunkIndex: i % 4,
    content: `${tag} ${tenantId} ${i}`,
    metadata: { tag, i },
    embedding: axisVector(DIM, i % DIM, (i % 5) / 10),
  }))

beforeAll(async () => {
  if (!t.url) return
  const store = await PgVectorStore.open(t.db, config)
  await store.bulkIngest(Array.from({ length: CLIENTS }, (_, c) => rows(`t${c}`, 200, 'v1')).flat())
  await store.close()
  await seedExpenses(t.db, { seed: 'pooler', rows: 2_000, tenants: CLIENTS, bigTenantRows: 500, months: 6 })
  await target.create(t.db)
  await rollup.track(t.db)
})

async function client(c: number, db: Database): Promise<void> {
  const store = await PgVectorStore.open(db, config)
  const tenant = store.forTenant(`t${c}`)
  const q = axisVector(DIM, c % DIM)
  for (let round = 0; round < 3; round++) {
    expect((await tenant.search(q, { k: 5 })).every((r) => r.content.includes(`t${c} `))).toBe(true)
    expect(await tenant.exactSearch(q, { k: 5 })).toHaveLength(5)
    expect((await tenant.hybridSearch({ embedding: q, text: 'v1', k: 5 })).length).toBeGreaterThan(0)
    expect((await tenant.search(q, { k: 5, filter: { tag: 'v1' } })).every((r) => r.metadata.tag === 'v1')).toBe(true)
    await tenant.replaceDocument(`d${round}`, [{ content: `v2 t${c} ${round}`, embedding: q, metadata: { tag: 'v2' } }])
    await tenant.deleteDocument(`d${10 + round}`)
    expect(await tenant.deleteWhere({ tag: 'v1', i: 100 + round })).toBe(1)
    await tenant.bulkIngest(rows(`t${c}`, 4, 'v3').map((r) => ({ ...r, documentId: `bulk-${round}-${r.documentId}` })))
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (${c + 1}, ${`2025-0${round + 1}-15T10:00:00Z`}, 'meals', 3, 'paid')`.execute(
      db,
    )
    await rollup.refreshAt(db, { tenantId: c + 1, moment: `2025-0${round + 1}-15T10:00:00Z` })
    await rollup.refreshDirty(db, { limit: 50 })
    expect((await rollup.read(db, { tenantId: c + 1, from: '2025-01', to: '2025-03', fresh: true, groupBy: [] })).length).toBe(round + 1)
  }
  if (c === 0) await store.createTenantIndex('t0')
  if (c === 1) await store.createTenantIndex('t1', { concurrently: true })
  if (c === 2) await store.createMetadataIndex('tag', 'string')
  expect((await store.flushQuerySample()).error).toBeUndefined()
  await store.close()
}

describe('every path from several clients at once (through PgBouncer in CI)', () => {
  itWithServer(t.target)(
    `${CLIENTS} clients: every result right, then no advisory lock held and nothing idle in a transaction`,
    async () => {
      const dbs = await Promise.all(Array.from({ length: CLIENTS }, () => connect(t.url!, { maxConnections: 2 })))
      try {
        await Promise.all(dbs.map((db, c) => client(c, db)))
        const stop = new AbortController()
        const drained = rollup.drain(dbs[0]!, { intervalMs: 20, signal: stop.signal })
        await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (1, '2025-05-01T00:00:00Z', 'meals', 1, 'paid')`.execute(
          dbs[1]!,
        )
        for (let i = 0; i < 200 && (await pending(t.db)) > 0; i++) await new Promise((r) => setTimeout(r, 25))
        stop.abort()
        await drained
        expect(await pending(t.db)).toBe(0)
      } finally {
        await Promise.all(dbs.map((db) => db.close()))
      }
      const direct = await connect(t.directUrl!, { maxConnections: 1 })
      try {
        const { rows: state } = await sql<{ locks: number; idle: number }>`select
        (select count(*)::int from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())) as locks,
        (select count(*)::int from pg_stat_activity where datname = current_database() and state like 'idle in transaction%') as idle`.execute(
          direct,
        )
        expect(state[0]).toEqual({ locks: 0, idle: 0 })
        const { rows: invalid } = await sql<{ n: number }>`select count(*)::int as n from pg_index where not indisvalid`.execute(direct)
        expect(invalid[0]!.n).toBe(0)
        // Every maintenance lease taken (index builds, ANALYZE) was given back.
        const { rows: leases } = await sql<{ n: number }>`select count(*)::int as n from pgscale_lease`.execute(direct)
        expect(leases[0]!.n).toBe(0)
      } finally {
        await direct.close()
      }
    },
  )
})

async function pending(db: Database): Promise<number> {
  return (await sql<{ n: number }>`select count(*)::int as n from pool_monthly_dirty`.execute(db)).rows[0]!.n
}
