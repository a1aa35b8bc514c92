import { InvalidArgumentError } from '../../errors.js'
import { containerProvider } from './container/container.js'
import { embeddedProvider } from './embedded.js'
import { localProvider } from './local/local.js'
import type { Provider } from './provider.js'
import { urlProvider } from './url.js'

/**
 * The built-in providers, in `auto`'s order: a configured URL, a local cluster, a container,
 * embedded PGlite. Names, the auto order, the CLIs' `--db` choices and the test target derive from
 * this array; a new provider is one file in this folder and one entry here.
 */
export const BUILT_IN_PROVIDERS = [urlProvider, localProvider, containerProvider, embeddedProvider] as const

/** The built-in providers' names. */
export type ProviderName = 'url' | 'local' | 'container' | 'embedded'

const registry = new Map<string, Provider>(BUILT_IN_PROVIDERS.map((p) => [p.name, p]))

/**
 * Adds a provider (a test double, a managed service, …); `provision({ provider: name })` and
 * `checkProvider(name)` find it, and `auto` considers it (before `embedded`) unless `auto: 'never'`.
 *
 * ### Examples
 * ```ts
 * registerProvider({ name: 'neon', auto: 'never', check: () => ({ available: true }), start: startNeon })
 * ```
 */
export function registerProvider(provider: Provider): void {
  if (!provider || typeof provider.name !== 'string' || !/^[a-z][a-z0-9-]*$/.test(provider.name) || provider.name === 'auto') {
    throw new InvalidArgumentError('registerProvider: a provider needs a lower-case name (not "auto"), check() and start()')
  }
  registry.set(provider.name, provider)
}

/** Every registered provider, in `auto`'s order (`embedded`, always available, last). */
export function providers(): Provider[] {
  const all = [...registry.values()]
  return [...all.filter((p) => !p.inProcess), ...all.filter((p) => p.inProcess)]
}

/** The provider of that name, or a typed error listing the names. */
export function providerNamed(name: string): Provider {
  const provider = registry.get(name)
  if (!provider)
    throw new InvalidArgumentError(`unknown provider ${JSON.stringify(name)}: use one of ${['auto', ...registry.keys()].join(', ')}`)
  return provider
}
