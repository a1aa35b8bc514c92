import { ProviderUnavailableError } from '../../errors.js'
import { connect } from '../connect.js'
import { findLocalBinaries } from './local-binaries.js'
import { startLocalCluster } from './local-cluster.js'
import { DEFAULT_SERVER_SETTINGS, describeProvisioned, type Provider } from './provider.js'

/** `local`: a throwaway cluster from this machine's PostgreSQL binaries (and pgvector files). */
export const localProvider: Provider = {
  name: 'local',
  auto: 'try',
  check(options) {
    const found = findLocalBinaries(options.pgBin)
    return found.ok ? { available: true } : { available: false, reason: found.reason }
  },
  async start(options) {
    const found = findLocalBinaries(options.pgBin)
    if (!found.ok) throw new ProviderUnavailableError('local', `provider "local" is unavailable: ${found.reason}`)
    const cluster = await startLocalCluster(found.binaries, { ...DEFAULT_SERVER_SETTINGS, ...options.settings })
    const db = await connect(cluster.url, { maxConnections: options.maxConnections }).catch(async (err: unknown) => {
      await cluster.stop()
      throw err
    })
    return describeProvisioned('local', db, cluster.url, () => cluster.stop())
  },
}
