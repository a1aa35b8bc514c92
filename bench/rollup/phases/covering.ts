import { sql } from 'kysely'
import { localMonth } from '../../../src/bench-kit.js'
import { SCHEMA, SOURCE, type RollupBenchReport, type RollupRun } from '../rollup-run.js'
import { measureRebuild, measureRefresh } from './tenant.js'

/**
 * Step 5: the covering index rollup.sourceIndex() recommends, in place of the plain (tenant, at)
 * index, after VACUUM ANALYZE; refresh and rebuild measured again for the same tenants.
 *
 * ### Examples
 * ```ts
 * const covering = await measureCovering(run, [1, 2], console.error)
 * ```
 */
export async function measureCovering(
  run: RollupRun,
  [bigId, typicalId]: [number, number],
  log: (line: string) => void,
): Promise<RollupBenchReport['covering']> {
  const index = await run.rollup.sourceIndex(run.db)
  await sql.raw(index.sql).execute(run.db)
  await sql.raw(`drop index ${SCHEMA}.expenses_tenant_paid_at`).execute(run.db)
  await sql.raw(`vacuum analyze ${SOURCE}`).execute(run.db)
  log(
    `covering index ${index.name} (${index.key.join(', ')}) include (${index.include.join(', ')}) in place of the plain one; measuring again`,
  )
  const thisMonth = localMonth(run.until, run.o.zone)
  const again = async (tenantId: number) => ({
    refresh: await measureRefresh(run, tenantId, thisMonth),
    rebuild: await measureRebuild(run, tenantId),
  })
  return { index: index.name, big: await again(bigId), typical: await again(typicalId) }
}
