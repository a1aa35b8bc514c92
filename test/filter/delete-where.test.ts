import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { beforeAll, describe, expect } from 'vitest'
import { connect, DatabaseError, PgVectorStore, type ChunkInput, type Database } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * deleteWhere is a write path: two at once, beside concurrent replaces of the same documents, and
 * a statement failing after its lock — each leaves whole documents and a healthy pool.
 */
const t = useTestDatabase()
const DOCS = 6
/** Chunks of version 1 and 2 of a document: large enough that a replace is still writing when a delete starts. */
const SMALL = 120
const LARGE = 200
let pool: Database

const version = (v: number, n: number, tag = 'x'): ChunkInput[] =>
  Array.from({ length: n }, (_, i) => ({ content: `v${v}`, embedding: axisVector(4, i, 0.1), metadata: { tag, v } }))

beforeAll(async () => {
  if (!t.url) return
  pool = await connect(t.url, { maxConnections: 8 })
  return () => pool.close()
})

/** Every document is absent or whole: chunks 0..n-1, one version, as many as that version has. */
async function wholeDocuments(db: Database): Promise<string[]> {
  const { rows } = await sql<{ document_id: string; n: number; versions: number; max_index: number; content: string }>`
    select document_id, count(*)::int as n, count(distinct content)::int as versions, max(chunk_index) as max_index, min(content) as content
    from dw_chunks where tenant_id = 'acme' group by document_id`.execute(db)
  return rows
    .filter((r) => r.versions !== 1 || r.max_index !== r.n - 1 || r.n !== (r.content === 'v1' ? SMALL : LARGE))
    .map((r) => `${r.document_id}: ${r.n} chunks, ${r.versions} versions, last index ${r.max_index}`)
}

describe('deleteWhere beside other writers', () => {
  itWithServer(t.target)('beside concurrent replaces of the same documents: no document is left half-replaced', async () => {
    const store = await PgVectorStore.open(pool, { table: 'dw_chunks', dimensions: 4 })
    const acme = store.forTenant('acme')
    for (let round = 0; round < 15; round++) {
      for (let d = 0; d < DOCS; d++) await acme.replaceDocument(`doc-${d}`, version(1, SMALL))
      // Each document grows from v1 to v2 while deletes of the tag both versions share run.
      const replaces = Array.from({ length: DOCS }, (_, d) => acme.replaceDocument(`doc-${d}`, version(2, LARGE)))
      await new Promise((resolve) => setTimeout(resolve, round % 5))
      const deletes = [acme.deleteWhere({ tag: 'x' }), acme.deleteWhere({ tag: 'x', v: { $gte: 1 } })]
      await Promise.all([...replaces, ...deletes])
      expect(await wholeDocuments(pool), `round ${round}`).toEqual([])
    }
  })

  itWithServer(t.target)(
    "a delete that starts while an app's transaction is replacing a document waits for it, and sees it whole",
    async () => {
      const store = await PgVectorStore.open(pool, { table: 'dw_chunks', dimensions: 4 })
      const acme = store.forTenant('acme')
      await acme.replaceDocument('held', version(1, SMALL, 'held'))
      const appPool = new pg.Pool({ connectionString: t.url, max: 2 })
      const app = new Kysely<any>({ dialect: new PostgresDialect({ pool: appPool }) })
      try {
        let release!: () => void
        const held = new Promise<void>((resolve) => (release = resolve))
        let replaced!: () => void
        const inside = new Promise<void>((resolve) => (replaced = resolve))
        const transaction = app.transaction().execute(async (trx) => {
          await store.forTenant('acme', { transaction: trx }).replaceDocument('held', version(2, LARGE, 'held'))
          replaced()
          await held
        })
        await inside
        // The delete's snapshot would see v1 (the replace has not committed), its rows locked by the replace.
        const deleting = acme.deleteWhere({ tag: 'held' })
        await new Promise((resolve) => setTimeout(resolve, 300))
        release()
        await transaction
        // Serialized after the replace: v2 seen whole, and deleted whole (not v1's rows only, leaving v2's tail).
        expect(await deleting).toBe(LARGE)
        expect(await acme.count({ tag: 'held' })).toBe(0)
      } finally {
        await app.destroy()
      }
    },
  )

  itWithServer(t.target)('two deleteWhere at once: each row is deleted once, and the counts add up', async () => {
    const store = await PgVectorStore.open(pool, { table: 'dw_chunks', dimensions: 4 })
    const acme = store.forTenant('acme')
    for (let d = 0; d < DOCS; d++) await acme.replaceDocument(`doc-${d}`, version(2, LARGE))
    const counts = await Promise.all([acme.deleteWhere({ v: 2 }), acme.deleteWhere({ tag: 'x' }), acme.deleteWhere({ v: { $in: [2] } })])
    expect(counts.reduce((a, b) => a + b, 0)).toBe(DOCS * LARGE)
    expect(await acme.count()).toBe(0)
  })

  itWithServer(t.target)('a delete that fails after taking its lock rolls back whole; the pool serves the next call', async () => {
    const store = await PgVectorStore.open(pool, { table: 'dw_chunks', dimensions: 4 })
    const acme = store.forTenant('acme')
    for (let d = 0; d < DOCS; d++) await acme.replaceDocument(`doc-${d}`, version(2, LARGE))
    // The timestamp reader is gone: the delete statement fails after the tenant lock's statement ran.
    await sql`alter function pgscale_iso_instant(jsonb) rename to pgscale_iso_instant_away`.execute(t.db)
    try {
      await expect(acme.deleteWhere({ tag: 'x', at: { $lt: new Date() } })).rejects.toBeInstanceOf(DatabaseError)
    } finally {
      await sql`alter function pgscale_iso_instant_away(jsonb) rename to pgscale_iso_instant`.execute(t.db)
    }
    expect(await acme.count()).toBe(DOCS * LARGE)
    // No session of the pool was left inside a transaction, and the tenant lock was released.
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`.execute(
      t.db,
    )
    expect(rows[0]!.n).toBe(0)
    await Promise.all(Array.from({ length: 8 }, (_, i) => acme.replaceDocument(`doc-${i % DOCS}`, version(1, SMALL))))
    expect(await acme.deleteWhere({ v: 1 })).toBe(DOCS * SMALL)
  })
})
