import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { checkProvider, compareVersions, connect, ConnectionError, provision, type ProviderName, type ProvisionOptions } from '../../src/index.js'
import { testTarget } from '../support/test-database.js'

/**
 * Every provider available on this machine gets the same smoke test; an unavailable one is
 * reported as skipped with its reason in the test name (and printed), never silently.
 */
const target = testTarget()
const providers: Array<{ name: ProviderName; options: ProvisionOptions; why?: string }> = [
  { name: 'local', options: { settings: { fsync: 'off' } } },
  { name: 'embedded', options: {} },
  { name: 'container', options: {} },
  {
    name: 'url',
    options: { url: process.env.PGSCALE_TEST_DATABASE_URL ?? target.url },
    why: 'no server URL in this run (PGSCALE_TEST_DATABASE_URL unset and the run is on embedded)',
  },
]

describe('provider smoke tests', () => {
  for (const { name, options, why } of providers) {
    const check = checkProvider(name, options)
    if (!check.available) {
      const reason = name === 'url' && why ? why : check.reason
      console.warn(`[pgscale tests] provider ${name} skipped: ${reason}`)
      it.skip(`${name}: skipped — ${reason}`, () => {})
      continue
    }

    it(`${name}: pgvector >= 0.8, a vector round-trips, an HNSW index builds`, async () => {
      const { db, info, url, stop } = await provision({ provider: name, ...options })
      try {
        expect(info.provider).toBe(name)
        expect(compareVersions(info.pgvectorVersion, '0.8.0')).toBeGreaterThanOrEqual(0)
        expect(info.serverVersionNum).toBeGreaterThanOrEqual(150000)
        expect(Object.keys(info.settings).sort()).toEqual(
          ['maintenance_work_mem', 'max_parallel_maintenance_workers', 'shared_buffers', 'work_mem'],
        )
        if (name === 'embedded') expect(url).toBeUndefined()
        else expect(url).toMatch(/^postgres(ql)?:\/\//)

        await sql`create table smoke (id int primary key, embedding vector(3))`.execute(db)
        await sql`insert into smoke values (1, ${'[0.5,-1.25,3]'}), (2, ${'[1,1,1]'})`.execute(db)
        const { rows } = await sql<{ embedding: number[] }>`select embedding from smoke where id = 1`.execute(db)
        expect(rows[0]?.embedding).toEqual([0.5, -1.25, 3])

        await sql`create index smoke_hnsw on smoke using hnsw (embedding vector_l2_ops)`.execute(db)
        const index = await sql<{ am: string }>`
          select am.amname as am from pg_class c join pg_am am on am.oid = c.relam where c.relname = 'smoke_hnsw'`.execute(db)
        expect(index.rows[0]?.am).toBe('hnsw')
        const nearest = await sql<{ id: number }>`
          select id from smoke order by embedding <-> ${'[1,1,1.1]'} limit 1`.execute(db)
        expect(nearest.rows[0]?.id).toBe(2)
      } finally {
        await stop()
      }
      if (name === 'local' && url) {
        // stop() shut the throwaway cluster down: its port no longer answers.
        await expect(connect(url, { requireVector: false })).rejects.toBeInstanceOf(ConnectionError)
      }
    }, 120_000)
  }
})
