import { DatabaseNotConfiguredError, InvalidArgumentError, PgScaleError } from '../errors.js'
import { redactUrl } from './connect.js'
import type { ProviderCheck, Provisioned, ProvisionedDatabase, ProvisionOptions, SkippedProvider } from './providers/provider.js'
import { BUILT_IN_PROVIDERS, providerNamed, providers, type ProviderName } from './providers/registry.js'

export type { ProviderCheck, ProvisionOptions }

/**
 * Says, without starting anything, whether a provider can be used on this machine.
 *
 * ### Examples
 * ```ts
 * const check = checkProvider('local')
 * if (!check.available) console.log(`local: ${check.reason}`)
 * ```
 */
export function checkProvider(
  provider: ProviderName | (string & {}),
  options: Pick<ProvisionOptions, 'url' | 'pgBin'> = {},
): ProviderCheck {
  return providerNamed(provider).check(options)
}

/** `auto` and the built-in providers' names, in `auto`'s order (the CLIs' `--db` choices). */
export const PROVIDERS = ['auto', ...BUILT_IN_PROVIDERS.map((p) => p.name)] as readonly string[]

/**
 * Gets a PostgreSQL + pgvector database from a provider and returns the handle, a URL other
 * processes can use (not for `embedded`), what it is (`info`) and `stop()`.
 *
 * | provider | what |
 * |---|---|
 * | `url` | your server (`options.url` or `DATABASE_URL`), PostgreSQL ≥ 15 with pgvector ≥ 0.8 |
 * | `local` | a throwaway cluster from the machine's binaries, removed on `stop()` and on exit |
 * | `container` | Testcontainers on Docker (`pgvector/pgvector:pg17`) or podman (`npm run container:setup`) |
 * | `embedded` | PGlite 0.4 in this process (PostgreSQL 17 + pgvector 0.8.1, one connection) |
 *
 * `auto`: a configured URL if there is one (its failure is the error, never a fall-through), else
 * each provider in order that is available and starts, else embedded.
 *
 * Without a `provider`, it is `auto` with a configured URL (`url` or `DATABASE_URL`); with neither,
 * an app gets a {@link DatabaseNotConfiguredError} ("set DATABASE_URL, or pass { provider: 'local' |
 * 'embedded' } for a throwaway database") instead of a throwaway database it did not ask for. Under
 * a test runner (Vitest, Jest, `node --test`) it falls back as `auto` does and prints where it runs
 * (stderr); benches pass `provider: 'auto'` (the CLIs' `--db auto`).
 *
 * ### Examples
 * ```ts
 * const app = await provision() // DATABASE_URL, or a DatabaseNotConfiguredError
 * const { db, info, stop } = await provision({ provider: 'auto' }) // a throwaway one when there is no URL
 * console.log(info.provider, info.serverVersion, info.pgvectorVersion)
 * await stop()
 * ```
 */
export async function provision(options: ProvisionOptions = {}): Promise<ProvisionedDatabase> {
  if (options.provider === undefined && !configuredUrl(options)) {
    const runner = testRunner()
    if (runner === undefined) throw notConfigured()
    const provisioned = await provision({ ...options, provider: 'auto' })
    process.stderr.write(`[pgscale] provision() without DATABASE_URL under ${runner}: ${whereItRuns(provisioned)}\n`)
    return provisioned
  }
  const name = options.provider ?? 'auto'
  if (options.citus !== undefined && name !== 'local') {
    throw new InvalidArgumentError(
      `citus: { workers } starts a Citus cluster with the local provider only (got provider "${name}"); for an existing coordinator pass its URL with provider "url"`,
    )
  }
  if (name !== 'auto') return withSkipped(await providerNamed(name).start(options), [])
  const skipped: SkippedProvider[] = []
  const candidates = providers().filter((p) => p.auto !== 'never')
  for (const [i, provider] of candidates.entries()) {
    const check = provider.check(options)
    if (!check.available) {
      skipped.push({ provider: provider.name, reason: check.reason })
      continue
    }
    // A configured URL is what someone meant: its failure is the answer. The last candidate's too.
    if (provider.auto === 'exclusive' || i === candidates.length - 1) return withSkipped(await provider.start(options), skipped)
    try {
      return withSkipped(await provider.start(options), skipped)
    } catch (err) {
      if (!(err instanceof PgScaleError)) throw err
      skipped.push({ provider: provider.name, reason: err.message })
    }
  }
  throw new PgScaleError('PROVIDER_UNAVAILABLE', `no provider is available: ${skipped.map((s) => `${s.provider}: ${s.reason}`).join('; ')}`)
}

/** The URL `auto` would use: the `url` option or `DATABASE_URL` (as the `url` provider reads them). */
function configuredUrl(options: ProvisionOptions): string | undefined {
  return (options.url ?? process.env.DATABASE_URL) || undefined
}

/** The test runner this process runs under, from the variables each sets in its workers. */
function testRunner(): string | undefined {
  if (process.env.VITEST) return 'Vitest'
  if (process.env.JEST_WORKER_ID) return 'Jest'
  if (process.env.NODE_TEST_CONTEXT) return 'node --test'
  return undefined
}

function notConfigured(): DatabaseNotConfiguredError {
  return new DatabaseNotConfiguredError(
    "provision() has no database to use: set DATABASE_URL, or pass { provider: 'local' | 'embedded' } for a throwaway database " +
      "(removed on stop()); { provider: 'auto' } tries a URL, then every provider that can start one here",
  )
}

function whereItRuns({ info, url }: ProvisionedDatabase): string {
  const where = url ? ` at ${redactUrl(url)}` : ' in this process'
  return `a throwaway ${info.provider} database${where} (PostgreSQL ${info.serverVersion}, pgvector ${info.pgvectorVersion}), removed on stop()`
}

function withSkipped(provisioned: Provisioned, skipped: SkippedProvider[]): ProvisionedDatabase {
  return { ...provisioned, info: { ...provisioned.info, skipped } }
}

export { redactUrl }
