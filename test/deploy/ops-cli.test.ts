import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { pgscale } from '../../cli/pgscale.js'
import { expensesDdl, expensesRollup } from '../../bench/synthetic/expenses.js'
import { forgetRecord, PgVectorStore, recordedObjects, type Finding } from '../../src/index.js'
import { seedExpenses } from '../rollup/rollup-fixture.js'
import { useRuntimeRole } from '../support/runtime-role.js'
import { itUnless } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

afterAll(removeTempDirs)

/**
 * `pgscale`, the ops CLI a deploy step or a cron job runs: migrate (and --print), optimize, drain
 * (--once, and the loop a SIGTERM stops), recall and doctor, with exit codes a cron job alerts on.
 * It connects by URL, so it runs on a server (on PGlite it is skipped with the reason).
 */
const t = useTestDatabase()
const app = useRuntimeRole(t, 'app_ops')
const root = fileURLToPath(new URL('../..', import.meta.url))
// Made before the first test (a file whose tests are all skipped runs no afterAll, and makes none).
let dir = ''
let configFile = ''
beforeAll(() => {
  dir = tempDir('pgscale-ops-')
  configFile = join(dir, 'pgscale.config.ts')
})
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
    // (What doctor and recall printed goes with a failure: once, under load, doctor exited 1 here.)
    expect(await run('doctor', '--store', 'ops_chunks'), stdout.join('')).toBe(0)
    expect(await run('recall'), stdout.join('')).toBe(0)
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

describe('pgscale doctor and forget: records of objects that no longer exist', () => {
  const doctorJson = async (...argv: string[]) => {
    const file = join(dir, 'doctor.json')
    const code = await pgscale(['doctor', '--pg', t.url!, '--json', file, ...argv])
    const report = JSON.parse(readFileSync(file, 'utf8')) as { exitCode: number; findings: Finding[] }
    return { code, report, findings: report.findings }
  }

  beforeAll(async () => {
    if (!t.url) return
    // A store dropped behind pgscale's back, a tracked rollup whose source was dropped, a healthy store.
    await (await PgVectorStore.open(t.db, { table: 'gone_chunks', dimensions: DIM })).close()
    await sql`drop table gone_chunks`.execute(t.db)
    await sql.raw(expensesDdl('gone_expenses').table).execute(t.db)
    const { target, rollup } = expensesRollup({ source: 'gone_expenses', target: 'gone_monthly', zone: 'UTC' })
    await target.create(t.db)
    await rollup.track(t.db)
    await sql`drop table gone_expenses`.execute(t.db)
    await (await PgVectorStore.open(t.db, { table: 'fine_chunks', dimensions: DIM })).close()
  })

  needsUrl(
    'doctor reports a dropped store and a dropped rollup source with their fix, checks the healthy store, exits 1 and writes its JSON',
    async () => {
      const { code, report, findings } = await doctorJson()
      expect(code).toBe(1)
      expect(report.exitCode).toBe(1)
      expect(findings).toContainEqual({
        level: 'fail',
        kind: 'store',
        object: 'store:public.gone_chunks',
        check: 'missing',
        detail: 'recorded in pgscale_object_version, but its table "public"."gone_chunks" no longer exists',
        fix: 'pgscale forget store:public.gone_chunks (or create it again: pgscale migrate)',
      })
      expect(findings).toContainEqual(
        expect.objectContaining({
          level: 'fail',
          kind: 'rollup',
          object: 'rollup:public.gone_monthly',
          check: 'missing',
          fix: expect.stringMatching(/^pgscale forget rollup:public.gone_monthly/),
        }),
      )
      expect(findings.find((f) => f.object === 'rollup:public.gone_monthly')!.detail).toMatch(/its source gone_expenses no longer exists/)
      expect(findings).toContainEqual(expect.objectContaining({ level: 'ok', object: '"fine_chunks"', check: 'store' }))
      // The same on stdout with --json -: one JSON document there, the human lines on stderr.
      stdout = []
      expect(await pgscale(['doctor', '--pg', t.url!, '--json', '-'])).toBe(1)
      const piped = JSON.parse(stdout.join('')) as { findings: Finding[] }
      expect(piped.findings.filter((f) => f.check === 'missing').map((f) => f.object)).toEqual([
        'rollup:public.gone_monthly',
        'store:public.gone_chunks',
      ])
      expect(stderr.join('')).toMatch(/fix: pgscale forget store:public.gone_chunks/)
    },
  )

  needsUrl(
    'a table dropped and created again by hand, unlike its record, is a cannot-open finding; the other objects are still checked',
    async () => {
      await (await PgVectorStore.open(t.db, { table: 'redo_chunks', dimensions: DIM })).close()
      await sql`drop table redo_chunks`.execute(t.db)
      await sql`create table redo_chunks (tenant_id text, id text, embedding vector(3))`.execute(t.db)
      const { code, findings } = await doctorJson()
      expect(code).toBe(1)
      const redo = findings.find((f) => f.object === 'public.redo_chunks')!
      expect(redo).toMatchObject({ level: 'fail', kind: 'store', check: 'cannot-open' })
      expect(redo.fix).toMatch(/rename or drop it, then pgscale migrate/)
      expect(findings).toContainEqual(expect.objectContaining({ level: 'ok', object: '"fine_chunks"' }))
      expect(findings).toContainEqual(expect.objectContaining({ check: 'missing', object: 'store:public.gone_chunks' }))
      // forget keeps the record of a table that is there again.
      expect(await pgscale(['forget', 'redo_chunks', '--pg', t.url!])).toBe(1)
      expect(stdout.join('')).toMatch(/kept store:public.redo_chunks: it exists/)
      await sql`drop table redo_chunks`.execute(t.db)
    },
  )

  needsUrl(
    'forget removes records of objects that are gone (named or --missing), keeps those that exist, says when there is nothing to do',
    async () => {
      expect(await pgscale(['forget', 'nope', '--pg', t.url!])).toBe(1)
      expect(stderr.join('')).toMatch(/no recorded object nope \(recorded: .*store:public.fine_chunks/)
      expect(await pgscale(['forget', '--pg', t.url!])).toBe(2)
      expect(await pgscale(['forget', 'fine_chunks', '--pg', t.url!])).toBe(1)
      expect(stdout.join('')).toMatch(/kept store:public.fine_chunks: it exists/)
      stdout = []
      expect(await pgscale(['forget', 'store:public.gone_chunks', '--pg', t.url!])).toBe(0)
      expect(stdout.join('')).toMatch(/forgot store:public.gone_chunks: "public"."gone_chunks" no longer exist/)
      stdout = []
      expect(await pgscale(['forget', '--missing', '--pg', t.url!, '--json', '-'])).toBe(0)
      const report = JSON.parse(stdout.join('')) as { forgotten: Array<{ key: string }> }
      expect(report.forgotten.map((o) => o.key)).toEqual(['rollup:public.gone_monthly', 'store:public.redo_chunks'])
      stdout = []
      expect(await pgscale(['forget', '--missing', '--pg', t.url!])).toBe(0)
      expect(stdout.join('')).toMatch(/nothing to do: all \d+ recorded object\(s\) exist/)
      const { findings } = await doctorJson()
      expect(findings.filter((f) => f.check === 'missing' || f.check === 'cannot-open')).toEqual([])
    },
  )

  needsUrl("a rollup's unqualified source outside this connection's search_path is not taken for dropped", async () => {
    await sql`create schema if not exists ops_elsewhere; create table if not exists ops_elsewhere.hidden_source (id int); create table if not exists hidden_monthly (id int)`.execute(
      t.db,
    )
    await sql`insert into pgscale_object_version (object, version, config) values ('rollup:public.hidden_monthly', 1, '{"source": "hidden_source"}')`.execute(
      t.db,
    )
    try {
      const record = (await recordedObjects(t.db)).find((r) => r.key === 'rollup:public.hidden_monthly')!
      expect(record).toMatchObject({ relations: ['"public"."hidden_monthly"', 'hidden_source'], missing: [] })
      expect(await forgetRecord(t.db, 'rollup:public.hidden_monthly')).toMatchObject({ result: 'exists' })
      await sql`drop table ops_elsewhere.hidden_source`.execute(t.db)
      expect(await forgetRecord(t.db, 'rollup:public.hidden_monthly')).toEqual({
        key: 'rollup:public.hidden_monthly',
        result: 'forgotten',
        missing: ['hidden_source'],
      })
    } finally {
      await sql`delete from pgscale_object_version where object = 'rollup:public.hidden_monthly'; drop table hidden_monthly; drop schema ops_elsewhere cascade`.execute(
        t.db,
      )
    }
  })

  needsUrl('forget beside a migrate re-creating the same store: the record of a table that exists is never removed', async () => {
    for (let i = 0; i < 6; i++) {
      await (await PgVectorStore.open(t.db, { table: 'race_chunks', dimensions: DIM })).close()
      await sql`drop table race_chunks`.execute(t.db)
      const [, forgot] = await Promise.all([
        PgVectorStore.open(t.db, { table: 'race_chunks', dimensions: DIM }).then((s) => s.close()),
        forgetRecord(t.db, 'store:public.race_chunks').catch((err: unknown) => err as Error),
      ])
      const { rows } = await sql<{ table: boolean; record: boolean }>`
        select to_regclass('race_chunks') is not null as table,
          exists (select from pgscale_object_version where object = 'store:public.race_chunks') as record`.execute(t.db)
      expect(rows[0]).toEqual({ table: true, record: true })
      // forget ran before the migrate (forgotten) or after it (kept); a record it could not find is a typed error.
      if (forgot instanceof Error) expect(forgot.message).toMatch(/no record store:public.race_chunks/)
    }
  })
})

describe('pgscale: what every command says', () => {
  let emptyConfig = ''
  beforeAll(() => {
    emptyConfig = join(dir, 'empty.config.mjs')
    writeFileSync(emptyConfig, 'export default { stores: [], rollups: [] }\n')
  })

  it('--version prints the package version; --help names the config file it looks for and the exit codes', async () => {
    expect(await pgscale(['--version'])).toBe(0)
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(stdout.join('').trim()).toBe(pkg.version)
    stdout = []
    expect(await pgscale(['--help'])).toBe(0)
    expect(stdout.join('')).toMatch(/pgscale\.config\.mjs/)
    expect(stdout.join('')).toMatch(/Exit codes: 0 done/)
    expect(stdout.join('')).toMatch(/forget/)
  })

  it('migrate without a config says which files it looked for (exit 2), and still writes its JSON', async () => {
    expect(await pgscale(['migrate', '--pg', 'postgres://nowhere/db', '--json', '-'])).toBe(2)
    expect(stderr.join('')).toMatch(
      /migrate needs a config module with stores or rollups: no --config given and none of pgscale\.config\.mjs, /,
    )
    expect(JSON.parse(stdout.join(''))).toMatchObject({ command: 'migrate', exitCode: 2, error: { code: 'INVALID_ARGUMENT' } })
  })

  needsUrl('recall, optimize and drain with nothing to work on say "nothing to do" and why (exit 0), with --json too', async () => {
    const empty = (...argv: string[]) => pgscale([...argv, '--pg', t.url!, '--config', emptyConfig])
    for (const argv of [['recall'], ['optimize'], ['drain', '--once'], ['drain'], ['doctor']]) {
      stdout = []
      expect(await empty(...argv)).toBe(0)
      expect(stdout.join('')).toMatch(/^nothing to do: no (store|tracked rollup)[^\n]*\(the config module declares none\)\n$/)
    }
    stdout = []
    expect(await empty('drain', '--once', '--json', '-')).toBe(0)
    expect(JSON.parse(stdout.join(''))).toEqual({ command: 'drain', exitCode: 0, rollups: {} })
    expect(stderr.join('')).toMatch(/nothing to do: no tracked rollup/)
  })
})

describe('pgscale migrate-model: a tenant moved to another embedding space from a deploy step', () => {
  needsUrl("--status in every store with spaces, the backfill with the config module's embed, --switch", async () => {
    const file = join(dir, 'spaces.config.mjs')
    writeFileSync(
      file,
      `import { defineConfig } from ${JSON.stringify(join(root, 'src/index.ts'))}
export default defineConfig({
  stores: [{ table: 'mm_chunks', dimensions: ${DIM} }],
  embed: { small: async (texts) => texts.map((text) => [1, (text.length % 7) + 1]) },
})
`,
    )
    const store = await PgVectorStore.open(t.db, { table: 'mm_chunks', dimensions: DIM })
    await store.forTenant('acme').replaceDocument(
      'd',
      [0, 1, 2].map((i) => ({ content: `chunk ${i}`, embedding: axisVector(DIM, i) })),
    )
    await store.addSpace({ name: 'small', dimensions: 2 })
    await store.close()
    const mm = (...argv: string[]) => pgscale(['migrate-model', ...argv, '--pg', t.url!, '--config', file])
    expect(await mm('--tenant', 'acme', '--status')).toBe(0)
    expect(stdout.join('')).toMatch(/"mm_chunks" acme: searches "default" \(active\): 3\/3 embedded, 0 pending/)
    expect(await mm('--tenant', 'acme')).toBe(2)
    expect(await mm('--tenant', 'acme', '--to', 'other')).toBe(2)
    expect(stderr.join('')).toMatch(/needs the space's embedding function/)
    stdout = []
    expect(await mm('--tenant', 'acme', '--to', 'small', '--switch', '--json', '-')).toBe(0)
    const report = JSON.parse(stdout.join('')) as { stores: Array<{ active: string; previous: string; total: number }> }
    expect(report.stores).toMatchObject([{ active: 'small', previous: 'default', total: 3 }])
  })
})
