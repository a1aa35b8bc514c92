import { spawn } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { describe, expect } from 'vitest'
import { recordedObjects } from '../../src/index.js'
import { itUnless } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * A bench stopped by SIGTERM (a CI job cancelled, `kill`, a container stopped) cleans up as on
 * Ctrl-C: its schema — tables and the records of its stores and rollups, kept in that schema's
 * bookkeeping — is gone, and so is its temporary folder; it exits 143. Each bench runs in a child
 * process and is terminated mid-run, once its tables exist.
 */
const t = useTestDatabase()
const root = join(dirname(fileURLToPath(import.meta.url)), '../..')
const needsUrl = itUnless(!t.target.url && 'a bench in a child process reaches the test database by URL')

/** Waits until `relation` exists (the bench is under way), up to 60 s. */
async function until(relation: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const { rows } = await sql<{ found: boolean }>`select to_regclass(${relation}) is not null as found`.execute(t.db)
    if (rows[0]!.found) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${relation} never appeared`)
}

/** What a bench left: its schema, and any record of an object in it this role can read (any schema's bookkeeping). */
async function leftBehind(schema: string): Promise<{ schema: boolean; records: string[] }> {
  const { rows } = await sql<{ schema: boolean }>`select exists (select from pg_namespace where nspname = ${schema}) as schema`.execute(
    t.db,
  )
  const records = (await recordedObjects(t.db)).filter((r) => r.schema === schema).map((r) => r.key)
  return { schema: rows[0]!.schema, records }
}

async function terminateMidRun(cli: string, argv: string[], relation: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, cli), ...argv, '--pg', t.url!], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  await until(relation)
  child.kill('SIGTERM')
  return { code: await exited, stderr }
}

describe.concurrent('benches stopped by SIGTERM', () => {
  needsUrl('budget: exits 143 and leaves no schema, table or record', async () => {
    const { code, stderr } = await terminateMidRun(
      'cli/budget.ts',
      ['--repeats', '100', '--blocks', '1000'],
      'pgscale_budget.budget_monthly',
    )
    expect(stderr).toMatch(/terminated, cleaning up/)
    expect(code).toBe(143)
    expect(await leftBehind('pgscale_budget')).toEqual({ schema: false, records: [] })
  })

  needsUrl('store-bench: exits 143 and leaves no schema, table, record or temporary folder', async () => {
    const before = new Set(readdirSync(tmpdir()).filter((f) => f.startsWith('pgscale-store-bench-')))
    const { code, stderr } = await terminateMidRun(
      'cli/store-bench.ts',
      ['--chunks', '20000', '--tenants', '2', '--dim', '8', '--rounds', '100', '--skip-langchain'],
      'pgscale_store_bench.bench_chunks',
    )
    expect(stderr).toMatch(/terminated, cleaning up/)
    expect(code).toBe(143)
    expect(await leftBehind('pgscale_store_bench')).toEqual({ schema: false, records: [] })
    const left = readdirSync(tmpdir()).filter((f) => f.startsWith('pgscale-store-bench-') && !before.has(f))
    expect(left.filter((f) => existsSync(join(tmpdir(), f)))).toEqual([])
  })
})
