import { sql } from 'kysely'
import { execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { findContainerEngine } from '../../src/bench-kit.js'
import { checkProvider, connect, ConnectionError, provision, type ProviderName, type ProvisionOptions } from '../../src/index.js'
import { compareVersions } from '../../src/bench-kit.js'
import { testTarget } from '../support/test-database.js'
import { itUnless } from '../support/skip.js'

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

/** podman containers publishing `port` (the provider's, when it was not removed). */
function containersOnPort(port: string): string[] {
  const out = execFileSync('podman', ['ps', '-a', '--format', '{{.ID}} {{.Ports}}'], { encoding: 'utf8' })
  return out.split('\n').filter((line) => line.includes(`:${port}->`))
}

describe('container teardown', () => {
  const engine = findContainerEngine()
  const itPodman = itUnless(
    engine?.kind !== 'podman' &&
      `needs podman (this test lists its containers): ${engine ? `the engine here is ${engine.kind}` : 'no container engine'}`,
  )
  itPodman(
    'a process interrupted (SIGINT) with a container running leaves no container behind',
    async () => {
      const worker = fileURLToPath(new URL('./container-interrupt-worker.ts', import.meta.url))
      const child = spawn(process.execPath, ['--import', 'tsx', worker], { stdio: ['ignore', 'pipe', 'inherit'] })
      const url = await new Promise<string>((resolve, reject) => {
        let out = ''
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          const match = /ready (\S+)/.exec(out)
          if (match) resolve(match[1]!)
        })
        child.on('exit', (code) => reject(new Error(`worker exited with ${code} before it was ready`)))
      })
      const port = new URL(url).port
      expect(containersOnPort(port)).toHaveLength(1)
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
      child.kill('SIGINT')
      expect(await exited).toBe(130)
      expect(containersOnPort(port)).toEqual([])
    },
    120_000,
  )
})

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
        expect(Object.keys(info.settings).sort()).toEqual([
          'maintenance_work_mem',
          'max_parallel_maintenance_workers',
          'shared_buffers',
          'work_mem',
        ])
        if (name === 'container') expect(info.container).toEqual({ engine: findContainerEngine()!.kind, image: expect.any(String) })
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
      if (name === 'container' && url && findContainerEngine()?.kind === 'podman') {
        expect(containersOnPort(new URL(url).port)).toEqual([])
      }
      if (name === 'local' && url) {
        // stop() shut the throwaway cluster down: its port no longer answers.
        await expect(connect(url, { requireVector: false })).rejects.toBeInstanceOf(ConnectionError)
      }
    }, 120_000)
  }
})
