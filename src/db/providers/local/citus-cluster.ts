import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import { ProviderUnavailableError } from '../../../errors.js'
import { connect } from '../../connect.js'
import type { LocalBinaries } from './local-binaries.js'
import { startLocalCluster, type LocalCluster } from './local-cluster.js'
import type { ServerSettings } from '../provider.js'

/** A Citus coordinator and its workers, each a throwaway local cluster on loopback. */
export interface CitusCluster {
  /** The coordinator's URL: what the app connects to. */
  url: string
  coordinator: LocalCluster
  workers: LocalCluster[]
  stop(): Promise<void>
}

/** Where to get Citus: it is not packaged in Debian; its own instructions build or install it. */
export const CITUS_INSTALL_HINT =
  'Citus is not installed for this PostgreSQL: install it for the server (https://docs.citusdata.com/en/stable/installation/ — ' +
  'packages for Debian/Ubuntu/RHEL, or build it from source with PGXS), then run again'

/**
 * Starts a Citus coordinator and `workers` workers on loopback (one superuser password shared by
 * all, `shared_preload_libraries = citus`), creates `citus` and `vector` on every node, registers the
 * coordinator and the workers; `stop()` stops them all. Without Citus installed: a
 * {@link ProviderUnavailableError} that says how to install it.
 *
 * ### Examples
 * ```ts
 * const cluster = await startCitusCluster(binaries, DEFAULT_SERVER_SETTINGS, 2)
 * ```
 */
export async function startCitusCluster(binaries: LocalBinaries, settings: ServerSettings, workers: number): Promise<CitusCluster> {
  if (!binaries.citusVersion) throw new ProviderUnavailableError('local', CITUS_INSTALL_HINT)
  if (!Number.isInteger(workers) || workers < 1 || workers > 16) {
    throw new ProviderUnavailableError('local', `citus.workers must be an integer from 1 to 16, got ${String(workers)}`)
  }
  const password = randomBytes(18).toString('hex')
  const nodeSettings = { ...settings, shared_preload_libraries: 'citus', max_prepared_transactions: 100 }
  const started: LocalCluster[] = []
  try {
    for (let i = 0; i <= workers; i++) started.push(await startLocalCluster(binaries, nodeSettings, { password }))
    for (const node of started) await prepareNode(node.url, password)
    const [coordinator, ...rest] = started as [LocalCluster, ...LocalCluster[]]
    await registerNodes(coordinator, rest)
    let stopped: Promise<void> | undefined
    return {
      url: coordinator.url,
      coordinator,
      workers: rest,
      stop: () => (stopped ??= Promise.all(started.map((n) => n.stop())).then(() => undefined)),
    }
  } catch (err) {
    await Promise.all(started.map((n) => n.stop().catch(() => {})))
    throw err instanceof ProviderUnavailableError
      ? err
      : new ProviderUnavailableError('local', `could not start Citus: ${String(err)}`, { cause: err })
  }
}

/** `citus` and `vector` on a node, and the credentials its connections to the other nodes use (nodeid 0: every node). */
async function prepareNode(url: string, password: string): Promise<void> {
  const db = await connect(url, { maxConnections: 1, requireVector: false })
  try {
    await sql`create extension if not exists citus`.execute(db)
    await sql`create extension if not exists vector`.execute(db)
    // Nodes talk over loopback only: no TLS (Citus's default, sslmode=require, had libpq in the
    // server look for client certificates in the invoking user's home).
    await sql`alter system set citus.node_conninfo = 'sslmode=disable'`.execute(db)
    await sql`select pg_reload_conf()`.execute(db)
    await sql`insert into pg_dist_authinfo (nodeid, rolename, authinfo) values (0, 'postgres', ${`password=${password}`})`.execute(db)
  } finally {
    await db.close()
  }
}

async function registerNodes(coordinator: LocalCluster, workers: LocalCluster[]): Promise<void> {
  const db = await connect(coordinator.url, { maxConnections: 1, requireVector: false })
  try {
    await sql`select citus_set_coordinator_host('127.0.0.1', ${coordinator.port})`.execute(db)
    for (const w of workers) await sql`select citus_add_node('127.0.0.1', ${w.port})`.execute(db)
  } finally {
    await db.close()
  }
}
