import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { connect, hasCitusShardNodes, InvalidArgumentError, PgVectorStore } from '../../../src/index.js'
import { generateCorpus, type CorpusSpec } from '../../../bench/synthetic/corpus.js'
import { itWithServer, skipBecause } from '../../support/skip.js'
import { testTarget, useTestDatabase } from '../../support/test-database.js'

/**
 * The query sample a store keeps of its searches: bounded per tenant, survives reopening, never
 * read across tenants, stays bounded with two pools flushing at once; a failed flush (or a flush
 * whose trim fails) leaves search and the pool working. Tuning on it: query-sample.test.ts.
 */
const t = useTestDatabase()
const count = async (table: string, tenant: string) =>
  (await sql<{ n: number }>`select count(*)::int as n from ${sql.id(table)} where tenant_id = ${tenant}`.execute(t.db)).rows[0]!.n

describe('the sample itself', () => {
  const small: CorpusSpec = {
    seed: 'sample',
    dim: 8,
    tenants: [
      { id: 'x', chunks: 60 },
      { id: 'y', chunks: 60 },
    ],
  }
  const vectors = (seed: number, n: number) =>
    Array.from({ length: n }, (_, i) => Array.from({ length: 8 }, (_, d) => Math.sin(seed * 1000 + i * 8 + d + 1)))
  const key = (v: readonly number[]) => v.map((x) => x.toFixed(4)).join(',')
  const stored = async (table: string, tenant: string) =>
    (await sql<{ v: string }>`select embedding::text as v from ${sql.id(table)} where tenant_id = ${tenant}`.execute(t.db)).rows.map((r) =>
      key(JSON.parse(r.v) as number[]),
    )

  it('is bounded per tenant, survives reopening and is never read across tenants', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sample_bounds', dimensions: 8, querySample: { perTenant: 16 } })
    await store.bulkIngest(generateCorpus(small))
    const xs = vectors(1, 40)
    const ys = vectors(2, 10)
    for (const [i, q] of xs.entries()) {
      await store.forTenant('x').search(q)
      if (i % 10 === 9) expect((await store.flushQuerySample()).error).toBeUndefined()
    }
    for (const q of ys) await store.forTenant('y').search(q)
    await store.close()
    expect(await count('sample_bounds_query_sample', 'x')).toBe(16)
    expect(await count('sample_bounds_query_sample', 'y')).toBe(10)
    const xKeys = new Set(xs.map(key))
    const yKeys = new Set(ys.map(key))
    for (const v of await stored('sample_bounds_query_sample', 'x')) expect([xKeys.has(v), yKeys.has(v)]).toEqual([true, false])
    for (const v of await stored('sample_bounds_query_sample', 'y')) expect([xKeys.has(v), yKeys.has(v)]).toEqual([false, true])
    // The newest 16 of x's: the last flush's 10 are all there.
    const xStored = new Set(await stored('sample_bounds_query_sample', 'x'))
    for (const q of xs.slice(30)) expect(xStored.has(key(q))).toBe(true)
    const reopened = await PgVectorStore.open(t.db, { table: 'sample_bounds', dimensions: 8, querySample: { perTenant: 16 } })
    const recall = await reopened.measureRecall({ source: 'recent', tenantId: ['x', 'y'], sample: 100 })
    expect(recall.tenants.map((r) => [r.tenantId, r.queries])).toEqual([
      ['x', 16],
      ['y', 10],
    ])
    await reopened.close()
  })

  itWithServer(testTarget())('two pools flushing the same tenant at once take turns and stay bounded', async () => {
    const other = await connect(t.url!, { maxConnections: 2 })
    try {
      const a = await PgVectorStore.open(t.db, { table: 'sample_race', dimensions: 8, querySample: { perTenant: 16 } })
      const b = await PgVectorStore.open(other, { table: 'sample_race', dimensions: 8, querySample: { perTenant: 16 } })
      await a.bulkIngest(generateCorpus(small))
      for (let round = 0; round < 8; round++) {
        for (const q of vectors(10 + round, 12)) {
          await a.forTenant('x').search(q)
          await b.forTenant('x').search(q.map((v) => -v))
        }
        const flushed = await Promise.all([a.flushQuerySample(), b.flushQuerySample()])
        expect(flushed.map((f) => [f.written, f.error])).toEqual([
          [12, undefined],
          [12, undefined],
        ])
        expect(await count('sample_race_query_sample', 'x')).toBe(16)
      }
      expect(await count('sample_race_query_sample', 'y')).toBe(0)
      await Promise.all([a.close(), b.close()])
    } finally {
      await other.close()
    }
  })

  it('a failed flush leaves search working and the pool healthy; the next flush writes again', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'sample_fail', dimensions: 8, querySample: { perTenant: 16 } })
    await store.bulkIngest(generateCorpus(small))
    const acme = store.forTenant('x')
    await sql`alter table sample_fail_query_sample rename to sample_fail_query_sample_away`.execute(t.db)
    for (const q of vectors(3, 5)) expect(await acme.search(q, { k: 3 })).toHaveLength(3)
    const failed = await store.flushQuerySample()
    expect(failed.written).toBe(0)
    expect(failed.error?.message).toMatch(/sample_fail_query_sample/)
    // More searches than the pool has connections, at once: none was left behind by the failed flush.
    const results = await Promise.all(vectors(4, 24).map((q) => acme.search(q, { k: 3 })))
    expect(results.map((r) => r.length)).toEqual(Array(24).fill(3))
    await sql`alter table sample_fail_query_sample_away rename to sample_fail_query_sample`.execute(t.db)
    await store.flushQuerySample() // the 24 buffered since the failure
    for (const q of vectors(5, 2)) await acme.search(q)
    expect(await store.flushQuerySample()).toEqual({ written: 2 })
    expect(await count('sample_fail_query_sample', 'x')).toBe(16)
    await store.close()
  })

  it('a flush whose trim fails after its insert writes nothing; the pool serves the next flush', async (ctx) => {
    // The failure is injected by a trigger, which Citus refuses on a distributed table.
    if (await hasCitusShardNodes(t.db))
      return skipBecause(ctx, 'the failure is injected by a trigger, which Citus refuses on a distributed table')
    const store = await PgVectorStore.open(t.db, { table: 'sample_trim', dimensions: 8, querySample: { perTenant: 32 } })
    await store.bulkIngest(generateCorpus(small))
    for (const q of vectors(6, 20)) await store.forTenant('x').search(q)
    expect((await store.flushQuerySample()).written).toBe(20)
    // The trim (a DELETE, the flush's last statement) now fails: the insert before it must roll back too.
    await sql`create function sample_trim_refuse() returns trigger language plpgsql as $$ begin raise exception 'trim refused'; end $$`.execute(
      t.db,
    )
    await sql`create trigger refuse before delete on sample_trim_query_sample for each statement execute function sample_trim_refuse()`.execute(
      t.db,
    )
    for (const q of vectors(7, 5)) await store.forTenant('x').search(q)
    const failed = await store.flushQuerySample()
    expect([failed.written, failed.error?.message]).toEqual([0, expect.stringMatching(/trim refused/)])
    expect(await count('sample_trim_query_sample', 'x')).toBe(20)
    await sql`drop trigger refuse on sample_trim_query_sample`.execute(t.db)
    const results = await Promise.all(vectors(8, 12).map((q) => store.forTenant('x').search(q, { k: 2 })))
    expect(results.map((r) => r.length)).toEqual(Array(12).fill(2))
    expect(await store.flushQuerySample()).toEqual({ written: 12 })
    expect(await count('sample_trim_query_sample', 'x')).toBe(32)
    await store.close()
  })

  it('bad options are typed errors before anything is created', async () => {
    for (const querySample of [{ perTenant: 3 }, { maxAgeDays: 0 }, { flushIntervalMs: 10 }, 'yes', null]) {
      await expect(
        PgVectorStore.open(t.db, { table: 'sample_bad', dimensions: 8, querySample: querySample as never }),
      ).rejects.toBeInstanceOf(InvalidArgumentError)
    }
    expect((await sql<{ r: string | null }>`select to_regclass('sample_bad')::text as r`.execute(t.db)).rows[0]!.r).toBeNull()
    const store = await PgVectorStore.open(t.db, { table: 'sample_bounds', dimensions: 8 })
    await expect(store.measureRecall({ source: 'nope' as never })).rejects.toBeInstanceOf(InvalidArgumentError)
  })
})
