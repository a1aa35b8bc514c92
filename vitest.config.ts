import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { defineConfig, type Plugin } from 'vitest/config'

/**
 * The frameworks the adapters are written for live in the example apps (examples/<framework>,
 * installed by `npm run adapters:install`), not in the main install (Mastra wants Node 22, and
 * @llamaindex/core is deprecated: their warnings stay out of `npm ci`). Their imports resolve as
 * if made from inside that app, so tests and adapters load the same copy the example app uses.
 */
function frameworkPeers(): Plugin {
  const peers: Array<[RegExp, string]> = [
    [/^@langchain\//, 'langchain'],
    [/^@mastra\//, 'mastra'],
    [/^(@llamaindex\/|llamaindex($|\/))/, 'llamaindex'],
  ]
  return {
    name: 'pgscale-framework-peers',
    enforce: 'pre',
    async resolveId(source, importer, options) {
      const app = peers.find(([pattern]) => pattern.test(source))?.[1]
      if (!app || importer?.includes(`/examples/${app}/`)) return null
      const anchor = join(import.meta.dirname, 'examples', app, 'package.json')
      if (!existsSync(anchor)) return null
      return this.resolve(source, anchor, { ...options, skipSelf: true })
    },
  }
}

export default defineConfig({
  plugins: [frameworkPeers()],
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Each file has its own database; files run in parallel on the machine's cores (Vitest's own
    // default leaves one core idle: on 2 cores the suite then ran one file at a time, 193 s on
    // native PostgreSQL and 468 s on PGlite against 138 s and 269 s with both cores).
    pool: 'forks',
    maxWorkers: Math.max(1, availableParallelism()),
    // A worker process runs file after file instead of a new process per file: each file still has
    // its own database (or PGlite), but the process, the modules it loaded (and their module-level
    // state) and PGlite's compiled WebAssembly are reused. Measured on the 2-core VM, whole suite,
    // one run each: PGlite 341 s → 269 s, native 270 s → 256 s. So a file restores what it changes
    // (process.env, spies, module knobs such as bulkDrain) in finally/afterAll.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
})
