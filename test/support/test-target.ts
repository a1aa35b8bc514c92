import type { SkippedProvider } from '../../src/index.js'

/** What the global setup provisioned, as every test file sees it. */
export interface TestTarget {
  /** A registered provider's name (`url`, `local`, `container`, `embedded`, …). */
  provider: string
  /** The server's URL (absent on `embedded`). */
  url?: string
  skipped: SkippedProvider[]
  /** A Citus coordinator with this many workers: each file's database is a Citus cluster of its own. */
  citusWorkers?: number
  /** Tests connect through a pooler (`PGSCALE_TEST_PGBOUNCER=1`): `url` is PgBouncer's, `directUrl` the server's. */
  pooler?: 'pgbouncer'
  /** The server itself, when `url` is a pooler's: for what must bypass it (creating databases, checking locks). */
  directUrl?: string
  /** On `embedded`: a fresh PGlite's data directory (a tar file) each file's PGlite loads instead of running initdb. */
  pgliteSnapshot?: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgscaleTarget: TestTarget
  }
}
