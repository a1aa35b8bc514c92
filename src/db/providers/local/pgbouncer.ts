import { spawn, spawnSync } from 'node:child_process'
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ProviderUnavailableError } from '../../../errors.js'
import { registerExitCleanup } from '../exit-cleanup.js'
import { freePort, postgresUser } from './local-process.js'

/** Options of {@link startPgBouncer}. */
export interface PgBouncerOptions {
  /** The server behind it (its user must be a superuser or have an auth_query-able password). */
  upstreamUrl: string
  /** `transaction` (default): a server connection per transaction, as most deployments run it. */
  poolMode?: 'transaction' | 'session'
  /** Server connections per database and user. Default 3. */
  poolSize?: number
  /** The `pgbouncer` binary. Default: found on the PATH or in /usr/sbin. */
  binary?: string
}

/** A running PgBouncer: connect to `url` as to the server. */
export interface PgBouncer {
  /** The upstream URL with PgBouncer's host and port. */
  readonly url: string
  readonly port: number
  stop(): Promise<void>
}

function findBinary(given?: string): string {
  for (const candidate of [given, 'pgbouncer', '/usr/sbin/pgbouncer'].filter(Boolean) as string[]) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate
  }
  throw new ProviderUnavailableError('local', 'PgBouncer is not installed: apt-get install pgbouncer (npm run db:install does)')
}

function config(o: { upstream: URL; port: number; dir: string; poolMode: string; poolSize: number }): string {
  return `[databases]
* = host=${o.upstream.hostname} port=${o.upstream.port || 5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${o.port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = ${o.dir}/userlist.txt
auth_user = ${decodeURIComponent(o.upstream.username)}
pool_mode = ${o.poolMode}
default_pool_size = ${o.poolSize}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 1000
max_db_connections = 0
server_reset_query =
ignore_startup_parameters = extra_float_digits,options,statement_timeout
logfile = ${o.dir}/pgbouncer.log
pidfile = ${o.dir}/pgbouncer.pid
`
}

function waitForPort(port: number, child: ReturnType<typeof spawn>, log: () => string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new ProviderUnavailableError('local', `PgBouncer exited: ${log()}`))
      const socket = tcpConnect(port, '127.0.0.1')
      socket.once('connect', () => (socket.destroy(), resolve()))
      socket.once('error', () => {
        socket.destroy()
        if (Date.now() > deadline) reject(new ProviderUnavailableError('local', `PgBouncer did not listen on ${port}: ${log()}`))
        else setTimeout(attempt, 50)
      })
    }
    attempt()
  })
}

/**
 * Starts PgBouncer on a free loopback port in front of `upstreamUrl` — transaction pooling with a
 * small pool by default, the way production poolers run — every database of the server reachable
 * through it, any role it can authenticate (`auth_query` as the upstream user). Runs as the
 * `postgres` OS user when this process is root; stopped and its files removed on `stop()` and at
 * exit.
 *
 * ### Examples
 * ```ts
 * const bouncer = await startPgBouncer({ upstreamUrl: provisioned.url!, poolSize: 3 })
 * const db = await connect(bouncer.url)
 * ```
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = findBinary(options.binary)
  const upstream = new URL(options.upstreamUrl)
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-pgbouncer-'))
  const owner = postgresUser()
  const port = await freePort()
  writeFileSync(join(dir, 'userlist.txt'), `"${decodeURIComponent(upstream.username)}" "${decodeURIComponent(upstream.password)}"\n`, {
    mode: 0o600,
  })
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    config({ upstream, port, dir, poolMode: options.poolMode ?? 'transaction', poolSize: options.poolSize ?? 3 }),
  )
  if (owner) for (const f of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(dir, f), owner.uid, owner.gid)
  const child = spawn(binary, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore', ...(owner ? { uid: owner.uid, gid: owner.gid } : {}) })
  const log = () => {
    try {
      return readFileSync(join(dir, 'pgbouncer.log'), 'utf8').split('\n').slice(-5).join(' | ')
    } catch {
      return '(no log)'
    }
  }
  const unregister = registerExitCleanup(() => {
    child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })
  try {
    await waitForPort(port, child, log)
  } catch (err) {
    child.kill('SIGKILL')
    unregister()
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  const url = new URL(options.upstreamUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.toString(),
    port,
    async stop() {
      unregister()
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGINT')
        await exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
