import { ProviderUnavailableError } from '../../../errors.js'
import { connect } from '../../connect.js'
import { findLocalBinaries } from './local-binaries.js'
import { startCitusCluster } from './citus-cluster.js'
import { startLocalCluster } from './local-cluster.js'
import { DEFAULT_SERVER_SETTINGS, describeProvisioned, type Provider } from '../provider.js'

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
    const settings = { ...DEFAULT_SERVER_SETTINGS, ...options.settings }
    const cluster = options.citus
      ? await startCitusCluster(found.binaries, settings, options.citus.workers)
      : await startLocalCluster(found.binaries, settings)
    const db = await connect(cluster.url, { maxConnections: options.maxConnections }).catch(async (err: unknown) => {
      await cluster.stop()
      throw err
    })
    const provisioned = await describeProvisioned('local', db, cluster.url, () => cluster.stop())
    if (!options.standbys || options.citus || !('addStandby' in cluster)) return provisioned
    try {
      const standbys = []
      for (let i = 0; i < options.standbys; i++) standbys.push(await cluster.addStandby())
      return { ...provisioned, standbys: standbys.map((s) => ({ url: s.url, stop: () => s.stop(), restart: () => s.restart() })) }
    } catch (err) {
      await provisioned.stop()
      throw err
    }
  },
}
