import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Each file has its own database; files run in parallel on the machine's cores (Vitest's own
    // default leaves one core idle: on 2 cores the suite then ran one file at a time, 193 s on
    // native PostgreSQL and 468 s on PGlite against 138 s and 269 s with both cores).
    pool: 'forks',
    maxWorkers: Math.max(1, availableParallelism()),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
})
