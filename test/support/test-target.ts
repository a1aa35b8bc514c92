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
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgscaleTarget: TestTarget
  }
}
