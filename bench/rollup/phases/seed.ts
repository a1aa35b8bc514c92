import { spawnSync } from 'node:child_process'
import { closeSync, createReadStream, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { hasCitusShardNodes, type ProvisionedDatabase } from '../../../src/index.js'
import { progress, type Progress } from '../../report/progress.js'
import { expensesCopyText, expensesDdl, generateExpenses } from '../../synthetic/expenses.js'
import { END, SCHEMA, SOURCE, type RollupBenchOptions, type RollupBenchReport } from '../rollup-run.js'
import { dropBenchSchema } from '../../report/bench-cleanup.js'

/**
 * Step 1: a fresh schema; the seeded rows written once to a file (not timed); `psql \copy` of that
 * file into a twin table with the same index (the raw reference), then pgscale's `copyFrom` of the
 * same file into the source, its index and VACUUM ANALYZE (so the visibility map allows index-only
 * scans, as on a table autovacuum has visited).
 *
 * ### Examples
 * ```ts
 * const seeding = await seedSource(provisioned, options, console.error)
 * ```
 */
export async function seedSource(
  provisioned: ProvisionedDatabase,
  o: RollupBenchOptions,
  log: (line: string) => void,
): Promise<Omit<RollupBenchReport['seeding'], 'rollupSeconds'>> {
  const { db } = provisioned
  await dropBenchSchema(db, SCHEMA)
  await sql.raw(`create schema ${SCHEMA}`).execute(db)
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-rollup-bench-'))
  try {
    const file = join(dir, 'expenses.tsv')
    writeCopyFile(file, o)
    const raw = provisioned.url ? await rawCopy(provisioned.url, file, await hasCitusShardNodes(db), log) : null
    const ddl = expensesDdl(SOURCE)
    await sql.raw(ddl.table).execute(db)
    if (await hasCitusShardNodes(db)) {
      await sql`select create_distributed_table(${SOURCE}, 'tenant_id')`.execute(db)
      log(`${SOURCE} distributed by tenant_id (Citus)`)
    }
    const bar = progress('seeding expenses', o.rows, { enabled: o.showProgress })
    let started = performance.now()
    await db.copyFrom(`copy ${SOURCE} (tenant_id, paid_at, category, amount, status) from stdin`, counted(createReadStream(file), bar))
    const seconds = (performance.now() - started) / 1000
    bar.done(`${o.rows.toLocaleString('en-US')} rows in ${seconds.toFixed(1)} s (COPY text, streamed from the file)`)
    started = performance.now()
    await sql.raw(ddl.index).execute(db)
    await sql.raw(`vacuum analyze ${SOURCE}`).execute(db)
    const indexSeconds = (performance.now() - started) / 1000
    log(`(tenant_id, paid_at) index built after the load and VACUUM ANALYZE in ${indexSeconds.toFixed(1)} s`)
    const how =
      'COPY ... FROM STDIN (text) through db.copyFrom, streamed from a file of seeded rows; (tenant_id, paid_at) index built after the load, then VACUUM ANALYZE'
    const ratio = raw ? (seconds + indexSeconds) / (raw.seconds + raw.indexSeconds) : 0
    return { rows: o.rows, seconds, rowsPerSecond: o.rows / seconds, how, indexSeconds, raw: raw ? { ...raw, ratio } : null }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The seeded rows as COPY text in a file. */
function writeCopyFile(file: string, o: RollupBenchOptions): void {
  const fd = openSync(file, 'w')
  try {
    const spec = { seed: o.seed, rows: o.rows, tenants: o.tenants, bigTenantRows: o.bigTenantRows, months: o.months, end: END }
    for (const chunk of expensesCopyText(generateExpenses(spec))) writeSync(fd, chunk)
  } finally {
    closeSync(fd)
  }
}

/** Counts the lines going by, for the progress line. */
async function* counted(source: AsyncIterable<Buffer>, bar: Progress): AsyncGenerator<Buffer> {
  let lines = 0
  for await (const chunk of source) {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
    bar.update(lines)
    yield chunk
  }
}

/** The raw reference: `psql \copy` of the file into a twin table, then the same index and VACUUM ANALYZE; the twin is dropped. */
async function rawCopy(
  url: string,
  file: string,
  citus: boolean,
  log: (line: string) => void,
): Promise<{ seconds: number; indexSeconds: number } | null> {
  const twin = `${SCHEMA}.expenses_raw`
  const ddl = expensesDdl(twin)
  const psql = (command: string) => spawnSync('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', command], { encoding: 'utf8' })
  const created = psql(ddl.table)
  if (created.status !== 0) {
    log(`raw reference skipped: psql is not usable here (${(created.stderr || String(created.error)).trim().split('\n')[0]})`)
    return null
  }
  // On Citus the twin is distributed as the source is, so both loads go through the coordinator.
  if (citus) psql(`select create_distributed_table('${twin}', 'tenant_id')`)
  let started = performance.now()
  const copied = psql(`\\copy ${twin} (tenant_id, paid_at, category, amount, status) from '${file}'`)
  if (copied.status !== 0) throw new Error(`psql \\copy failed: ${copied.stderr}`)
  const seconds = (performance.now() - started) / 1000
  started = performance.now()
  psql(ddl.index)
  psql(`vacuum analyze ${twin}`)
  const indexSeconds = (performance.now() - started) / 1000
  psql(`drop table ${twin}`)
  log(`raw reference: psql \\copy ${seconds.toFixed(1)} s, index + VACUUM ANALYZE ${indexSeconds.toFixed(1)} s`)
  return { seconds, indexSeconds }
}
