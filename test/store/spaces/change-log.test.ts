import { sql, type Transaction } from 'kysely'
import { describe, expect, it } from 'vitest'
import { EmbeddingSpaceError, PgVectorStore, type Database } from '../../../src/index.js'
import { NEEDS_SERVER, itUnless } from '../../support/skip.js'
import { testTarget, useTestDatabase } from '../../support/test-database.js'
import { DIM, NEW_DIM, newModel, oldModel, rowsOf as tenantRows } from './space-fixtures.js'

/**
 * The switch's change log: while a tenant migrates, the guard logs every key written (plain SQL,
 * the store, either space), and the switch compares only those under its lock. Checked against
 * the truth — the active space's rows — after seeded sequences of every kind of write between the
 * backfill and the switch; and the migration's start waits for writes in flight that logged nothing.
 */
const t = useTestDatabase()
const rowsOf = (table: string, tenantId: string) => tenantRows(t.db, table, tenantId)
const embed = async (texts: string[]) => texts.map(newModel)

/** A seeded linear congruential generator: the same sequence every run. */
function seeded(seed: number) {
  let state = seed
  return (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648
    return Math.floor((state / 2147483648) * n)
  }
}

/** One write of the sequence: plain SQL against either space (or another tenant), as an app or a psql session would send it. */
async function randomWrite(db: Database, table: string, pick: (n: number) => number, step: number): Promise<void> {
  const doc = `doc-${pick(8)}`
  const chunk = pick(3)
  const vector = (text: string) => `[${oldModel(text).join(',')}]`
  const content = `${doc} ${chunk} s${step}`
  switch (pick(9)) {
    case 0: // a new or rewritten chunk
      await sql`insert into ${sql.table(table)} (tenant_id, document_id, chunk_index, content, metadata, embedding)
        values ('acme', ${doc}, ${chunk}, ${content}, ${JSON.stringify({ step })}::jsonb, ${vector(content)}::vector)
        on conflict (tenant_id, document_id, chunk_index) do update set content = excluded.content, embedding = excluded.embedding`.execute(
        db,
      )
      return
    case 1: // new text in place
      await sql`update ${sql.table(table)} set content = ${content}, embedding = ${vector(content)}::vector
        where tenant_id = 'acme' and document_id = ${doc} and chunk_index = ${chunk}`.execute(db)
      return
    case 2: // metadata only
      await sql`update ${sql.table(table)} set metadata = metadata || ${JSON.stringify({ touched: step })}::jsonb
        where tenant_id = 'acme' and document_id = ${doc}`.execute(db)
      return
    case 3:
      await sql`delete from ${sql.table(table)} where tenant_id = 'acme' and document_id = ${doc} and chunk_index = ${chunk}`.execute(db)
      return
    case 4: // a chunk moved to another key
      await sql`update ${sql.table(table)} set document_id = ${`moved-${step}`}
        where tenant_id = 'acme' and document_id = ${doc} and chunk_index = ${chunk}`.execute(db)
      return
    case 5: // rolled back: leaves nothing
      await db
        .transaction()
        .execute(async (trx: Transaction<any>) => {
          await sql`delete from ${sql.table(table)} where tenant_id = 'acme' and document_id = ${doc}`.execute(trx)
          throw new Error('rolled back')
        })
        .catch(() => {})
      return
    case 6: // the app writes the new space itself (allowed while the tenant migrates there): a stray key, or another text
      await sql`insert into ${sql.table(`${table}__v2`)} (tenant_id, document_id, chunk_index, content, metadata, embedding)
        values ('acme', ${doc}, ${chunk}, ${`stale ${step}`}, '{}'::jsonb, ${`[${newModel('x').join(',')}]`}::vector)
        on conflict (tenant_id, document_id, chunk_index) do update set content = excluded.content`.execute(db)
      return
    case 7: // another tenant, which does not migrate
      await sql`insert into ${sql.table(table)} (tenant_id, document_id, chunk_index, content, embedding)
        values ('globex', ${doc}, ${chunk}, ${content}, ${vector(content)}::vector)
        on conflict (tenant_id, document_id, chunk_index) do update set content = excluded.content`.execute(db)
      return
    default: // a whole document replaced through the store's own path
      return
  }
}

describe('the switch looks at the keys written since the backfill (the change log)', () => {
  it('seeded write sequences between the backfill and the switch, plain SQL on both spaces: the new space equals the truth, the log is emptied', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const table = `sp_log_${seed}`
      const store = await PgVectorStore.open(t.db, { table, dimensions: DIM })
      const acme = store.forTenant('acme')
      for (let d = 0; d < 8; d++) {
        const chunks = [0, 1, 2].map((i) => ({ content: `doc-${d} ${i}`, metadata: { d }, embedding: oldModel(`doc-${d} ${i}`) }))
        await acme.replaceDocument(`doc-${d}`, chunks)
      }
      await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
      await store.migrateTenant('acme', { to: 'v2', embed })
      const pick = seeded(seed * 7919)
      for (let step = 0; step < 40; step++) {
        if (pick(9) === 8) {
          const content = `replaced ${step}`
          await acme.replaceDocument(`doc-${pick(8)}`, [{ content, metadata: { step }, embedding: oldModel(content) }])
        } else await randomWrite(t.db, table, pick, step)
      }
      const { rows: logged } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${table}_space_changes`)}
        where tenant_id = 'acme'`.execute(t.db)
      expect(logged[0]!.n).toBeGreaterThan(0) // the writes were logged
      await store.switchTenant('acme', 'v2', { embed, maxEmbedUnderLock: 10_000 })

      const truth = (await rowsOf(table, 'acme')).map((r) => [r.key, r.content, r.metadata])
      const v2 = await rowsOf(`${table}__v2`, 'acme')
      expect(
        v2.map((r) => [r.key, r.content, r.metadata]),
        `seed ${seed}`,
      ).toEqual(truth)
      for (const r of v2) {
        const got = JSON.parse(r.embedding) as number[]
        newModel(r.content).forEach((x, i) => expect(got[i]).toBeCloseTo(x, 5))
      }
      const { rows: left } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(`${table}_space_changes`)}`.execute(t.db)
      expect(left[0]!.n, `seed ${seed}: the log after the switch`).toBe(0)
      expect(await rowsOf(`${table}__v2`, 'globex')).toEqual([]) // the tenant that does not migrate is not brought over
      await store.close()
    }
  })

  it('a switch without embed (the backfill run again first) and a cancelled migration leave no log behind', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_log_cancel', dimensions: DIM })
    const acme = store.forTenant('acme')
    await acme.replaceDocument('d', [{ content: 'one', embedding: oldModel('one') }])
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    await store.migrateTenant('acme', { to: 'v2', embed })
    await acme.replaceDocument('e', [{ content: 'two', embedding: oldModel('two') }])
    const count = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from ${sql.table('sp_log_cancel_space_changes')}`.execute(t.db)).rows[0]!.n
    expect(await count()).toBe(1)
    await store.cancelMigration('acme')
    expect(await count()).toBe(0)
    // Not migrating: writes are not logged; a new migration's full passes bring them over.
    await acme.replaceDocument('f', [{ content: 'three', embedding: oldModel('three') }])
    expect(await count()).toBe(0)
    await store.migrateTenant('acme', { to: 'v2', embed })
    await acme.deleteDocument('d')
    await store.migrateTenant('acme', { to: 'v2', embed }) // the resume brings the deletion over
    await store.switchTenant('acme', 'v2')
    expect((await rowsOf('sp_log_cancel__v2', 'acme')).map((r) => r.content)).toEqual(['two', 'three'])
    expect(await count()).toBe(0)
    await store.close()
  })

  it('a rollback compares the writes since the switch: deletions and metadata changes go back with it, a new text refuses it (typed)', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sp_log_back', dimensions: DIM })
    const acme = store.forTenant('acme')
    for (const d of ['a', 'b', 'c']) await acme.replaceDocument(d, [{ content: d, metadata: { d }, embedding: oldModel(d) }])
    await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
    await store.migrateTenant('acme', { to: 'v2', embed, switch: true })
    const logged = async () =>
      (
        await sql<{ n: number }>`select count(*)::int as n from ${sql.table('sp_log_back_space_changes')} where tenant_id = 'acme'`.execute(
          t.db,
        )
      ).rows[0]!.n
    expect(await logged()).toBe(0)
    // After the switch the tenant writes its new space (plain SQL): each key is logged for the rollback.
    await sql`delete from ${sql.table('sp_log_back__v2')} where tenant_id = 'acme' and document_id = 'a'`.execute(t.db)
    await sql`update ${sql.table('sp_log_back__v2')} set metadata = '{"d": "b2"}' where tenant_id = 'acme' and document_id = 'b'`.execute(
      t.db,
    )
    expect(await logged()).toBe(2)
    await store.rollbackTenant('acme')
    const truth = (await rowsOf('sp_log_back__v2', 'acme')).map((r) => [r.key, r.content, r.metadata])
    expect(truth).toEqual([
      ['b#0', 'b', { d: 'b2' }],
      ['c#0', 'c', { d: 'c' }],
    ])
    expect((await rowsOf('sp_log_back', 'acme')).map((r) => [r.key, r.content, r.metadata])).toEqual(truth)
    expect(await logged()).toBe(0)
    // Rolled back, it writes the old space again: a new text there has no vector in v2, so going forward again is refused.
    await acme.replaceDocument('d', [{ content: 'new text', embedding: oldModel('new text') }])
    const refused = await store.rollbackTenant('acme').catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(EmbeddingSpaceError)
    expect((refused as EmbeddingSpaceError).pending).toBe(1)
    expect(await store.migrationStatus('acme')).toMatchObject({ active: 'default', previous: 'v2' })
    await store.releaseTenantSpace('acme', 'v2')
    expect(await logged()).toBe(0)
    await acme.replaceDocument('e', [{ content: 'e', embedding: oldModel('e') }])
    expect(await logged()).toBe(0) // nothing to roll back to: not logged
    await store.close()
  })

  itUnless(!testTarget().url && NEEDS_SERVER)(
    "a migration's start waits for a write in flight that began before it (and logged nothing): the write is in the new space at the switch",
    async () => {
      const store = await PgVectorStore.open(t.db, { table: 'sp_log_inflight', dimensions: DIM })
      const acme = store.forTenant('acme')
      await acme.replaceDocument('d', [{ content: 'one', embedding: oldModel('one') }])
      await store.addSpace({ name: 'v2', dimensions: NEW_DIM })
      await store.migrateTenant('acme', { to: 'v2', embed })
      await store.cancelMigration('acme') // the tenant has a state row, not migrating: its writes log nothing
      let commit!: () => void
      const held = new Promise<void>((resolve) => (commit = resolve))
      let written!: () => void
      const wrote = new Promise<void>((resolve) => (written = resolve))
      const writer = t.db.transaction().execute(async (trx: Transaction<any>) => {
        await sql`insert into ${sql.table('sp_log_inflight')} (tenant_id, document_id, chunk_index, content, embedding)
          values ('acme', 'late', 0, 'late', ${`[${oldModel('late').join(',')}]`}::vector)`.execute(trx)
        written()
        await held
      })
      await wrote
      const migrating = store.migrateTenant('acme', { to: 'v2', embed })
      // The migration's start waits on the tenant's state row, which the writer holds FOR KEY SHARE.
      for (let i = 0; i < 200; i++) {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%for update%'`.execute(t.db)
        if (rows[0]!.n > 0) break
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      const { rows: waiting } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like '%for update%'`.execute(t.db)
      expect(waiting[0]!.n).toBe(1)
      commit()
      await writer
      await migrating
      await store.switchTenant('acme', 'v2')
      expect((await rowsOf('sp_log_inflight__v2', 'acme')).map((r) => r.content)).toEqual(['one', 'late'])
      await store.close()
    },
  )
})
