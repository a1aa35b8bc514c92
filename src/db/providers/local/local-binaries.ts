import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/** Where a PostgreSQL installation with pgvector lives. */
export interface LocalBinaries {
  /** Directory holding `initdb` and `postgres`. */
  binDir: string
  /** Major version, e.g. 15. */
  major: number
  /** pgvector's `default_version` from its control file. */
  vectorVersion: string
  /** Citus's `default_version`, when its extension files are installed for this server. */
  citusVersion?: string
}

/** The result of looking: binaries, or the reason none can be used. */
export type LocalBinariesLookup = { ok: true; binaries: LocalBinaries } | { ok: false; reason: string }

function candidateBinDirs(only?: string): string[] {
  if (only) return [only]
  const dirs: string[] = []
  for (const root of ['/usr/lib/postgresql', '/usr/local/pgsql']) {
    if (!existsSync(root)) continue
    if (existsSync(join(root, 'bin'))) dirs.push(join(root, 'bin'))
    for (const entry of readdirSync(root)) dirs.push(join(root, entry, 'bin'))
  }
  for (const root of ['/usr', '/opt/homebrew/opt', '/usr/local/opt']) {
    if (!existsSync(root)) continue
    for (const entry of readdirSync(root)) {
      if (/^(pgsql-\d+|postgresql(@\d+)?)$/.test(entry)) dirs.push(join(root, entry, 'bin'))
    }
  }
  try {
    dirs.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim())
  } catch {
    // no pg_config on PATH
  }
  return [...new Set(dirs)]
}

function pgConfig(binDir: string, flag: string): string | undefined {
  const exe = join(binDir, 'pg_config')
  if (!existsSync(exe)) return undefined
  try {
    return execFileSync(exe, [flag], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  } catch {
    return undefined
  }
}

/**
 * Finds the newest PostgreSQL installation that has `initdb`, `postgres` and the pgvector
 * extension files, or says why there is none. `binDir` (or `PGSCALE_PG_BIN`) names the one directory to use.
 *
 * ### Examples
 * ```ts
 * const found = findLocalBinaries()
 * if (!found.ok) console.log(found.reason)
 * ```
 */
export function findLocalBinaries(binDir?: string): LocalBinariesLookup {
  const withServer = candidateBinDirs(binDir ?? process.env.PGSCALE_PG_BIN).filter(
    (dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres')),
  )
  if (withServer.length === 0) {
    return {
      ok: false,
      reason:
        `no PostgreSQL server binaries (initdb, postgres) found${binDir ? ` in ${binDir}` : ''}; ` +
        'install them with `npm run db:install` or point PGSCALE_PG_BIN at their directory',
    }
  }
  const found: LocalBinaries[] = []
  const missingVector: string[] = []
  for (const binDir of withServer) {
    const version = pgConfig(binDir, '--version') ?? ''
    const major = Number(/PostgreSQL (\d+)/.exec(version)?.[1] ?? Number.NaN)
    const shareDir = pgConfig(binDir, '--sharedir')
    const libDir = pgConfig(binDir, '--pkglibdir')
    const control = shareDir ? join(shareDir, 'extension', 'vector.control') : ''
    const hasLibrary = libDir ? ['vector.so', 'vector.dylib'].some((f) => existsSync(join(libDir, f))) : false
    if (!Number.isFinite(major) || !control || !existsSync(control) || !hasLibrary) {
      missingVector.push(binDir)
      continue
    }
    const vectorVersion = /default_version\s*=\s*'([^']+)'/.exec(readFileSync(control, 'utf8'))?.[1] ?? '0'
    const citusControl = join(shareDir!, 'extension', 'citus.control')
    const citusVersion =
      existsSync(citusControl) && libDir && existsSync(join(libDir, 'citus.so'))
        ? /default_version\s*=\s*'([^']+)'/.exec(readFileSync(citusControl, 'utf8'))?.[1]
        : undefined
    found.push({ binDir, major, vectorVersion, ...(citusVersion ? { citusVersion } : {}) })
  }
  found.sort((a, b) => b.major - a.major)
  const best = found[0]
  if (!best) {
    return {
      ok: false,
      reason:
        `PostgreSQL found (${missingVector.join(', ')}) but without the pgvector extension files; ` +
        'install pgvector with `npm run db:install`',
    }
  }
  return { ok: true, binaries: best }
}
