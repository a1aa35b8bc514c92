import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { connect, DatabaseNotConfiguredError, PgScaleError } from '../../src/index.js'

/**
 * No silent throwaway database: `provision()` in an app with no DATABASE_URL and no provider is a
 * DatabaseNotConfiguredError naming both ways out, and starts nothing; under a test runner it falls
 * back as `auto` does and prints where it runs. Each case is its own process (an app has no
 * VITEST in its environment), with the servers of `auto` hidden as on a machine without them.
 */
const child = fileURLToPath(new URL('./provision-app-child.ts', import.meta.url))
const RUNNER_VARIABLES = ['VITEST', 'VITEST_WORKER_ID', 'VITEST_POOL_ID', 'VITEST_MODE', 'JEST_WORKER_ID', 'NODE_TEST_CONTEXT']

/** Runs the child with the test's environment minus the runner's and DATABASE_URL, plus `env`. */
function runChild(env: Record<string, string>): Promise<{ result: Record<string, string>; stderr: string }> {
  const base = { ...process.env }
  for (const name of [...RUNNER_VARIABLES, 'DATABASE_URL', 'DOCKER_HOST', 'XDG_RUNTIME_DIR']) delete base[name]
  const noServers = { PGSCALE_PG_BIN: '/nonexistent/no-postgres', PGSCALE_PODMAN_SOCKET: '/nonexistent/no-podman.sock' }
  const proc = spawn(process.execPath, ['--import', 'tsx', child], {
    env: { ...base, ...noServers, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) => {
    proc.on('error', reject)
    proc.on('exit', (code) => {
      const line = stdout.trim().split('\n').at(-1) ?? ''
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`child exited with ${code}: ${stdout}\n${stderr}`))
      else resolve({ result: JSON.parse(line) as Record<string, string>, stderr })
    })
  })
}

describe('provision() without DATABASE_URL or a provider', () => {
  it('in an app: a DatabaseNotConfiguredError that names DATABASE_URL and the throwaway providers', async () => {
    const { result } = await runChild({})
    expect(result).toMatchObject({ name: 'DatabaseNotConfiguredError', code: 'DATABASE_NOT_CONFIGURED' })
    expect(result.message).toContain("set DATABASE_URL, or pass { provider: 'local' | 'embedded' } for a throwaway database")
  })

  it('the error is a PgScaleError with its own code', () => {
    const err = new DatabaseNotConfiguredError('x')
    expect(err).toBeInstanceOf(PgScaleError)
    expect(err.code).toBe('DATABASE_NOT_CONFIGURED')
  })

  it('connect(process.env.DATABASE_URL) with it unset: the same typed error, naming DATABASE_URL', async () => {
    const unset: string | undefined = undefined
    const err = await connect(unset).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DatabaseNotConfiguredError)
    expect((err as Error).message).toMatch(/set DATABASE_URL/)
  })

  it('under a test runner: falls back as auto does, and prints where it runs', async () => {
    const { result, stderr } = await runChild({ VITEST: 'true' })
    expect(result).toEqual({ provider: 'embedded' })
    expect(stderr).toMatch(/\[pgscale\] provision\(\) without DATABASE_URL under Vitest: a throwaway embedded database in this process/)
  }, 240_000)
})
