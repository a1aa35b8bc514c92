import { spawnSync } from 'node:child_process'
import { InvalidArgumentError, PgScaleError, ProviderUnavailableError } from '../errors.js'
import { connect, connectPglite, redactUrl } from './connect.js'
import type { Database } from './database.js'
import { configureTestcontainers, findContainerEngine } from './providers/container-engine.js'
import { registerExitCleanup } from './providers/exit-cleanup.js'
import { findLocalBinaries } from './providers/local-binaries.js'
import { startLocalCluster } from './providers/local-cluster.js'
import {
  closeOnFailure,
  DEFAULT_SERVER_SETTINGS,
  settingArgs,
  type ProvisionedDatabase,
  type ServerSettings,
  type SkippedProvider,
} from './providers/provider.js'
import { readServerInfo, type ProviderName } from './server-info.js'

/** Options of {@link provision}. */
export interface ProvisionOptions {
  /**
   * Which provider; `auto` (default): a configured URL (`url`, `DATABASE_URL`) if there is one —
   * and if it fails, that error, never another provider — else local → container → embedded.
   */
  provider?: ProviderName | 'auto'
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
}

/** Whether a provider can be used here, and if not, why (with the fix). */
export type ProviderCheck = { available: true } | { available: false; reason: string }

/**
 * Says, without starting anything, whether a provider can be used on this machine.
 *
 * ### Examples
 * ```ts
 * const check = checkProvider('local')
 * if (!check.available) console.log(`local: ${check.reason}`)
 * ```
 */
export function checkProvider(provider: ProviderName, options: Pick<ProvisionOptions, 'url' | 'pgBin'> = {}): ProviderCheck {
  switch (provider) {
    case 'url':
      return options.url ?? process.env.DATABASE_URL
        ? { available: true }
        : { available: false, reason: 'no URL given (--pg URL) and DATABASE_URL is not set' }
    case 'local': {
      const found = findLocalBinaries(options.pgBin)
      return found.ok ? { available: true } : { available: false, reason: found.reason }
    }
    case 'container':
      return findContainerEngine()
        ? { available: true }
        : {
            available: false,
            reason: 'no container engine (no DOCKER_HOST, no Docker socket, no podman socket); start Docker, or run `npm run container:setup` (podman), or use "local"/"embedded"',
          }
    case 'embedded':
      return { available: true }
  }
}

export const PROVIDERS = ['auto', 'url', 'local', 'container', 'embedded'] as const

/**
 * Gets a PostgreSQL + pgvector database from one of four providers and returns the handle, a URL
 * other processes can use (not for `embedded`), what it is (`info`) and `stop()`.
 *
 * | provider | what |
 * |---|---|
 * | `url` | your server (`options.url` or `DATABASE_URL`), PostgreSQL ≥ 15 with pgvector ≥ 0.8 |
 * | `local` | a throwaway cluster from the machine's binaries, removed on `stop()` and on exit |
 * | `container` | Testcontainers `pgvector/pgvector:pg17` (needs a Docker engine) |
 * | `embedded` | PGlite 0.4 in this process (PostgreSQL 17 + pgvector 0.8.1, one connection) |
 *
 * ### Examples
 * ```ts
 * const { db, info, stop } = await provision({ provider: 'auto' })
 * console.log(info.provider, info.serverVersion, info.pgvectorVersion)
 * await stop()
 * ```
 */
export async function provision(options: ProvisionOptions = {}): Promise<ProvisionedDatabase> {
  const provider = options.provider ?? 'auto'
  if (!(PROVIDERS as readonly string[]).includes(provider)) {
    throw new InvalidArgumentError(`unknown provider ${JSON.stringify(provider)}: use one of ${PROVIDERS.join(', ')}`)
  }
  if (provider !== 'auto') return withSkipped(await provisionWith(provider, options), [])

  const skipped: SkippedProvider[] = []
  // A URL someone configured (the option, --pg, DATABASE_URL) is what they meant: if it fails, that
  // is the answer, never a silent fall-through to a throwaway database that loses the app's data.
  if (checkProvider('url', options).available) return withSkipped(await provisionWith('url', options), skipped)
  skipped.push({ provider: 'url', reason: 'no URL given (--pg URL) and DATABASE_URL is not set' })
  for (const candidate of ['local', 'container'] as const) {
    const check = checkProvider(candidate, options)
    if (!check.available) {
      skipped.push({ provider: candidate, reason: check.reason })
      continue
    }
    try {
      return withSkipped(await provisionWith(candidate, options), skipped)
    } catch (err) {
      if (!(err instanceof PgScaleError)) throw err
      skipped.push({ provider: candidate, reason: err.message })
    }
  }
  return withSkipped(await provisionWith('embedded', options), skipped)
}

/** A provisioned database before `auto` adds what it skipped. */
type Provisioned = Omit<ProvisionedDatabase, 'info'> & { info: Omit<ProvisionedDatabase['info'], 'skipped'> }

function withSkipped(provisioned: Provisioned, skipped: SkippedProvider[]): ProvisionedDatabase {
  return { ...provisioned, info: { ...provisioned.info, skipped } }
}

async function provisionWith(provider: ProviderName, options: ProvisionOptions): Promise<Provisioned> {
  switch (provider) {
    case 'url':
      return provisionUrl(options)
    case 'local':
      return provisionLocal(options)
    case 'container':
      return provisionContainer(options)
    case 'embedded':
      return provisionEmbedded(options)
  }
}

async function described(provider: ProviderName, db: Database, url: string | undefined, stop: () => Promise<void>): Promise<Provisioned> {
  let stopped: Promise<void> | undefined
  const info = await closeOnFailure(db, () => readServerInfo(db, provider), stop)
  return {
    db,
    url,
    info,
    stop: () => (stopped ??= db.close().finally(stop)),
  }
}

async function provisionUrl(options: ProvisionOptions): Promise<Provisioned> {
  const url = options.url ?? process.env.DATABASE_URL
  if (!url) {
    throw new ProviderUnavailableError('url', 'provider "url" needs a URL: pass `url` (CLI: --pg URL) or set DATABASE_URL')
  }
  const db = await connect(url, { maxConnections: options.maxConnections })
  return described('url', db, url, async () => {})
}

async function provisionLocal(options: ProvisionOptions): Promise<Provisioned> {
  const found = findLocalBinaries(options.pgBin)
  if (!found.ok) throw new ProviderUnavailableError('local', `provider "local" is unavailable: ${found.reason}`)
  const cluster = await startLocalCluster(found.binaries, { ...DEFAULT_SERVER_SETTINGS, ...options.settings })
  const db = await connect(cluster.url, { maxConnections: options.maxConnections }).catch(async (err: unknown) => {
    await cluster.stop()
    throw err
  })
  return described('local', db, cluster.url, () => cluster.stop())
}

async function provisionContainer(options: ProvisionOptions): Promise<Provisioned> {
  const engine = findContainerEngine()
  if (!engine) {
    const check = checkProvider('container')
    throw new ProviderUnavailableError('container', `provider "container" is unavailable: ${check.available ? 'no engine found' : check.reason}`)
  }
  configureTestcontainers(engine)
  const image = options.image ?? process.env.PGSCALE_CONTAINER_IMAGE ?? engine.defaultImage
  const [{ PostgreSqlContainer }, { Wait }] = await Promise.all([import('@testcontainers/postgresql'), import('testcontainers')])
  let container: Awaited<ReturnType<InstanceType<typeof PostgreSqlContainer>['start']>>
  try {
    let definition = new PostgreSqlContainer(image)
      .withSharedMemorySize(1024 * 1024 * 1024) // parallel HNSW builds keep the graph in /dev/shm
      .withCommand(['postgres', ...settingArgs({ ...DEFAULT_SERVER_SETTINGS, ...options.settings })])
    if (engine.kind === 'podman') {
      // PostgreSqlContainer waits for a Docker health check; podman runs health checks from systemd
      // timers, which these machines lack: wait for the server's own line and the port instead.
      definition = definition.withWaitStrategy(Wait.forAll([Wait.forLogMessage(/database system is ready to accept connections/), Wait.forListeningPorts()]))
    }
    container = await definition.start()
  } catch (err) {
    throw new ProviderUnavailableError(
      'container',
      `provider "container" is unavailable (${engine.kind} at ${engine.dockerHost}, image ${image}): ${err instanceof Error ? err.message : String(err)}` +
        (engine.kind === 'podman' ? ' — `npm run container:setup` builds the image' : ''),
      { cause: err },
    )
  }
  // Without Ryuk (podman), nothing else removes the container if the process ends before stop().
  const id = container.getId()
  const unregister = engine.kind === 'podman'
    ? registerExitCleanup(() => void spawnSync('podman', ['rm', '--force', '--time', '0', id], { stdio: 'ignore', timeout: 20_000 }))
    : () => {}
  const url = container.getConnectionUri()
  const stopContainer = async () => {
    try {
      await container.stop()
    } finally {
      unregister()
    }
  }
  const db = await connect(url, { maxConnections: options.maxConnections }).catch(async (err: unknown) => {
    await stopContainer()
    throw err
  })
  const provisioned = await described('container', db, url, stopContainer)
  return { ...provisioned, info: { ...provisioned.info, container: { engine: engine.kind, image } } }
}

async function provisionEmbedded(options: ProvisionOptions): Promise<Provisioned> {
  const [{ PGlite }, { vector }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/vector'),
  ])
  const pglite = await PGlite.create({ dataDir: options.dataDir, extensions: { vector } })
  const db = await connectPglite(pglite)
  return described('embedded', db, undefined, async () => {})
}

export { redactUrl }
