import { ProviderUnavailableError } from '../../errors.js'
import { connect } from '../connect.js'
import { describeProvisioned, type Provider } from './provider.js'

/**
 * `url`: your PostgreSQL ≥ 15 with pgvector ≥ 0.8, from `options.url` (CLI `--pg`) or
 * `DATABASE_URL`. For `auto` a configured URL is the answer: if it fails, that is the error.
 */
export const urlProvider: Provider = {
  name: 'url',
  auto: 'exclusive',
  check: (options) =>
    (options.url ?? process.env.DATABASE_URL)
      ? { available: true }
      : { available: false, reason: 'no URL given (--pg URL) and DATABASE_URL is not set' },
  async start(options) {
    const url = options.url ?? process.env.DATABASE_URL
    if (!url) throw new ProviderUnavailableError('url', 'provider "url" needs a URL: pass `url` (CLI: --pg URL) or set DATABASE_URL')
    const db = await connect(url, { maxConnections: options.maxConnections })
    return describeProvisioned('url', db, url, async () => {})
  },
}
