import { existsSync } from 'node:fs'
import { homedir } from 'node:os'

/** A Docker-API engine the `container` provider can use. */
export interface ContainerEngine {
  kind: 'docker' | 'podman'
  /** The API's address, as `DOCKER_HOST` takes it. */
  dockerHost: string
  /** The image the provider runs unless told otherwise. */
  defaultImage: string
}

/** Where `scripts/container-engine.sh` serves podman's API (override: PGSCALE_PODMAN_SOCKET). */
export const PGSCALE_PODMAN_SOCKET = '/run/pgscale-podman/podman.sock'
/** The image `scripts/container-engine.sh` builds: PostgreSQL 15 + pgvector from Debian's packages. */
export const PODMAN_IMAGE = 'localhost/pgscale/postgres-pgvector:15'
const DOCKER_IMAGE = 'pgvector/pgvector:pg17'

/**
 * Finds a Docker-API engine without asking Testcontainers (which is slow to fail): `DOCKER_HOST`,
 * Docker's sockets, then podman's (pgscale's own, the system service's, the user's). A socket path
 * with "podman" in it is podman.
 *
 * ### Examples
 * ```ts
 * const engine = findContainerEngine() // { kind: 'podman', dockerHost: 'unix:///run/pgscale-podman/podman.sock', ... }
 * ```
 */
export function findContainerEngine(env: NodeJS.ProcessEnv = process.env): ContainerEngine | undefined {
  const engine = (kind: ContainerEngine['kind'], dockerHost: string): ContainerEngine => ({
    kind,
    dockerHost,
    defaultImage: kind === 'podman' ? PODMAN_IMAGE : DOCKER_IMAGE,
  })
  if (env.DOCKER_HOST) return engine(/podman/i.test(env.DOCKER_HOST) ? 'podman' : 'docker', env.DOCKER_HOST)
  for (const socket of ['/var/run/docker.sock', `${homedir()}/.docker/run/docker.sock`]) {
    if (existsSync(socket)) return engine('docker', `unix://${socket}`)
  }
  const podman = [
    env.PGSCALE_PODMAN_SOCKET ?? PGSCALE_PODMAN_SOCKET,
    '/run/podman/podman.sock',
    env.XDG_RUNTIME_DIR ? `${env.XDG_RUNTIME_DIR}/podman/podman.sock` : '',
  ].filter(Boolean)
  for (const socket of podman) if (existsSync(socket)) return engine('podman', `unix://${socket}`)
  return undefined
}

/**
 * Points Testcontainers at the engine, before it is first used: `DOCKER_HOST`; for podman also
 * Ryuk off (podman has no Ryuk image here: the provider removes its containers itself, also at
 * exit) and `TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1`, so every connection stays on loopback instead
 * of the podman bridge's gateway. A value the environment already has wins.
 */
export function configureTestcontainers(engine: ContainerEngine, env: NodeJS.ProcessEnv = process.env): void {
  env.DOCKER_HOST ??= engine.dockerHost
  if (engine.kind === 'podman') {
    env.TESTCONTAINERS_RYUK_DISABLED ??= 'true'
    env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1'
  }
}
