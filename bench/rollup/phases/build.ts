import { sql } from 'kysely'
import { hasCitusShardNodes } from '../../../src/index.js'
import { localMonth, monthsBetween } from '../../../src/bench-kit.js'
import { progress } from '../../report/progress.js'
import { expensesRollup } from '../../synthetic/expenses.js'
import { SOURCE, TARGET, type RollupBenchOptions, type RollupRun } from '../rollup-run.js'

/**
 * Step 2: the rollup table, rebuilt for every tenant over the whole span of the source.
 *
 * ### Examples
 * ```ts
 * const { run, rollupSeconds } = await buildRollup(db, options)
 * ```
 */
export async function buildRollup(db: RollupRun['db'], o: RollupBenchOptions): Promise<{ run: RollupRun; rollupSeconds: number }> {
  const { target, rollup } = expensesRollup({ source: SOURCE, target: TARGET, zone: o.zone })
  await target.create(db)
  // On Citus: the rollup's table colocated with its (distributed) source, so a bucket routes to one shard.
  if (await hasCitusShardNodes(db)) await rollup.distribute(db)
  const { rows: span } = await sql<{
    first: Date
    last: Date
  }>`select min(paid_at) as first, max(paid_at) as last from ${sql.raw(SOURCE)}`.execute(db)
  const since = span[0]!.first
  const until = span[0]!.last
  const tenantCount = Math.max(1, o.tenants)
  const bar = progress('rebuilding rollup', tenantCount, { enabled: o.showProgress })
  const started = performance.now()
  for (let tenant = 1; tenant <= tenantCount; tenant++) {
    await rollup.rebuild(db, { tenantId: tenant, since, until })
    bar.update(tenant)
  }
  const rollupSeconds = (performance.now() - started) / 1000
  bar.done(
    `${tenantCount} tenants × ${monthsBetween(localMonth(since, o.zone), localMonth(until, o.zone)).length} months in ${rollupSeconds.toFixed(1)} s`,
  )
  await sql.raw(`analyze ${TARGET}`).execute(db)
  return { run: { db, o, rollup, since, until }, rollupSeconds }
}
