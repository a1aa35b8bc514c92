import type { Kysely } from 'kysely'

/**
 * Runs `work` in a transaction of `db` and keeps that transaction (and the locks `work` took) open
 * until `release()`: `started` resolves once `work` has finished (or failed), `done` when the
 * transaction has ended. What concurrency tests hold open while another connection tries its turn.
 *
 * ### Examples
 * ```ts
 * const first = heldOpen(t.db, (trx) => rollup.refreshAt(trx, { tenantId: 1, moment }))
 * await first.started
 * // … another connection's write …
 * first.release(); await first.done
 * ```
 */
export function heldOpen(
  db: Kysely<any>,
  work: (trx: Kysely<any>) => Promise<unknown>,
): { started: Promise<void>; release(): void; done: Promise<void> } {
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let wrote!: () => void
  const written = new Promise<void>((resolve) => (wrote = resolve))
  const done = db.transaction().execute(async (trx) => {
    try {
      await work(trx)
    } finally {
      wrote()
    }
    await held
  })
  // `started` also settles when the transaction fails before `work` returns.
  return { started: Promise.race([written, done]), release, done }
}
