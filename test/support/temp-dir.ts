import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const made = new Set<string>()

/**
 * A new folder in the OS temp directory (`<prefix>XXXXXX`), remembered for {@link removeTempDirs}:
 * a test file that makes one calls `afterAll(removeTempDirs)`, so the suite leaves none behind
 * (scripts/check-no-leftovers.sh checks it). Make it in a test or a `beforeAll`, never at a
 * file's top level: a file whose tests are all skipped runs no `afterAll`.
 *
 * ### Examples
 * ```ts
 * beforeAll(() => void (dir = tempDir('pgscale-cli-')))
 * afterAll(removeTempDirs)
 * ```
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.add(dir)
  return dir
}

/** Removes every folder {@link tempDir} made in this test file. */
export function removeTempDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
  made.clear()
}
