import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { ProviderUnavailableError } from '../../../errors.js'
import { connect } from '../../connect.js'
import { configureTestcontainers, findContainerEngine } from './container-engine.js'
import { registerExitCleanup } from '../exit-cleanup.js'
import { optionalImport } from '../optional-import.js'
import {
  DEFAULT_SERVER_SETTINGS,
  describeProvisioned,
  settingArgs,
  type Provider,
  type ProvisionOptions,
  type Provisioned,
} from '../provider.js'

/** Removes podman containers carrying this start's label (best effort, synchronous). */
function removeContainersLabelled(label: string): void {
  const ids =
    spawnSync('podman', ['ps', '-aq', '--filter', `label=pgscale.start=${label}`], { encoding: 'utf8', timeout: 20_000 })
      .stdout?.split('\n')
      .filter(Boolean) ?? []
  if (ids.length) spawnSync('podman', ['rm', '--force', '--time', '0', ...ids], { stdio: 'ignore', timeout: 20_000 })
}

const NO_ENGINE =
  'no container engine (no DOCKER_HOST, no Docker socket, no podman socket); start Docker, or run `npm run container:setup` (podman), or use "local"/"embedded"'

/**
 * `container`: Testcontainers on a Docker-API engine — Docker with `pgvector/pgvector:pg17`, or
 * podman with the image `npm run container:setup` builds (see `container-engine.ts`).
 */
export const containerProvider: Provider = {
  name: 'container',
  auto: 'try',
  check: () => (findContainerEngine() ? { available: true } : { available: false, reason: NO_ENGINE }),
  start: startContainer,
}

async function startContainer(options: ProvisionOptions): Promise<Provisioned> {
  const engine = findContainerEngine()
  if (!engine) throw new ProviderUnavailableError('container', `provider "container" is unavailable: ${NO_ENGINE}`)
  configureTestcontainers(engine)
  const image = options.image ?? process.env.PGSCALE_CONTAINER_IMAGE ?? engine.defaultImage
  const startLabel = randomUUID()
  const [{ PostgreSqlContainer }, { Wait }] = await optionalImport(
    'container',
    '@testcontainers/postgresql testcontainers',
    '^11.14.0',
    () => Promise.all([import('@testcontainers/postgresql'), import('testcontainers')]),
  )
  let container: Awaited<ReturnType<InstanceType<typeof PostgreSqlContainer>['start']>>
  try {
    let definition = new PostgreSqlContainer(image)
      .withSharedMemorySize(1024 * 1024 * 1024) // parallel HNSW builds keep the graph in /dev/shm
      .withCommand(['postgres', ...settingArgs({ ...DEFAULT_SERVER_SETTINGS, ...options.settings })])
    if (engine.kind === 'podman') {
      // PostgreSqlContainer waits for a Docker health check; podman runs health checks from systemd
      // timers, which these machines lack: wait for the server's own line and the port instead.
      definition = definition.withWaitStrategy(
        Wait.forAll([Wait.forLogMessage(/database system is ready to accept connections/), Wait.forListeningPorts()]),
      )
    }
    container = await definition.withLabels({ 'pgscale.start': startLabel }).start()
  } catch (err) {
    // A container created but not started (the engine failed halfway) would stay behind without Ryuk.
    if (engine.kind === 'podman') removeContainersLabelled(startLabel)
    throw new ProviderUnavailableError(
      'container',
      `provider "container" is unavailable (${engine.kind} at ${engine.dockerHost}, image ${image}): ${err instanceof Error ? err.message : String(err)}` +
        (engine.kind === 'podman' ? ' — `npm run container:setup` builds the image' : ''),
      { cause: err },
    )
  }
  // Without Ryuk (podman), nothing else removes the container if the process ends before stop().
  const id = container.getId()
  const unregister =
    engine.kind === 'podman'
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
  const provisioned = await describeProvisioned('container', db, url, stopContainer)
  return { ...provisioned, info: { ...provisioned.info, container: { engine: engine.kind, image } } }
}
