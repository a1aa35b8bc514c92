import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ProviderUnavailableError } from '../../errors.js'
import type { LocalBinaries } from './local-binaries.js'
import { settingArgs, type ServerSettings } from './provider.js'

/** A running throwaway cluster. */
export interface LocalCluster {
  url: string
  port: number
  dataDir: string
  stop(): Promise<void>
}

const running = new Set<{ child: ChildProcess; dir: string }>()
let hooksInstalled = false

/** Stops every cluster still running when the process exits or is interrupted. */
function installExitHooks(): void {
  if (hooksInstalled) return
  hooksInstalled = true
  process.on('exit', () => {
    for (const entry of running) {
      entry.child.kill('SIGQUIT')
      rmSync(entry.dir, { recursive: true, force: true })
    }
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const entry of running) entry.child.kill('SIGQUIT')
      // Re-raise with default handling so the exit code says we were interrupted; 'exit' cleans up.
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15))
    })
  }
}

/** The uid/gid of the `postgres` OS user; the server refuses to run as root. */
function postgresUser(): { uid: number; gid: number } | undefined {
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

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

function waitForReady(child: ChildProcess, logOf: () => string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => done(new Error(`server not ready after ${timeoutMs} ms`)), timeoutMs)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes('database system is ready to accept connections')) done()
    }
    const onExit = (code: number | null) => done(new Error(`server exited with code ${code}: ${logOf() || output}`))
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
 * running as root), a free port on 127.0.0.1, the given settings; `stop()` shuts it down and
 * deletes the directory, as do process exit, SIGINT and SIGTERM.
 *
 * ### Examples
 * ```ts
 * const cluster = await startLocalCluster(binaries, { fsync: 'off' })
 * console.log(cluster.url) // postgres://postgres@127.0.0.1:41234/postgres
 * await cluster.stop()
 * ```
 */
export async function startLocalCluster(binaries: LocalBinaries, settings: ServerSettings): Promise<LocalCluster> {
  const owner = postgresUser()
  const dir = mkdtempSync(join(tmpdir(), 'pgscale-local-'))
  if (owner) chownSync(dir, owner.uid, owner.gid)
  const dataDir = join(dir, 'data')
  const spawnAs = owner ? { uid: owner.uid, gid: owner.gid } : {}
  const init = spawnSync(
    join(binaries.binDir, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
    { ...spawnAs, encoding: 'utf8', cwd: dir },
  )
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new ProviderUnavailableError('local', `initdb failed: ${(init.stderr || init.stdout || String(init.error)).trim()}`)
  }

  installExitHooks()
  let lastError: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort()
    const child = spawn(
      join(binaries.binDir, 'postgres'),
      ['-D', dataDir, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', ...settingArgs(settings)],
      { ...spawnAs, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    const entry = { child, dir }
    running.add(entry)
    let log = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      if (log.length < 20_000) log += chunk.toString()
    })
    try {
      await waitForReady(child, () => log, 30_000)
    } catch (err) {
      running.delete(entry)
      child.kill('SIGKILL')
      lastError = err
      continue
    }
    // Keep draining stderr so the server never blocks on a full pipe.
    child.stderr?.resume()
    let stopped: Promise<void> | undefined
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      stop() {
        stopped ??= new Promise<void>((resolve) => {
          const finish = () => {
            running.delete(entry)
            rmSync(dir, { recursive: true, force: true })
            resolve()
          }
          if (child.exitCode !== null || child.signalCode !== null) return finish()
          const kill = setTimeout(() => child.kill('SIGKILL'), 10_000)
          child.once('exit', () => {
            clearTimeout(kill)
            finish()
          })
          child.kill('SIGINT') // fast shutdown
        })
        return stopped
      },
    }
  }
  rmSync(dir, { recursive: true, force: true })
  throw new ProviderUnavailableError('local', `could not start postgres: ${String(lastError)}`, { cause: lastError })
}
