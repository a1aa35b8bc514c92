import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * pgscale's version, from the nearest `package.json` named `pgscale` above this file (the
 * repository's, or the installed package's from `dist/cli/`).
 *
 * ### Examples
 * ```ts
 * program.version(packageVersion())
 * ```
 */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'pgscale' && pkg.version) return pkg.version
    }
    const up = dirname(dir)
    if (up === dir) return 'unknown'
    dir = up
  }
}
