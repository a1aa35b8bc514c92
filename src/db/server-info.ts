import { sql } from 'kysely'
import { DatabaseError, ExtensionMissingError } from '../errors.js'
import type { Database } from './database.js'
import { SQLSTATE } from '../sql/sqlstate.js'

/** The lowest pgvector pgscale supports: iterative index scans arrived in 0.8.0. */
export const MIN_PGVECTOR_VERSION = '0.8.0'

/** The server settings that decide bench numbers; printed by every CLI and stored in every report. */
export const REPORTED_SETTINGS = ['shared_buffers', 'maintenance_work_mem', 'max_parallel_maintenance_workers', 'work_mem'] as const

/** Which server a handle talks to. */
export interface ServerInfo {
  /** The provider's name: `url`, `local`, `container`, `embedded` (or a registered one). */
  provider: string
  /** `server_version`, e.g. `15.20` or `17.5`. */
  serverVersion: string
  /** `server_version_num`, e.g. `150020`. */
  serverVersionNum: number
  /** Installed pgvector version, e.g. `0.8.0`. */
  pgvectorVersion: string
  /** Current values of `shared_buffers`, `maintenance_work_mem`, `max_parallel_maintenance_workers` and `work_mem` (`REPORTED_SETTINGS` of `pgscale/bench-kit`), and any other setting read. */
  settings: Record<string, string>
  /** For `container`: the engine that ran it and the image. */
  container?: { engine: 'docker' | 'podman'; image: string }
  /** When the server is a Citus coordinator: Citus's version and its active worker nodes. */
  citus?: { version: string; workers: number }
}

/** Compares dotted versions numerically: `compareVersions('0.10.0', '0.8.1') > 0`. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0)
  const pb = b.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0)
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

const INSTALL_HINT =
  'Install pgvector >= 0.8 on the server: on Debian/Ubuntu `npm run db:install` (scripts/install-postgres.sh); ' +
  'with Docker `docker compose up -d` (pgvector/pgvector:pg17); elsewhere see https://github.com/pgvector/pgvector#installation. ' +
  'Or run without a server: `provision({ provider: "embedded" })`.'

/**
 * Makes sure pgvector >= 0.8 is installed in the database (`CREATE EXTENSION IF NOT EXISTS vector`)
 * and returns its version; otherwise throws {@link ExtensionMissingError} saying how to install it.
 *
 * ### Examples
 * ```ts
 * const version = await ensureVectorExtension(db) // '0.8.0'
 * ```
 */
export async function ensureVectorExtension(db: Database): Promise<string> {
  let version = await installedVectorVersion(db)
  if (version === undefined) {
    const { rows } = await sql<{ v: string | null }>`
      select default_version as v from pg_available_extensions where name = 'vector'`.execute(db)
    if (rows.length === 0) {
      throw new ExtensionMissingError(`The server has no pgvector extension (vector). ${INSTALL_HINT}`)
    }
    try {
      await sql`create extension if not exists vector`.execute(db)
    } catch (err) {
      // Two processes creating it at once: the loser sees a unique violation; the extension exists.
      if (!(err instanceof DatabaseError && (err.sqlState === SQLSTATE.uniqueViolation || err.sqlState === SQLSTATE.duplicateObject))) {
        const privilege = err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege
        throw new ExtensionMissingError(
          privilege
            ? 'pgvector is available but this role may not create it: ask a superuser (or the database owner, where pgvector is ' +
                'trusted) to run `CREATE EXTENSION vector` in this database, or run the migration `vectorExtensionMigration` ' +
                "(pgscale's migrations/0001-vector-extension.ts) with your app's migrations as such a role."
            : `CREATE EXTENSION vector failed. ${INSTALL_HINT}`,
          { cause: err },
        )
      }
    }
    version = (await installedVectorVersion(db)) ?? ''
  }
  if (compareVersions(version, MIN_PGVECTOR_VERSION) < 0) {
    throw new ExtensionMissingError(
      `pgvector ${version} is installed; pgscale needs >= ${MIN_PGVECTOR_VERSION} (iterative index scans). ` +
        `Upgrade the package, then run \`ALTER EXTENSION vector UPDATE\`. ${INSTALL_HINT}`,
    )
  }
  return version
}

async function installedVectorVersion(db: Database): Promise<string | undefined> {
  const { rows } = await sql<{ v: string }>`select extversion as v from pg_extension where extname = 'vector'`.execute(db)
  return rows[0]?.v
}

/**
 * Reads the server's versions and the settings that matter for benches.
 *
 * ### Examples
 * ```ts
 * const info = await readServerInfo(db, 'url') // { serverVersion: '15.20', pgvectorVersion: '0.8.0', ... }
 * ```
 */
export async function readServerInfo(db: Database, provider: string): Promise<ServerInfo> {
  const { rows } = await sql<{ name: string; value: string }>`
    select name, current_setting(name) as value from unnest(${[
      'server_version',
      'server_version_num',
      ...REPORTED_SETTINGS,
    ]}::text[]) as name`.execute(db)
  const settings = Object.fromEntries(rows.map((r) => [r.name, r.value]))
  const serverVersion = (settings.server_version ?? '').split(' ')[0] ?? ''
  const serverVersionNum = Number(settings.server_version_num)
  delete settings.server_version
  delete settings.server_version_num
  return {
    provider,
    serverVersion,
    serverVersionNum,
    pgvectorVersion: (await installedVectorVersion(db)) ?? 'none',
    settings,
    ...(await citusInfo(db)),
  }
}

/** Citus's version and active worker count, when the extension is installed. */
async function citusInfo(db: Database): Promise<Pick<ServerInfo, 'citus'>> {
  const { rows } = await sql<{ v: string }>`select extversion as v from pg_extension where extname = 'citus'`.execute(db)
  if (!rows[0]) return {}
  const { rows: nodes } = await sql<{ n: number }>`
    select count(*)::int as n from pg_dist_node where noderole = 'primary' and isactive and groupid <> 0`.execute(db)
  return { citus: { version: rows[0].v, workers: nodes[0]?.n ?? 0 } }
}
