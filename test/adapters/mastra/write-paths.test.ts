import { sql } from 'kysely'
import { beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DatabaseError, DimensionMismatchError, InvalidArgumentError, PgScaleError } from '../../../src/index.js'
import { describeUnless, itWithServer, skipBecause } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'
import { createVector, DIM, loadMastra, MASTRA_MISSING, type MastraKit, type PgScaleVector } from './mastra-kit.js'

/**
 * The adapter's write paths as write paths, checked against the table itself: two writers of the
 * same ids at once (each vector one whole version: its vector and metadata from the same upsert), an
 * upsert with `deleteFilter` beside a `deleteVectors` of the same source, a statement failing
 * between two statements of one call (a trigger refuses a row after the `deleteFilter` deleted, or
 * in the middle of an update by filter: nothing changes), and bad input (every refusal a
 * `MastraError` whose `cause` is a typed `PgScaleError`, the table byte-for-byte as it was).
 */
const t = useTestDatabase()
const INDEX = 'write_paths'
const TABLE = `mastra_${INDEX}`

/** The vector writer `w` gives id number `i`: distinct per (writer, id), so a row's vector names its writer. */
const vectorOf = (writer: number, i: number) => createVector(writer * 1000 + i + 1)

/** Every row of the index's table, all columns that matter, as text: what must not change. */
async function tableState(): Promise<string> {
  const { rows } = await sql`
    select tenant_id, document_id, chunk_index, content, metadata, embedding::text
    from ${sql.table(TABLE)} order by 1, 2, 3`.execute(t.db)
  return JSON.stringify(rows)
}

describeUnless(MASTRA_MISSING)('pgscale/mastra: write paths (concurrency, faults, refusals)', () => {
  let kit: MastraKit
  let vector: PgScaleVector

  /** Writer `w`'s batch: ids `prefix-0..n-1`, each with the writer's vector and `{ writer, source }`. */
  const batch = (prefix: string, n: number, writer: number, source = prefix) => {
    const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`)
    return { indexName: INDEX, ids, vectors: ids.map((_, i) => vectorOf(writer, i)), metadata: ids.map(() => ({ writer, source })) }
  }

  /** Each stored vector of `source` → its writer, checking that its vector is that writer's (one whole version). */
  async function writers(source: string): Promise<Map<string, number>> {
    const rows = await vector.query({ indexName: INDEX, filter: { source }, topK: 10_000, includeVector: true })
    return new Map(
      rows.map((r) => {
        const writer = r.metadata?.writer as number
        const i = Number(r.id.slice(r.id.lastIndexOf('-') + 1))
        const expected = vectorOf(writer, i)
        r.vector!.forEach((x, d) => expect(x).toBeCloseTo(expected[d]!, 5))
        return [r.id, writer]
      }),
    )
  }

  beforeAll(async () => {
    kit = await loadMastra(t.db)
    vector = kit.vector('acme')
  })

  beforeEach(async () => {
    await vector.deleteIndex({ indexName: INDEX })
    await vector.createIndex({ indexName: INDEX, dimension: DIM })
    await kit.vector('globex').createIndex({ indexName: INDEX, dimension: DIM })
    await kit.vector('globex').upsert({ ...batch('g', 3, 9), metadata: [{ source: 'g' }, { source: 'g' }, { source: 'g' }] })
  })

  describe('two writers at once', () => {
    itWithServer(t.target)('two upserts of the same ids at once: every vector whole, and each batch applied whole', async () => {
      // 10 ids: the documents' locks, in key order; 200: more than 64, the tenant's write lock.
      for (const size of [10, 200]) {
        for (let round = 0; round < 3; round++) {
          const source = `s${size}`
          await Promise.all([1, 2].map((writer) => vector.upsert(batch(source, size, writer))))
          const byId = await writers(source)
          expect(byId.size).toBe(size)
          expect(new Set(byId.values()).size, `size ${size}, round ${round}`).toBe(1)
        }
      }
    })

    itWithServer(t.target)(
      'an upsert with deleteFilter beside a deleteVectors of that source: all of the new version or none',
      async () => {
        for (let round = 0; round < 10; round++) {
          const size = round % 2 === 0 ? 5 : 80
          await vector.upsert(batch('doc', size, 1))
          await Promise.all([
            vector.upsert({ ...batch('doc', size, 2), deleteFilter: { source: 'doc' } }),
            vector.deleteVectors({ indexName: INDEX, filter: { source: 'doc' } }),
          ])
          const byId = await writers('doc')
          expect([0, size], `round ${round}`).toContain(byId.size)
          if (byId.size > 0) expect(new Set(byId.values())).toEqual(new Set([2]))
          await vector.deleteVectors({ indexName: INDEX, filter: { source: 'doc' } })
        }
      },
    )
  })

  describe('a statement failing between two statements', () => {
    /** Installs a trigger that refuses rows whose metadata says `refuse`, on `events`, for the test's length. */
    async function withRefusingTrigger(events: string, work: () => Promise<void>): Promise<void> {
      await sql`create function mastra_refuse() returns trigger language plpgsql as $$
        begin if new.metadata ? 'refuse' then raise exception 'refused by the test'; end if; return new; end $$`.execute(t.db)
      await sql`create trigger mastra_refuse before ${sql.raw(events)} on ${sql.table(TABLE)} for each row execute function mastra_refuse()`.execute(
        t.db,
      )
      try {
        await work()
      } finally {
        await sql`drop trigger mastra_refuse on ${sql.table(TABLE)}`.execute(t.db)
        await sql`drop function mastra_refuse()`.execute(t.db)
      }
    }

    it('upsert with deleteFilter: the delete ran, an insert failed — nothing deleted, nothing written; the next call works', async (ctx) => {
      if (t.target.citusWorkers) return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
      await vector.upsert(batch('a', 3, 1))
      await vector.upsert(batch('b', 2, 1))
      const before = await tableState()
      await withRefusingTrigger('insert or update', async () => {
        const replace = batch('a', 4, 2)
        replace.metadata[2] = { ...replace.metadata[2]!, refuse: true } as never
        const err = await vector.upsert({ ...replace, deleteFilter: { source: 'a' } }).catch((e: unknown) => e)
        expect(err).toBeInstanceOf(kit.MastraError)
        const mastraError = err as InstanceType<MastraKit['MastraError']>
        expect(mastraError.id).toBe('MASTRA_VECTOR_PGSCALE_UPSERT_FAILED')
        expect(mastraError.category).toBe('THIRD_PARTY')
        expect(mastraError.cause).toBeInstanceOf(DatabaseError)
        expect(await tableState()).toBe(before)
      })
      await vector.upsert({ ...batch('a', 4, 2), deleteFilter: { source: 'a' } })
      expect(Object.fromEntries(await writers('a'))).toEqual({ 'a-0': 2, 'a-1': 2, 'a-2': 2, 'a-3': 2 })
      expect((await writers('b')).size).toBe(2)
    })

    it('updateVector by filter failing on one of its rows: no row updated', async (ctx) => {
      if (t.target.citusWorkers) return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
      await vector.upsert(batch('u', 5, 1))
      const before = await tableState()
      await withRefusingTrigger('update', async () => {
        // The new metadata carries `refuse`: the first row updated fails the statement.
        const update = { metadata: { source: 'u', writer: 1, refuse: true } }
        const err = await vector.updateVector({ indexName: INDEX, filter: { source: 'u' }, update }).catch((e: unknown) => e)
        expect((err as InstanceType<MastraKit['MastraError']>).id).toBe('MASTRA_VECTOR_PGSCALE_UPDATE_VECTOR_FAILED')
        expect(await tableState()).toBe(before)
      })
      await vector.updateVector({ indexName: INDEX, filter: { source: 'u' }, update: { metadata: { source: 'u', writer: 1, v: 2 } } })
      const rows = await vector.query({ indexName: INDEX, filter: { source: 'u' }, topK: 10 })
      expect(rows.map((r) => r.metadata?.v)).toEqual([2, 2, 2, 2, 2])
    })
  })

  describe('bad input', () => {
    it('every refusal is a MastraError (category USER) whose cause is a typed PgScaleError; the table is unchanged', async () => {
      await vector.upsert(batch('keep', 3, 1))
      const before = await tableState()
      const two = [createVector(1), createVector(2)]
      const cyclic: Record<string, unknown> = {}
      cyclic.self = cyclic
      const cases: Array<[string, () => Promise<unknown>, new (...args: any[]) => PgScaleError]> = [
        [
          'a vector of another dimension',
          () => vector.upsert({ indexName: INDEX, vectors: [createVector(1, DIM + 1)] }),
          DimensionMismatchError,
        ],
        [
          'the second vector of another dimension, with a deleteFilter',
          () => vector.upsert({ indexName: INDEX, vectors: [createVector(1), [1, 2]], deleteFilter: { source: 'keep' } }),
          DimensionMismatchError,
        ],
        [
          'NaN in a vector',
          () => vector.upsert({ indexName: INDEX, vectors: [[...createVector(1).slice(1), Number.NaN]] }),
          InvalidArgumentError,
        ],
        ['no vectors', () => vector.upsert({ indexName: INDEX, vectors: [] }), InvalidArgumentError],
        ['ids of another length', () => vector.upsert({ indexName: INDEX, vectors: two, ids: ['x'] }), InvalidArgumentError],
        ['an empty id', () => vector.upsert({ indexName: INDEX, vectors: two, ids: ['x', ''] }), InvalidArgumentError],
        [
          'metadata JSON cannot hold',
          () => vector.upsert({ indexName: INDEX, vectors: [two[0]!], metadata: [cyclic] }),
          InvalidArgumentError,
        ],
        [
          'a deleteFilter with $regex',
          () => vector.upsert({ indexName: INDEX, vectors: two, deleteFilter: { source: { $regex: '^k' } } as never }),
          kit.adapter.FilterTranslationError,
        ],
        [
          'a deleteFilter that matches everything',
          () => vector.upsert({ indexName: INDEX, vectors: two, deleteFilter: { $nor: [] } }),
          InvalidArgumentError,
        ],
        ['deleteVectors of no ids', () => vector.deleteVectors({ indexName: INDEX, ids: [] }), InvalidArgumentError],
        ['deleteVectors of {}', () => vector.deleteVectors({ indexName: INDEX, filter: {} }), InvalidArgumentError],
        [
          'deleteVectors by ids and filter',
          () => vector.deleteVectors({ indexName: INDEX, ids: ['keep-0'], filter: { source: 'keep' } }),
          InvalidArgumentError,
        ],
        [
          'updateVector with a vector of another dimension',
          () => vector.updateVector({ indexName: INDEX, filter: { source: 'keep' }, update: { vector: [1, 2] } }),
          DimensionMismatchError,
        ],
        [
          'updateVector by a filter that matches everything',
          () => vector.updateVector({ indexName: INDEX, filter: { $and: [] }, update: { metadata: {} } }),
          InvalidArgumentError,
        ],
        [
          'updateVector with nothing to update',
          () => vector.updateVector({ indexName: INDEX, id: 'keep-0', update: {} }),
          InvalidArgumentError,
        ],
        ['a query of topK 0', () => vector.query({ indexName: INDEX, queryVector: createVector(1), topK: 0 }), InvalidArgumentError],
        [
          'an index of another dimension',
          () => vector.createIndex({ indexName: INDEX, dimension: DIM + 1 }),
          InvalidArgumentError, // Mastra's validateExistingIndex
        ],
      ]
      for (const [what, call, type] of cases) {
        const err = await call().then(
          () => new Error(`${what}: accepted`),
          (e: unknown) => e,
        )
        expect(err, what).toBeInstanceOf(kit.MastraError)
        expect((err as InstanceType<MastraKit['MastraError']>).category, what).toBe('USER')
        expect((err as Error).cause, what).toBeInstanceOf(type)
        expect((err as Error).cause, what).toBeInstanceOf(PgScaleError)
      }
      expect(await tableState()).toBe(before)
      expect(await vector.describeIndex({ indexName: INDEX })).toEqual({ dimension: DIM, count: 3, metric: 'cosine' })
    })
  })
})
