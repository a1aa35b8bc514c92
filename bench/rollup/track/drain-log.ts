import type { Database, MonthlyRollup } from '../../../src/index.js'

/**
 * Drains a tracked rollup's dirty-key log until it is empty (refreshDirty in batches of 1,000
 * log rows); resolves to the buckets refreshed.
 *
 * ### Examples
 * ```ts
 * const buckets = await drainLog(rollup, db)
 * ```
 */
export async function drainLog(rollup: MonthlyRollup, db: Database): Promise<number> {
  let buckets = 0
  for (;;) {
    const done = await rollup.refreshDirty(db, { limit: 1000 })
    buckets += done.buckets
    if (done.remaining === 0) return buckets
  }
}
