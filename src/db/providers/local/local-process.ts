import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { ProviderUnavailableError } from '../../../errors.js'

/** The uid/gid of the `postgres` OS user when this process is root (PostgreSQL and PgBouncer refuse to run as root); undefined otherwise. */
export function postgresUser(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'))
  if (!line) {
    throw new ProviderUnavailableError(
      'local',
      'running as root, and PostgreSQL refuses to run as root: create the postgres OS user (the postgresql package does) or run as another user',
    )
  }
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', (err) =>
      reject(new ProviderUnavailableError('local', `no free TCP port on 127.0.0.1: ${err.message}`, { cause: err })),
    )
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new ProviderUnavailableError('local', 'no free TCP port on 127.0.0.1')),
      )
    })
  })
}
