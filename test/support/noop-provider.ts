import { ProviderUnavailableError, type Provider } from '../../src/index.js'

/**
 * A provider in one file, as a new one would be: never available, never started. Registering it
 * is the only other line (test/db/provider-registry.test.ts).
 */
export const noopProvider: Provider = {
  name: 'noop',
  auto: 'try',
  check: () => ({ available: false, reason: 'the no-op provider of the tests is never available' }),
  async start() {
    throw new ProviderUnavailableError('noop', 'provider "noop" never starts')
  },
}
