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

describe('the switch under faults', () => {
  itWithServer(t.target)('a switch killed while it waits for a writer leaves nothing; the next one takes the writer along', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_fault', dimensions: DIM })
    const acme = store.forTenant('acme')
    await acme.replaceDocument('d', [{ content: 'first', embedding: model('first', DIM) }])
    await store.addSpace({ name: 'v2', dimensions: 4 })
    const embed = async (texts: string[]) => texts.map((x) => model(x, 4))
    await store.migrateTenant('acme', { to: 'v2', embed })

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
})
