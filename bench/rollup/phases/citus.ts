import { localMonth, refreshStatement } from '../../../src/bench-kit.js'
import { citusPlacement, type CitusPlacementReport } from '../../report/citus-placement.js'
import { dashboardMonths, dashboardQueries } from '../dashboard.js'
import { SOURCE, TARGET, type RollupRun } from '../rollup-run.js'

/**
 * On Citus: the big and the typical tenant's shard and worker, and the plans of this month's
 * refresh statement and of the rollup's first dashboard query (task count, the shard's plan).
 *
 * ### Examples
 * ```ts
 * const citus = await citusRollupPlacement(run, 2) // undefined off Citus
 * ```
 */
export async function citusRollupPlacement(run: RollupRun, typicalId: number): Promise<CitusPlacementReport | undefined> {
  const thisMonth = localMonth(run.until, run.o.zone)
  const tenants = [
    { label: 'big', tenant: 1 },
    { label: 'typical', tenant: typicalId },
  ]
  const refresh = await citusPlacement(run.db, SOURCE, tenants, (tenant) => {
    const q = refreshStatement({ ...run.rollup.parts, atKind: 'timestamptz' }, Number(tenant), thisMonth).compile(run.db)
    return { sql: q.sql, params: q.parameters }
  })
  if (!refresh) return undefined
  const read = await citusPlacement(run.db, TARGET, tenants, (tenant) => {
    const q = dashboardQueries(SOURCE, TARGET, run.o.zone, Number(tenant), dashboardMonths(thisMonth))[0]!.rollup.compile(run.db)
    return { sql: q.sql, params: q.parameters }
  })
  const label = (what: string) => (t: CitusPlacementReport['tenants'][number]) => ({ ...t, label: `${t.label} ${what}` })
  return { ...refresh, tenants: [...refresh.tenants.map(label('refresh')), ...(read?.tenants ?? []).map(label('read'))] }
}
