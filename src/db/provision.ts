import { InvalidArgumentError, PgScaleError } from '../errors.js'
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
 * `auto` (default): a configured URL if there is one (its failure is the error, never a
 * fall-through), else each provider in order that is available and starts, else embedded.
 *
 * ### Examples
 * ```ts
 * const { db, info, stop } = await provision({ provider: 'auto' })
 * console.log(info.provider, info.serverVersion, info.pgvectorVersion)
 * await stop()
 * ```
 */
export async function provision(options: ProvisionOptions = {}): Promise<ProvisionedDatabase> {
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

function withSkipped(provisioned: Provisioned, skipped: SkippedProvider[]): ProvisionedDatabase {
  return { ...provisioned, info: { ...provisioned.info, skipped } }
}

export { redactUrl }
