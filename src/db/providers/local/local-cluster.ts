import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ProviderUnavailableError } from '../../../errors.js'
import type { LocalBinaries } from './local-binaries.js'
import { registerExitCleanup } from '../exit-cleanup.js'
import { settingArgs, type ServerSettings } from '../provider.js'
import { freePort, postgresUser } from './local-process.js'

/** A running throwaway cluster. */
export interface LocalCluster {
  url: string
  port: number
  dataDir: string
  /** Stops the server (fast shutdown) and starts it again on the same port and data: for fault tests. */
  restart(): Promise<void>
  stop(): Promise<void>
  /**
   * A streaming standby of this cluster on another loopback port (`pg_basebackup -R`, hot standby):
   * read-only, replaying the primary's WAL; stopped with the primary, or alone with its `stop()`.
   * Not on a standby itself.
   */
  addStandby(): Promise<LocalCluster>
}

const unregisters = new WeakMap<ChildProcess, () => void>()

/** Kills the server and removes its directory when the process exits before `stop()`. */
function trackCluster(entry: { child: ChildProcess; dir: string }, add: boolean): void {
  if (add) {
    unregisters.set(
      entry.child,
      registerExitCleanup(() => {
        entry.child.kill('SIGQUIT')
        rmSync(entry.dir, { recursive: true, force: true })
      }),
    )
  } else {
    unregisters.get(entry.child)?.()
    unregisters.delete(entry.child)
  }
}

function waitForReady(child: ChildProcess, logOf: () => string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => done(new ProviderUnavailableError('local', `server not ready after ${timeoutMs} ms`)), timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (/database system is ready to accept (read-only )?connections/.test(output)) done()
    }
    const onExit = (code: number | null) =>
      done(new ProviderUnavailableError('local', `server exited with code ${code}: ${logOf() || output}`))
    function done(err?: Error) {
      clearTimeout(timer)
      child.stderr?.off('data', onData)
      child.off('exit', onExit)
      if (err) reject(err)
      else resolve()
    }
    child.stderr?.on('data', onData)
    child.on('exit', onExit)
  })
}

/**
 * Starts a throwaway PostgreSQL cluster: initdb into a temp dir (as the `postgres` OS user when
 * running as root) with a generated password, a free port on 127.0.0.1, the given settings;
 * `stop()` shuts it down and deletes the directory, as does process exit, and SIGINT/SIGTERM
 * when the host app has no handler of its own for them.
 *
 * ### Examples
 * ```ts
 * const cluster = await startLocalCluster(binaries, { fsync: 'off' })
 * console.log(cluster.url) // postgres://postgres:<generated>@127.0.0.1:41234/postgres
 * await cluster.stop()
 * ```
 */
export async function startLocalCluster(
  binaries: LocalBinaries,
  settings: ServerSettings,
  options: { /** The superuser's password; default generated. Nodes of one Citus cluster share one. */ password?: string } = {},
): Promise<LocalCluster> {
  const cluster = initCluster(binaries, options.password)
  const { dir, dataDir, password } = cluster
  let lastError: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort()
    let entry: RunningServer
    try {
      entry = await startServer(cluster, binaries, settings, port)
    } catch (err) {
      lastError = err
      continue
    }
    let stopped: Promise<void> | undefined
    const standbys: LocalCluster[] = []
    return {
      url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      async restart() {
        await stopServer(entry)
        entry = await startServer(cluster, binaries, settings, port)
      },
      stop() {
        stopped ??= Promise.all(standbys.map((s) => s.stop()))
          .then(() => stopServer(entry))
          .then(() => rmSync(dir, { recursive: true, force: true }))
        return stopped
      },
      async addStandby() {
        const standby = await startStandby(cluster, binaries, settings, port, standbys.length + 1)
        standbys.push(standby)
        return standby
      },
    }
  }
  rmSync(dir, { recursive: true, force: true })
  throw new ProviderUnavailableError('local', `could not start postgres: ${String(lastError)}`, { cause: lastError })
}

/**
 * A streaming standby of the cluster on `primaryPort`: `pg_basebackup -R -X stream` of it into a
 * directory of its own beside the primary's, started on a free port with the same settings.
 */
async function startStandby(
  primary: InitializedCluster,
  binaries: LocalBinaries,
  settings: ServerSettings,
  primaryPort: number,
  n: number,
): Promise<LocalCluster> {
  const dir = join(primary.dir, `standby-${n}`)
  mkdirSync(dir)
  if (primary.spawnAs.uid !== undefined) chownSync(dir, primary.spawnAs.uid, primary.spawnAs.gid!)
  const dataDir = join(dir, 'data')
  const backup = spawnSync(
    join(binaries.binDir, 'pg_basebackup'),
    ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', dataDir, '-R', '-X', 'stream', '--no-sync', '--checkpoint=fast'],
    { ...primary.spawnAs, encoding: 'utf8', cwd: dir, env: { ...process.env, PGPASSWORD: primary.password } },
  )
  if (backup.status !== 0)
    throw new ProviderUnavailableError('local', `pg_basebackup failed: ${(backup.stderr || backup.stdout || String(backup.error)).trim()}`)
  const cluster: InitializedCluster = { dir, dataDir, password: primary.password, spawnAs: primary.spawnAs }
  const port = await freePort()
  let entry = await startServer(cluster, binaries, settings, port)
  return {
    url: `postgres://postgres:${primary.password}@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    // A standby stopped on purpose (a fault test) starts again with restart(); its data stays
    // until the primary's stop() removes the whole directory.
    async restart() {
      await stopServer(entry)
      entry = await startServer(cluster, binaries, settings, port)
    },
    stop() {
      return stopServer(entry)
    },
    addStandby() {
      return Promise.reject(new ProviderUnavailableError('local', 'a standby of a standby is not supported'))
    },
  }
}

/** A cluster's directory (socket, data), its superuser's password, and the user its processes run as. */
interface InitializedCluster {
  dir: string
  dataDir: string
  password: string
  spawnAs: { uid?: number; gid?: number }
}

/** A running server process and the directory it belongs to. */
interface RunningServer {
  child: ChildProcess
  dir: string
}

/** `initdb` into a fresh temporary directory, owned by `postgres` when running as root. */
function initCluster(binaries: LocalBinaries, givenPassword?: string): InitializedCluster {
  const owner = postgresUser()
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-local-'))
  if (owner) chownSync(dir, owner.uid, owner.gid)
  const dataDir = join(dir, 'data')
  const spawnAs = owner ? { uid: owner.uid, gid: owner.gid } : {}
  // A generated password (scram-sha-256 on TCP and on the socket): another local user who finds
  // the port is not a superuser of the cluster.
  const password = givenPassword ?? randomBytes(18).toString('hex')
  const pwfile = join(dir, 'pwfile')
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 })
  if (owner) chownSync(pwfile, owner.uid, owner.gid)
  const init = spawnSync(
    join(binaries.binDir, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '-A', 'scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-locale', '--no-sync'],
    { ...spawnAs, encoding: 'utf8', cwd: dir },
  )
  rmSync(pwfile, { force: true })
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new ProviderUnavailableError('local', `initdb failed: ${(init.stderr || init.stdout || String(init.error)).trim()}`)
  }
  return { dir, dataDir, password, spawnAs }
}

/** Starts the server on `port`; resolves once it accepts connections. */
async function startServer(
  cluster: InitializedCluster,
  binaries: LocalBinaries,
  settings: ServerSettings,
  port: number,
): Promise<RunningServer> {
  const { dir, dataDir, spawnAs } = cluster
  const child = spawn(
    join(binaries.binDir, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', ...settingArgs(settings)],
    { ...spawnAs, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  )
  const entry = { child, dir }
  trackCluster(entry, true)
  let log = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    if (log.length < 20_000) log += chunk.toString()
  })
  try {
    await waitForReady(child, () => log, 30_000)
  } catch (err) {
    trackCluster(entry, false)
    child.kill('SIGKILL')
    throw err
  }
  // Keep draining stderr so the server never blocks on a full pipe.
  child.stderr?.resume()
  return entry
}

/** Fast shutdown of the server; resolves when it has exited. */
function stopServer(entry: RunningServer): Promise<void> {
  return new Promise<void>((resolve) => {
    const { child } = entry
    const finish = () => {
      trackCluster(entry, false)
      resolve()
    }
    if (child.exitCode !== null || child.signalCode !== null) return finish()
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000)
    child.once('exit', () => {
      clearTimeout(kill)
      finish()
    })
    child.kill('SIGINT')
  })
}
