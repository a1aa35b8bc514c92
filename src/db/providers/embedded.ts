import { connectPglite } from '../connect.js'
import { optionalImport } from './optional-import.js'
import { describeProvisioned, type Provider } from './provider.js'

/** `embedded`: PGlite 0.4 in this process (PostgreSQL 17 + pgvector 0.8.1, one connection). Always available. */
export const embeddedProvider: Provider = {
  name: 'embedded',
  auto: 'try',
  inProcess: true,
  check: () => ({ available: true }),
  async start(options) {
    const [{ PGlite }, { vector }] = await optionalImport('embedded', '@electric-sql/pglite', '~0.4.6', () =>
      Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/vector')]),
    )
    const pglite = await PGlite.create({ dataDir: options.dataDir, extensions: { vector } })
    const db = await connectPglite(pglite)
    return describeProvisioned('embedded', db, undefined, async () => {})
  },
}
