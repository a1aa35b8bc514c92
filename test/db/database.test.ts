import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { DatabaseError, InvalidArgumentError } from '../../src/index.js'
import { arrayLiteral, inlineParameters } from '../../src/bench-kit.js'
import { useTestDatabase } from '../support/test-database.js'

const t = useTestDatabase()

function binaryCopy(rows: Array<[number, number[]]>): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]
  for (const [id, vector] of rows) {
    const row = Buffer.alloc(2 + 8 + 4 + 4 + 4 * vector.length)
    let o = row.writeInt16BE(2, 0)
    o = row.writeInt32BE(4, o)
    o = row.writeInt32BE(id, o)
    o = row.writeInt32BE(4 + 4 * vector.length, o)
    o = row.writeInt16BE(vector.length, o)
    o = row.writeInt16BE(0, o)
    for (const v of vector) o = row.writeFloatBE(v, o)
    parts.push(row)
  }
  parts.push(Buffer.from([0xff, 0xff]))
  return Buffer.concat(parts)
}

describe('Database', () => {
  it('is a Kysely instance with pgvector values parsed to number arrays', async () => {
    await sql`create table items (id int primary key, name text, embedding vector(2))`.execute(t.db)
    await t.db.insertInto('items').values({ id: 1, name: 'a', embedding: '[1,2]' }).execute()
    const row = await t.db.selectFrom('items').selectAll().where('id', '=', 1).executeTakeFirstOrThrow()
    expect(row).toEqual({ id: 1, name: 'a', embedding: [1, 2] })
  })

  it('copyFrom streams text and binary COPY and reports the rows copied', async () => {
    const text = await t.db.copyFrom('COPY items (id, name, embedding) FROM STDIN', [
      Buffer.from('2\tb\t[3,4]\n'),
      Buffer.from('3\tc\t[5,6]\n'),
    ])
    expect(text).toBe(2)
    async function* chunks() {
      yield binaryCopy([
        [4, [0.25, -1]],
        [5, [7, 8]],
      ])
    }
    const binary = await t.db.copyFrom('COPY items (id, embedding) FROM STDIN WITH (FORMAT binary)', chunks())
    expect(binary).toBe(2)
    const { rows } = await sql<{ id: number; embedding: number[] }>`select id, embedding from items where id in (2, 4) order by id`.execute(
      t.db,
    )
    expect(rows).toEqual([
      { id: 2, embedding: [3, 4] },
      { id: 4, embedding: [0.25, -1] },
    ])
  })

  it('a failed COPY keeps nothing and the handle stays usable', async () => {
    const before = await count()
    const bad = t.db.copyFrom('COPY items (id, name) FROM STDIN', [Buffer.from('10\tok\nnot-a-number\tx\n')])
    await expect(bad).rejects.toMatchObject({ name: 'DatabaseError', sqlState: '22P02' })
    expect(await count()).toBe(before)
  })

  it('transaction(fn, { settings }) applies SET LOCAL for that transaction only', async () => {
    const inside = await t.db.transaction(
      async (trx) =>
        (
          await sql<{
            ef: string
            scan: string
          }>`select current_setting('hnsw.ef_search') as ef, current_setting('hnsw.iterative_scan') as scan`.execute(trx)
        ).rows[0],
      { settings: { 'hnsw.ef_search': 123, 'hnsw.iterative_scan': 'relaxed_order' } },
    )
    expect(inside).toEqual({ ef: '123', scan: 'relaxed_order' })
    const after = await sql<{ ef: string }>`select current_setting('hnsw.ef_search') as ef`.execute(t.db)
    expect(after.rows[0]?.ef).toBe('40')
  })

  it('transaction(fn) commits on success and rolls back everything when fn throws', async () => {
    await t.db.transaction(async (trx) => {
      await trx.insertInto('items').values({ id: 20, name: 'kept' }).execute()
    })
    const failing = t.db.transaction(async (trx) => {
      await trx.insertInto('items').values({ id: 21, name: 'gone' }).execute()
      await trx.copyFrom('COPY items (id, name) FROM STDIN', [Buffer.from('22\tgone too\n')])
      throw new Error('boom')
    })
    await expect(failing).rejects.toThrow('boom')
    const ids = await t.db.selectFrom('items').select('id').where('id', '>=', 20).orderBy('id').execute()
    expect(ids).toEqual([{ id: 20 }])
  })

  it("Kysely's own transaction builder still works", async () => {
    const n = await t.db.transaction().execute(async (trx) => {
      const r = await trx.insertInto('items').values({ id: 30, name: 'builder' }).executeTakeFirst()
      return r.numInsertedOrUpdatedRows
    })
    expect(n).toBe(1n)
  })

  it('rejects settings that are not plain names and values before sending anything', async () => {
    await expect(t.db.transaction(async () => 1, { settings: { "x'; drop table items; --": 1 } })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
    await expect(t.db.transaction(async () => 1, { settings: { 'hnsw.iterative_scan': "off'; drop table items" } })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
    await expect(t.db.transaction(async () => 1, { settings: { 'hnsw.ef_search': Number.NaN } })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
    expect(await count()).toBeGreaterThan(0)
  })

  it('wraps server errors in DatabaseError keeping the SQLSTATE and the cause', async () => {
    const err = await t.db
      .insertInto('items')
      .values({ id: 1, name: 'dup' })
      .execute()
      .catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DatabaseError)
    expect(err).toMatchObject({ code: 'DATABASE_ERROR', sqlState: '23505', constraint: 'items_pkey' })
    expect((err as DatabaseError).cause).toBeInstanceOf(Error)
  })

  it('reports its capabilities, and Citus only on a Citus run', async () => {
    // PGlite: one connection in this process, COPY buffered per call, index builds capped below
    // the 64 MB shared-memory segment it never gives back. A server: a pool of 10, COPY streamed.
    const embedded = t.target.provider === 'embedded'
    expect(t.db.capabilities).toEqual(
      embedded
        ? {
            concurrentConnections: false,
            maxConnections: 1,
            copy: 'buffered',
            multiStatementResults: true,
            maxBuildMemoryMb: 48,
            inProcess: true,
          }
        : { concurrentConnections: true, maxConnections: 10, copy: 'stream', multiStatementResults: true, inProcess: false },
    )
    expect(await t.db.hasCitus()).toBe(Boolean(t.target.citusWorkers))
  })
})

async function count(): Promise<number> {
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from items`.execute(t.db)
  return rows[0]?.n ?? 0
}

describe('arrayLiteral', () => {
  it('round-trips hostile text through the server, bound and inlined, and keeps elements apart', async () => {
    const values = ['plain', 'a,b', '"quoted"', 'back\\slash', '{braces}', 'NULL', '', ' spaced ', "it's", '$pgs0$', 'é😀']
    const literal = arrayLiteral(values)
    const bound = await sql<{ a: string[] }>`select ${literal}::text[] as a`.execute(t.db)
    expect(bound.rows[0]!.a).toEqual(values)
    const inlined = await sql.raw<{ a: string[] }>(inlineParameters('select $1::text[] as a', [literal])).execute(t.db)
    expect(inlined.rows[0]!.a).toEqual(values)
    const numbers = await sql<{ a: number[] }>`select ${arrayLiteral([1, 2.5, -3])}::float8[] as a`.execute(t.db)
    expect(numbers.rows[0]!.a).toEqual([1, 2.5, -3])
    expect(arrayLiteral([])).toBe('{}')
  })
})
