import { describe, it } from 'vitest'
import type { TestTarget } from './test-target.js'

/**
 * Every skip says why. A skipped test carries its reason in its name or its suite's
 * (`… — skipped: reason`) or as the note of `ctx.skip(reason)`; the summary reporter lists skips by reason at the end of a
 * run and fails a full run in which a test was skipped without one.
 */

/** The reason a server-only test does not run on PGlite. */
export const NEEDS_SERVER = 'needs a PostgreSQL server with concurrent connections; PGlite (embedded) has one connection in this process'

const skipping = (reason: string) =>
  ((name: string) => {
    console.warn(`[pgscale tests] skipped "${name}": ${reason}`)
    it.skip(`${name} — skipped: ${reason}`, () => {})
  }) as unknown as typeof it

/**
 * `it` when `reason` is empty (or false/undefined), else a skip whose name carries the reason.
 *
 * ### Examples
 * ```ts
 * itUnless(local.available ? '' : `needs the local provider: ${local.reason}`)('restarts the cluster', async () => { ... })
 * ```
 */
export function itUnless(reason: string | false | undefined): typeof it {
  return reason ? skipping(reason) : it
}

/**
 * `describe` when `reason` is empty, else a describe whose tests are all skipped with the reason.
 *
 * ### Examples
 * ```ts
 * describeUnless(citusRun ? '' : CITUS_OPT_IN)('the store on a Citus coordinator (opt-in)', () => { ... })
 * ```
 */
export function describeUnless(reason: string | false | undefined): typeof describe {
  if (!reason) return describe
  return ((name: string, ...rest: unknown[]) => {
    console.warn(`[pgscale tests] skipped the suite "${name}": ${reason}`)
    return (describe.skip as (...args: unknown[]) => void)(`${name} — skipped: ${reason}`, ...rest)
  }) as unknown as typeof describe
}

/** Why Citus suites do not run by default. */
export const CITUS_OPT_IN = 'opt-in: runs on a Citus coordinator + workers (PGSCALE_TEST_CITUS_WORKERS=2 with Citus installed)'

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
  return target.url ? it : skipping(NEEDS_SERVER)
}

/**
 * Skips the running test with its reason (printed and kept as the test's note).
 *
 * ### Examples
 * ```ts
 * it('…', async (ctx) => { if (!hll) return skipBecause(ctx, 'the server has no hll') })
 * ```
 */
export function skipBecause(ctx: { skip: (note?: string) => never; task: { name: string } }, reason: string): never {
  console.warn(`[pgscale tests] skipped "${ctx.task.name}": ${reason}`)
  return ctx.skip(reason)
}
