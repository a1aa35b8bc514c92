import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { describe, expect } from 'vitest'
import { connect, PgVectorStore } from '../../src/index.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { terminateWhen } from './fault-support.js'

/**
 * The embedding-space switch when its connection dies: it waits on the tenant's state row behind a
 * writer's open transaction (the guard's FOR KEY SHARE), its backend is terminated — nothing of it
 * stays (the tenant searches its old space, the migration is still ready), the writer commits,
 * and a second switch takes the writer's chunk along.
 */
const t = useTestDatabase()
const DIM = 8
const model = (text: string, dims: number) => {
  const h = createHash('sha256').update(text).digest()
  return Array.from({ length: dims }, (_, i) => (h[i]! - 127.5) / 128 + (i === 0 ? 0.01 : 0))
}

/** A store whose tenant acme has one document and is migrated (backfilled, ready) to a 4-d space v2. */
async function migratingStore(table: string) {
  const store = await PgVectorStore.open(t.db, { table, dimensions: DIM })
  const acme = store.forTenant('acme')
  await acme.replaceDocument('d', [{ content: 'first', embedding: model('first', DIM) }])
  await store.addSpace({ name: 'v2', dimensions: 4 })
  const embed = async (texts: string[]) => texts.map((x) => model(x, 4))
  await store.migrateTenant('acme', { to: 'v2', embed })
  return { store, acme, embed }
}

describe('the switch under faults', () => {
  itWithServer(t.target)('a switch killed while it waits for a writer leaves nothing; the next one takes the writer along', async () => {
    const { store, embed } = await migratingStore('sp_fault')

    // A writer of another process holds its transaction open after a write (the guard's row lock held).
    const writer = await connect(t.url!, { maxConnections: 1, requireVector: false })
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const writing = writer.transaction(async (trx) => {
      await sql`insert into sp_fault (tenant_id, document_id, chunk_index, content, embedding)
        values ('acme', 'late', 0, 'late', ${`[${model('late', DIM).join(',')}]`}::vector)`.execute(trx)
      await held
    })
    const other = await connect(t.url!, { maxConnections: 2, requireVector: false })
    const otherStore = await PgVectorStore.open(other, { table: 'sp_fault', dimensions: DIM })
    const switching = otherStore.switchTenant('acme', 'v2', { embed }).catch((e: unknown) => e)
    await terminateWhen(t.db, `wait_event_type = 'Lock' and query like '%sp_fault_tenant_spaces%for update%'`)
    expect(await switching).toBeInstanceOf(Error)
    expect(await store.migrationStatus('acme')).toMatchObject({ active: 'default', target: 'v2', state: 'ready' })

    release()
    await writing
    const switched = await store.switchTenant('acme', 'v2', { embed })
    expect(switched).toMatchObject({ active: 'v2', previous: 'default' })
    const { tenant } = await store.activeTenant('acme')
    expect((await tenant.getChunks(['late', 'd'])).map((c) => c.content)).toEqual(['late', 'first'])
    await otherStore.close().catch(() => {})
    await other.close().catch(() => {})
    await writer.close()
    await store.close()
  })

  itWithServer(t.target)(
    'a switch killed between its statements under the lock (after the change log was settled, while it embeds) leaves nothing; the log is intact and the next switch works',
    async () => {
      const { store, acme, embed } = await migratingStore('sp_fault_mid')
      // Written since the backfill: a new chunk (the last pass embeds it) and a deletion (settled under the lock).
      await acme.replaceDocument('late', [{ content: 'late', embedding: model('late', DIM) }])
      await acme.deleteDocument('d')
      const logged = async () =>
        (
          await sql<{
            d: string
          }>`select distinct document_id as d from sp_fault_mid_space_changes where tenant_id = 'acme' order by 1`.execute(t.db)
        ).rows.map((r) => r.d)
      expect(await logged()).toEqual(['d', 'late'])

      // The switch of another process: its embed under the lock waits, so the backend sits idle in
      // its transaction after the settling statement — and is terminated there.
      const other = await connect(t.url!, { maxConnections: 2, requireVector: false })
      const otherStore = await PgVectorStore.open(other, { table: 'sp_fault_mid', dimensions: DIM })
      // Its first embed call is the unlocked last pass, during which one more chunk is written; the
      // second, under the lock, embeds that one — and never returns.
      let calls = 0
      let resume!: () => void
      const resumed = new Promise<void>((resolve) => (resume = resolve))
      const hanging = async (texts: string[]) => {
        if (++calls === 1) await acme.replaceDocument('later', [{ content: 'later', embedding: model('later', DIM) }])
        else await resumed
        return embed(texts)
      }
      const switching = otherStore.switchTenant('acme', 'v2', { embed: hanging }).catch((e: unknown) => e)
      await terminateWhen(t.db, `state = 'idle in transaction' and query like '%sp_fault_mid%'`)
      expect(calls).toBe(2)
      resume() // the embed returns; the switch's next statement finds its connection gone
      expect(await switching).toBeInstanceOf(Error)
      expect(await store.migrationStatus('acme')).toMatchObject({ active: 'default', target: 'v2' })
      // The last pass (committed before the lock) embedded 'late' and pruned it; 'd' (its deletion
      // settled under the lock, rolled back) and 'later' are still logged for the next switch.
      expect(await logged()).toEqual(['d', 'later'])
      const v2Docs = async () =>
        (
          await sql<{ d: string }>`select document_id as d from sp_fault_mid__v2 where tenant_id = 'acme' order by 1`.execute(t.db)
        ).rows.map((r) => r.d)
      expect(await v2Docs()).toEqual(['d', 'late']) // the settled deletion rolled back with the rest

      // Through the pool whose connection was killed: it is healthy.
      const switched = await otherStore.switchTenant('acme', 'v2', { embed })
      expect(switched).toMatchObject({ active: 'v2', previous: 'default' })
      expect(await v2Docs()).toEqual(['late', 'later'])
      expect(await logged()).toEqual([])
      await otherStore.close().catch(() => {})
      await other.close().catch(() => {})
      await store.close()
    },
  )
})
