import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PGlite } from '@electric-sql/pglite'
import { connectPglite, type Database } from '../../src/index.js'

/**
 * On `embedded`, each test file has a PGlite of its own. A fresh `PGlite.create()` runs initdb in
 * WebAssembly, and that was most of a file's cost on PGlite (measured in one process each, under
 * load: 12-13 s of CPU for a fresh boot, 3.4-3.7 s for one loaded from a dump of a fresh one). So
 * the global setup boots one fresh PGlite, dumps its data directory once (untouched: no extension,
 * no table), and every file loads that dump: the same cluster a fresh boot gives, without initdb.
 * pgvector is then created per file by `connectPglite` exactly as `provision({ provider:
 * 'embedded' })` does. The fresh boot itself stays tested where it is the subject: the provider
 * suites (test/db) call `provision({ provider: 'embedded' })`, and the app and example runs boot
 * PGlite as an app does.
 */
export async function makePgliteSnapshot(): Promise<{ file: string; remove: () => void }> {
  const pglite = await bootPglite()
  const dump = await pglite.dumpDataDir('none').finally(() => pglite.close())
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-pglite-snapshot-'))
  const file = join(dir, 'pgdata.tar')
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()))
  return { file, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A PGlite with pgvector loaded (as the embedded provider starts it), from `snapshot` when given. */
async function bootPglite(snapshot?: string): Promise<PGlite> {
  const [{ PGlite }, { vector }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/vector')])
  return PGlite.create({ extensions: { vector }, ...(snapshot ? { loadDataDir: new Blob([readFileSync(snapshot)]) } : {}) })
}

/** A test file's embedded database: PGlite from the run's snapshot (a fresh boot without one), pgvector created. */
export async function embeddedTestDatabase(snapshot: string | undefined): Promise<Database> {
  return connectPglite(await bootPglite(snapshot))
}
