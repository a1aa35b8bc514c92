import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, vi } from 'vitest'
import { ragBench } from '../../cli/rag-bench.js'
import { itWithServer } from '../support/skip.js'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { testTarget, useTestDatabase } from '../support/test-database.js'

/**
 * `rag-bench migrate --large-tenant`: one tenant switched to a new space and back while clients
 * search it, each switch and rollback timed; `--vacuum-first` vacuums the new space's table
 * between the backfill and the cycles (docs/store.md, why a large tenant's first switch is slower).
 */
const t = useTestDatabase()
const withServer = itWithServer(testTarget())
afterAll(removeTempDirs)
let dir = ''
beforeAll(() => void (dir = tempDir('pgscale-migrate-large-')))
beforeEach(() => {
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
  vi.spyOn(console, 'log').mockImplementation(() => {})
})
afterEach(() => vi.restoreAllMocks())

describe('rag-bench migrate --large-tenant', () => {
  withServer(
    '--vacuum-first vacuums the new space between the backfill and the cycles; every switch and search is checked; nothing is left',
    async () => {
      const out = join(dir, 'large.json')
      const args = ['--large-tenant', '600', '--cycles', '2', '--searchers', '1', '--dim', '16', '--to-dim', '8', '--batch', '200']
      const code = await ragBench(['migrate', '--pg', t.url!, ...args, '--vacuum-first', '--json', out])
      expect(code).toBe(0)
      const report = JSON.parse(readFileSync(out, 'utf8'))
      expect(report.vacuumSeconds).toBeGreaterThanOrEqual(0)
      expect(report.method).toMatch(/VACUUM \(ANALYZE\) of the new space's table/)
      expect([report.switches.count, report.rollbacks.count, report.reembedded]).toEqual([2, 2, 0])
      expect(report.searches).toMatchObject({ failed: 0, empty: 0, wrongSpace: 0 })
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_class where relname like 'rag_migrate_large%'`.execute(
        t.db,
      )
      expect(rows[0]!.n).toBe(0)
      // Without the option, no vacuum is reported.
      const plain = join(dir, 'plain.json')
      expect(await ragBench(['migrate', '--pg', t.url!, ...args, '--cycles', '1', '--json', plain])).toBe(0)
      expect(JSON.parse(readFileSync(plain, 'utf8')).vacuumSeconds).toBeNull()
    },
  )
})
