import { it } from 'vitest'
import type { TestTarget } from './test-target.js'

/**
 * `it` for tests that need a server with concurrent connections (and a URL other handles can
 * open); on PGlite, which has one connection in one process, the test is skipped with the reason
 * in its name and printed.
 *
 * ### Examples
 * ```ts
 * itWithServer(t.target)('ten concurrent refreshes', async () => { ... })
 * ```
 */
export function itWithServer(target: TestTarget): typeof it {
  if (target.url) return it
  const reason = 'needs a PostgreSQL server with concurrent connections; PGlite (embedded) has one connection in this process'
  const skip = ((name: string) => {
    console.warn(`[pgscale tests] skipped "${name}": ${reason}`)
    it.skip(`${name} — skipped: ${reason}`, () => {})
  }) as unknown as typeof it
  return skip
}
