import { InvalidArgumentError } from '../../errors.js'
import type { Database } from '../database.js'
import { readServerInfo, type ServerInfo } from '../server-info.js'

/** Server settings for a cluster pgscale starts (`local`, `container`): `{ shared_buffers: '512MB' }`. */
export type ServerSettings = Readonly<Record<string, string | number>>

/** A database that {@link provision} obtained, and how to give it back. */
export interface ProvisionedDatabase {
  /** The handle. */
  db: Database
  /** A URL other processes can connect to (absent for `embedded`: PGlite lives in this process). */
  url?: string
  /** Provider, versions and settings; plus why `auto` skipped earlier providers. */
  info: ServerInfo & { skipped: SkippedProvider[] }
  /** Closes the handle and stops/removes what was started (cluster, container, PGlite). Idempotent. */
  stop(): Promise<void>
  /** With `standbys` (the local provider): each streaming standby's URL and a way to stop and start it again (fault tests, benches). */
  standbys?: Array<{
    /** The standby's connection URL (read-only: it replays the primary's WAL). */
    url: string
    /** Stops the standby's server; its data directory stays, for `restart` (the primary's `stop` removes it). */
    stop(): Promise<void>
    /** Starts the standby's server again (stopping it first if it runs), on the same port and data. */
    restart(): Promise<void>
  }>
}

/** Options of `provision()`; each provider reads the ones that concern it. */
export interface ProvisionOptions {
  /**
   * Which provider (a registered name, see `PROVIDERS`); `auto` (default): a configured URL (`url`,
   * `DATABASE_URL`) if there is one — and if it fails, that error, never another provider — else
   * local → container → embedded.
   */
  provider?: string
  /** For `url`: the server. Default `DATABASE_URL`. */
  url?: string
  /** For `local` and `container`: server settings, merged over {@link DEFAULT_SERVER_SETTINGS}. */
  settings?: ServerSettings
  /** For `embedded`: a directory to persist PGlite's data in. Default: in memory. */
  dataDir?: string
  /** Most connections the handle opens at once (server providers). Default 10. */
  maxConnections?: number
  /**
   * For `container`: the image. Default `PGSCALE_CONTAINER_IMAGE`, else `pgvector/pgvector:pg17` on
   * Docker and `localhost/pgscale/postgres-pgvector:15` (built by `npm run container:setup`) on podman.
   */
  image?: string
  /** For `local`: the directory with `initdb` and `postgres`. Default: the newest install found. */
  pgBin?: string
  /**
   * For `local`: a Citus coordinator with this many workers on loopback instead of one server
   * (Citus must be installed for the server; otherwise a `ProviderUnavailableError` says how).
   */
  citus?: { workers: number }
  /**
   * For `local`: this many streaming standbys of the cluster on other loopback ports
   * (`pg_basebackup -R`, hot standby), in `standbys`; for read replicas (`ReplicaSet`). Not with `citus`.
   */
  standbys?: number
}

/** Whether a provider can be used here, and if not, why (with the fix). */
export type ProviderCheck = { available: true } | { available: false; reason: string }

/** A provisioned database before `auto` adds what it skipped. */
export type Provisioned = Omit<ProvisionedDatabase, 'info'> & { info: Omit<ProvisionedDatabase['info'], 'skipped'> }

/**
 * One way to get a PostgreSQL + pgvector database. Each lives in `src/db/providers/<name>.ts`;
 * the registry (`registry.ts`) lists the built-in ones, and `registerProvider` adds another.
 *
 * ### Examples
 * ```ts
 * export const noopProvider: Provider = {
 *   name: 'noop', auto: 'never',
 *   check: () => ({ available: false, reason: 'never here' }),
 *   start: async () => { throw new ProviderUnavailableError('noop', 'never here') },
 * }
 * ```
 */
export interface Provider {
  readonly name: string
  /**
   * What `auto` does with it: `exclusive` — when available it is the answer, and its failure is the
   * error (a configured URL); `try` — used if it starts, skipped with the reason if not; `never`.
   */
  readonly auto: 'exclusive' | 'try' | 'never'
  /** Runs in this process, with no URL for other processes (PGlite). */
  readonly inProcess?: boolean
  /** Whether it can be used here, without starting anything. */
  check(options: ProvisionOptions): ProviderCheck
  /** Starts (or connects to) the database; throws a `PgScaleError` when it cannot. */
  start(options: ProvisionOptions): Promise<Provisioned>
}

/**
 * The handle, its URL and `stop()` (idempotent: closes the handle, then `stop` the rest), with
 * the server's versions and settings read once.
 */
export async function describeProvisioned(
  provider: string,
  db: Database,
  url: string | undefined,
  stop: () => Promise<void>,
): Promise<Provisioned> {
  let stopped: Promise<void> | undefined
  const info = await closeOnFailure(db, () => readServerInfo(db, provider), stop)
  return { db, url, info, stop: () => (stopped ??= db.close().finally(stop)) }
}

/** A provider that `auto` did not use, and why. */
export interface SkippedProvider {
  provider: string
  reason: string
}

/** Settings a started cluster gets unless overridden: sized for benches on a small machine. */
export const DEFAULT_SERVER_SETTINGS: ServerSettings = {
  shared_buffers: '512MB',
  maintenance_work_mem: '1GB',
  max_parallel_maintenance_workers: 1,
  work_mem: '16MB',
  max_connections: 100,
}

/** Renders settings as `-c name=value` arguments after validating them. */
export function settingArgs(settings: ServerSettings): string[] {
  const args: string[] = []
  for (const [name, value] of Object.entries(settings)) {
    if (!/^[a-z_][a-z0-9_.]*$/.test(name) || !/^[A-Za-z0-9_.\-/]+$/.test(String(value))) {
      throw new InvalidArgumentError(`invalid server setting ${name}=${String(value)}`)
    }
    args.push('-c', `${name}=${String(value)}`)
  }
  return args
}

/** Runs `fn` with `db`, closing `db` (and running `cleanup`) if it throws. */
export async function closeOnFailure<T>(db: Database, fn: () => Promise<T>, cleanup?: () => Promise<void>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    await db.close().catch(() => {})
    await cleanup?.().catch(() => {})
    throw err
  }
}
