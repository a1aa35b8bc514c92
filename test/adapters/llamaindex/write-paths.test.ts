import { sql } from 'kysely'
import { beforeAll, expect, it } from 'vitest'
import { DatabaseError, PgVectorStore } from '../../../src/index.js'
import { describeUnless, itWithServer, skipBecause } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { axisVector } from '../../support/vectors.js'
import { LLAMAINDEX_MISSING, loadLlamaIndex, type LlamaIndexKit, type PgScaleVectorStore } from './llamaindex-kit.js'

/**
 * The adapter's write paths (`add`, `delete(refDocId)`) as write paths: two at once on the same
 * nodes and documents, and a statement failing inside an `add` (a row refused; its COPY
 * refused after its delete succeeded). Both are one pgscale call each
 * (`bulkUpsert`, `deleteWhere`), whose locks these tests exercise through LlamaIndex's calls.
 */
const t = useTestDatabase()
const DIM = 4
const TABLE = 'li_writes'
const vec = (axis: number) => axisVector(DIM, axis, 0.1)

describeUnless(LLAMAINDEX_MISSING)('PgScaleVectorStore write paths', () => {
  let kit: LlamaIndexKit
  let store: PgVectorStore
  let tenants = 0
  const fresh = () => kit.adapter.PgScaleVectorStore.forTenant(store, `tenant-${++tenants}`, { embedModel: kit.hashEmbedding(DIM) })

  /** A document's nodes as written by `writer`: ids `doc:0..n-1`, text, metadata and vector naming the writer. */
  const nodesOf = (doc: string, n: number, writer: number) =>
    Array.from({ length: n }, (_, i) => kit.node(`${doc}:${i}`, `w${writer} ${doc}:${i}`, vec(writer), { writer }, doc))

  /** Each stored node's writer, checking text and metadata come from the same writer. */
  async function writers(pg: PgScaleVectorStore): Promise<Map<string, number>> {
    const { rows } = await pg.client().find({ limit: 10_000 })
    return new Map(
      rows.map((r) => {
        const writer = r.metadata.writer as number
        expect(r.content).toBe(`w${writer} ${r.documentId}`)
        return [r.documentId, writer]
      }),
    )
  }

  beforeAll(async () => {
    kit = await loadLlamaIndex()
    store = await PgVectorStore.open(t.db, { table: TABLE, dimensions: DIM })
  })

  itWithServer(t.target)(
    'two adds of the same nodes at once: every node whole, from one writer or the other; batches apply whole',
    async () => {
      for (const size of [10, 200]) {
        const pg = fresh()
        await Promise.all([1, 2, 3, 4].map((writer) => pg.add(nodesOf(`doc-${size}`, size, writer))))
        const byNode = await writers(pg)
        expect(byNode.size).toBe(size)
        // A batch takes its nodes' locks together, in key order (more than 64: the tenant's write
        // lock): the batches take turns, and the last one's nodes are all there.
        expect(new Set(byNode.values()).size).toBe(1)
      }
    },
  )

  itWithServer(t.target)('add and delete(refDocId) of one document at once: all of its nodes or none, never a part', async () => {
    const pg = fresh()
    for (let round = 0; round < 20; round++) {
      const size = round % 2 === 0 ? 12 : 80
      await pg.add(nodesOf('doc', size, 1))
      await Promise.all([pg.add(nodesOf('doc', size, 2)), pg.delete('doc')])
      const left = await pg.client().count({ ref_doc_id: 'doc' })
      expect([0, size], `round ${round}`).toContain(left)
      await pg.delete('doc')
    }
  })

  it('a statement failing inside add (a trigger refuses one node) writes none of its nodes; the next add works', async (ctx) => {
    if (t.target.citusWorkers) return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
    const pg = fresh()
    await pg.add(nodesOf('kept', 3, 1))
    await sql`create function li_refuse() returns trigger language plpgsql as $$
      begin if new.content like '%refused%' then raise exception 'refused by the test'; end if; return new; end $$`.execute(t.db)
    await sql`create trigger li_refuse before insert or update on ${sql.table(TABLE)} for each row execute function li_refuse()`.execute(
      t.db,
    )
    try {
      const batch = [...nodesOf('kept', 3, 2), kit.node('bad', 'refused', vec(3), {}, 'kept')]
      await expect(pg.add(batch)).rejects.toBeInstanceOf(DatabaseError)
      expect(Object.fromEntries(await writers(pg))).toEqual({ 'kept:0': 1, 'kept:1': 1, 'kept:2': 1 })
    } finally {
      await sql`drop trigger li_refuse on ${sql.table(TABLE)}`.execute(t.db)
      await sql`drop function li_refuse()`.execute(t.db)
    }
    await pg.add(nodesOf('kept', 3, 2))
    expect(new Set((await writers(pg)).values())).toEqual(new Set([2]))
  })

  it('an add failing after its delete succeeded (the COPY refused): none of the add is written, the old nodes stay', async (ctx) => {
    if (t.target.citusWorkers) return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
    // add is the store's bulkUpsert: the nodes' old rows deleted, then the batch copied, in one
    // transaction; a statement-level trigger refuses the COPY after the delete removed the old rows.
    const pg = fresh()
    const SIZE = 1500
    await pg.add(nodesOf('big', SIZE, 1))
    await sql`create function li_second_statement() returns trigger language plpgsql as $$
      begin raise exception 'the insert after the delete is refused by the test'; end $$`.execute(t.db)
    await sql`create trigger li_second_statement before insert on ${sql.table(TABLE)}
      for each statement execute function li_second_statement()`.execute(t.db)
    try {
      await expect(pg.add(nodesOf('big', SIZE, 2))).rejects.toBeInstanceOf(DatabaseError)
      const byNode = await writers(pg)
      expect(byNode.size).toBe(SIZE)
      expect(new Set(byNode.values())).toEqual(new Set([1]))
    } finally {
      await sql`drop trigger li_second_statement on ${sql.table(TABLE)}`.execute(t.db)
      await sql`drop function li_second_statement()`.execute(t.db)
    }
    await pg.add(nodesOf('big', SIZE, 2))
    expect(new Set((await writers(pg)).values())).toEqual(new Set([2]))
  })
})
