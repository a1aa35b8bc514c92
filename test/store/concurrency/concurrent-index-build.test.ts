import { sql } from 'kysely'
import { describe, expect } from 'vitest'
import { connect, PgVectorStore } from '../../../src/index.js'
import { itWithServer } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * `concurrently: true` builds an index without blocking writes: while the build waits (here for an
 * older snapshot, as it does in production for long transactions), other sessions insert into the
 * table; the index ends valid.
 */
const t = useTestDatabase()
const DIM = 8
const emb = (i: number) => Array.from({ length: DIM }, (_, d) => Math.cos(i * (d + 1)) + 1.2)

/**
 * The first column of `query`'s rows, comma-joined, where the build runs: this server, or on a
 * Citus coordinator every node (the coordinator builds its table's index first, then each shard's on its worker; `cic_chunks%` matches the shards).
 */
async function whereTheBuildRuns(query: string): Promise<string> {
  if (!(await t.db.hasCitus())) {
    const { rows } = await sql.raw<Record<string, string>>(query).execute(t.db)
    return rows.map((r) => Object.values(r)[0]).join(',')
  }
  const { rows } = await sql<{ result: string | null }>`
    select string_agg(result, ',') as result from run_command_on_all_nodes(${`select string_agg(x::text, ',') from (${query}) q(x)`})
    where success and result <> ''`.execute(t.db)
  return rows[0]?.result ?? ''
}

describe('concurrent index builds', () => {
  itWithServer(t.target)('writes go on during createTenantIndex({ concurrently: true }); the index is valid afterwards', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'cic_chunks', dimensions: DIM })
    await store.bulkIngest(
      Array.from({ length: 2000 }, (_, i) => ({
        tenantId: 'acme',
        documentId: `d${i % 100}`,
        chunkIndex: Math.floor(i / 100),
        content: 'c',
        embedding: emb(i),
      })),
    )
    const holder = await connect(t.url!, { maxConnections: 1 })
    const writer = await connect({ connectionString: t.url!, options: '-c lock_timeout=2000' }, { maxConnections: 1 })
    let release: (() => void) | undefined
    try {
      const released = new Promise<void>((r) => (release = r))
      let started!: () => void
      const snapshotTaken = new Promise<void>((r) => (started = r))
      // An older snapshot: the concurrent build waits for it before it can finish.
      const holding = holder
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => {
          await sql`select count(*) from cic_chunks`.execute(trx)
          started()
          await released
        })
      await snapshotTaken
      const building = store.createTenantIndex('acme', { concurrently: true })
      let phase = ''
      for (let i = 0; i < 500 && !phase.startsWith('waiting for old snapshots'); i++) {
        phase = await whereTheBuildRuns(`select phase from pg_stat_progress_create_index where relid::regclass::text like 'cic_chunks%'`)
        await new Promise((r) => setTimeout(r, 20))
      }
      expect(phase).toMatch(/^waiting for old snapshots/)
      // The build is running: a writer inserts and deletes (a plain build's SHARE lock would make it time out).
      await store.forTenant('acme').replaceDocument('during-build', [{ content: 'written while indexing', embedding: emb(7) }])
      const writes = await PgVectorStore.open(writer, { table: 'cic_chunks', dimensions: DIM })
      await writes.forTenant('acme').deleteDocument('d5')
      const locks = await whereTheBuildRuns(`select l.mode from pg_locks l join pg_stat_activity a on a.pid = l.pid
        where l.relation::regclass::text like 'cic_chunks%' and a.query ilike 'create index concurrently%'`)
      expect(locks.split(',')).toContain('ShareUpdateExclusiveLock')
      expect(locks.split(',')).not.toContain('ShareLock')
      release?.()
      await holding
      const result = await building
      expect(result.built).toBe(true)
      const { rows } = await sql<{
        valid: boolean
      }>`select indisvalid as valid from pg_index where indexrelid = ${result.index}::regclass`.execute(t.db)
      expect(rows[0]!.valid).toBe(true)
    } finally {
      release?.()
      await holder.close()
      await writer.close()
    }
  })
})
