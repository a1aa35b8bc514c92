import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { afterEach, beforeAll, beforeEach, describe, expect, vi } from 'vitest'
import { pgscale } from '../../cli/pgscale.js'
import { PgVectorStore } from '../../src/index.js'
import { seedExpenses } from '../rollup/rollup-fixture.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { itUnless } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * `pgscale`, the ops CLI a deploy step or a cron job runs: migrate (and --print), optimize, drain
 * (--once, and the loop a SIGTERM stops), recall and doctor, with exit codes a cron job alerts on.
 * It connects by URL, so it runs on a server (on PGlite it is skipped with the reason).
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'app_ops')
const root = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'pgscale-ops-'))
const configFile = join(dir, 'pgscale.config.ts')
const needsUrl = itUnless(!t.target.url && 'the ops CLI connects by URL (--pg / DATABASE_URL); PGlite lives in one process')
const DIM = 8
let stdout: string[]
let stderr: string[]

beforeEach(() => {
  stdout = []
  stderr = []
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => (stderr.push(String(chunk)), true))
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (stdout.push(String(chunk)), true))
})
afterEach(() => vi.restoreAllMocks())

const run = (...argv: string[]) => pgscale([...argv, '--pg', t.url!, '--config', configFile])

beforeAll(async () => {
  if (!t.url) return
  await app.create()
  writeFileSync(
    configFile,
    `import { defineConfig } from ${JSON.stringify(join(root, 'src/index.ts'))}
import { expensesRollup } from ${JSON.stringify(join(root, 'bench/synthetic/expenses.ts'))}
const { rollup } = expensesRollup({ source: 'expenses', target: 'ops_monthly', zone: 'UTC' })
export default defineConfig({
  runtimeRole: ${JSON.stringify(app.name)},
  stores: [{ table: 'ops_chunks', dimensions: ${DIM} }],
  rollups: [rollup],
  optimize: { ownIndexAbove: 50 },
})
`,
  )
  await seedExpenses(t.db, { seed: 'ops', rows: 600, tenants: 3, bigTenantRows: 300, months: 4 })
})

describe('pgscale (the ops CLI)', () => {
  needsUrl('migrate runs the config as the owner, again as a no-op; --print writes the same as SQL', async () => {
    expect(await run('migrate')).toBe(0)
    expect(stdout.join('')).toMatch(/migrated: store ops_chunks, rollup ops_monthly/)
    expect(await run('migrate')).toBe(0)
    stdout = []
    expect(await run('migrate', '--print')).toBe(0)
    const text = stdout.join('')
    expect(text).toMatch(/-- pgscale: store:public\.ops_chunks at version 5/)
    expect(text).toMatch(/-- pgscale: rollup:public\.ops_monthly at version 1/)
    expect(text).toMatch(/create or replace trigger "pgscale_ops_monthly_track_ins"/)
    expect(text).toMatch(new RegExp(`grant select, insert, update, delete on "ops_monthly_dirty" to "${app.name}"`))
    // Afterwards the runtime role opens the store without DDL.
    await app.as(async (db) => (await PgVectorStore.open(db, { table: 'ops_chunks', dimensions: DIM, migrate: false })).close())
  })

  needsUrl('optimize tunes every store; doctor and recall exit 1 on what they find, 0 when it is fixed', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'ops_chunks', dimensions: DIM })
    await store.bulkIngest(
      Array.from({ length: 240 }, (_, i) => ({
        tenantId: i < 200 ? 'big' : 'small',
        documentId: `d${i}`,
        chunkIndex: 0,
        content: `chunk ${i}`,
        embedding: axisVector(DIM, i % DIM, (i % 7) / 10),
      })),
    )
    expect(await run('doctor')).toBe(1)
    expect(stdout.join('')).toMatch(/warn {2}tier .*tenant big: 200 chunks \(> 50\) and no index of its own/)
    stdout = []
    expect(await run('optimize', '--json', join(dir, 'optimize.json'))).toBe(0)
    expect(stdout.join('')).toMatch(/"ops_chunks": 1 index\(es\) built/)
    stdout = []
    expect(await run('doctor', '--store', 'ops_chunks')).toBe(0)
    expect(await run('recall')).toBe(0)
    expect(stdout.join('')).toMatch(/ok {4}recall .*tenant big: recall@10 /)
    await sql`update ops_chunks_recall_monitor set recall = 0.5 where tenant_id = 'big'`.execute(t.db)
    stdout = []
    expect(await run('recall', '--json', '-')).toBe(1)
    expect(stdout.join('')).toMatch(/"check": "below-target"/)
    stdout = []
    const invalid =
      await sql`update pg_index set indisvalid = false where indexrelid = (select indexrelid from pg_index x join pg_class c on c.oid = x.indexrelid where c.relname ~ '^ops_chunks_tenant_[0-9a-f]{16}$')`.execute(
        t.db,
      )
    expect(Number(invalid.numAffectedRows)).toBe(1)
    expect(await run('doctor')).toBe(1)
    expect(stdout.join('')).toMatch(/fail {2}invalid-index/)
    await store.close()
  })

  needsUrl('drain --once empties the log; a backlog an hour old is a failure for doctor until then', async () => {
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (2, '2025-11-02T10:00:00Z', 'meals', 12, 'paid')`.execute(
      t.db,
    )
    await sql`update ops_monthly_dirty set marked_at = now() - interval '2 hours'`.execute(t.db)
    expect(await run('doctor', '--store', 'ops_chunks', '--max-backlog-seconds', '60')).toBe(1)
    expect(stdout.join('')).toMatch(/fail {2}backlog .*ops_monthly.*1 dirty key\(s\)/)
    stdout = []
    expect(await run('drain', '--once')).toBe(0)
    expect(stdout.join('')).toMatch(/ops_monthly: 1 bucket\(s\) refreshed/)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ops_monthly_dirty`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
  })

  needsUrl('drain keeps draining in its own process until SIGTERM, then exits 0 (the rollups found from their records)', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'cli/pgscale.ts'), 'drain', '--interval', '100'], {
      // No config module in the repository's root: the rollups come from the database's records.
      env: { ...process.env, DATABASE_URL: t.url! },
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let err = ''
    child.stderr.on('data', (c: Buffer) => (err += c.toString()))
    await new Promise<void>((resolve) => child.stderr.once('data', () => resolve()))
    await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (3, '2025-10-02T10:00:00Z', 'meals', 7, 'paid')`.execute(
      t.db,
    )
    for (let i = 0; i < 100; i++) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ops_monthly_dirty`.execute(t.db)
      if (rows[0]!.n === 0) break
      await new Promise((r) => setTimeout(r, 100))
    }
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(err).toMatch(/drain: ops_monthly; SIGTERM or SIGINT stops/)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ops_monthly_dirty`.execute(t.db)
    expect(rows[0]!.n).toBe(0)
  })

  needsUrl('as the runtime role: doctor, recall and drain work; optimize is refused with a typed error (exit 1)', async () => {
    const as = (...argv: string[]) => pgscale([...argv, '--pg', app.url(), '--config', configFile])
    const drained = await as('drain', '--once')
    if (drained !== 0) throw new Error(stderr.join(''))
    expect([0, 1]).toContain(await as('doctor'))
    expect([0, 1]).toContain(await as('recall'))
    expect(stderr.join('')).not.toMatch(/permission denied/)
    expect(await as('optimize')).toBe(1)
    expect(stderr.join('')).toMatch(/optimize builds and drops HNSW indexes and runs ANALYZE on "ops_chunks", which only its owner/)
  })

  needsUrl('no database is a usage error (exit 2); an unknown store exits 1 naming the known ones', async () => {
    const saved = process.env.DATABASE_URL
    delete process.env.DATABASE_URL
    try {
      expect(await pgscale(['doctor', '--config', configFile])).toBe(2)
      expect(stderr.join('')).toMatch(/no database: pass --pg URL or set DATABASE_URL/)
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved
    }
    expect(await run('optimize', '--store', 'nope')).toBe(1)
    expect(stderr.join('')).toMatch(/no store nope/)
  })
})
