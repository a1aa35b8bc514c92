import { describe, expect, it } from 'vitest'
import { checkProvider, InvalidArgumentError, provision, ProviderUnavailableError, PROVIDERS, registerProvider } from '../../src/index.js'
import { providers } from '../../src/bench-kit.js'
import { noopProvider } from '../support/noop-provider.js'

/** Providers come from one registry: a new one is one file plus registering it. */
describe('provider registry', () => {
  it('the built-in names, in auto order, are what the CLIs offer', () => {
    expect(PROVIDERS).toEqual(['auto', 'url', 'local', 'container', 'embedded'])
  })

  it('a provider in one file, registered: check and provision find it; it sits in auto order before embedded', async () => {
    registerProvider(noopProvider)
    expect(providers().map((p) => p.name)).toEqual(['url', 'local', 'container', 'noop', 'embedded'])
    expect(checkProvider('noop')).toEqual({ available: false, reason: 'the no-op provider of the tests is never available' })
    await expect(provision({ provider: 'noop' })).rejects.toBeInstanceOf(ProviderUnavailableError)
    await expect(provision({ provider: 'nope' })).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(() => registerProvider({ ...noopProvider, name: 'auto' })).toThrow(InvalidArgumentError)
  })
})
