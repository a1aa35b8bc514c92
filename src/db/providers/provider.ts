import { InvalidArgumentError } from '../../errors.js'
import type { Database } from '../database.js'
import type { ServerInfo } from '../server-info.js'

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
