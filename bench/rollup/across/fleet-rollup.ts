import { sql } from 'kysely'
import { MonthlyRollup, rollupTable } from '../../../src/index.js'
import { fleetTable } from '../../../src/bench-kit.js'
import { SCHEMA, SOURCE, TARGET, type RollupRun } from '../rollup-run.js'

/** The expenses rollup again, on a table of its own, with a fleet level by category: what `--across` compares with the plain one. */
export interface FleetSide {
  rollup: MonthlyRollup
  target: string
  fleet: string
  /** Seconds to fill the fleet level from the rollup table (`fleet.create`). */
  fillSeconds: number
  fleetRows: number
}

/**
 * Declares the expenses rollup with a fleet level (`fleetTable(…, { groupBy: ['category'] })`) on a
 * table of its own, copies the plain rollup's rows into it (the same buckets: no second rebuild)
 * and creates the level (filled from that table).
 *
 * ### Examples
 * ```ts
 * const side = await fleetSide(run)
 * ```
 */
export async function fleetSide(run: RollupRun): Promise<FleetSide> {
  const target = rollupTable(`${SCHEMA}.expenses_monthly_fleeted`, {
    groupBy: { category: 'varchar(64)' },
    measures: { total: 'numeric(14,2)', count: 'integer' },
    tenantType: 'bigint',
  })
  const fleet = fleetTable(`${SCHEMA}.expenses_fleet`, { of: target, groupBy: ['category'] })
  const rollup = new MonthlyRollup({
    source: SOURCE,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)`, count: sql`count(*)` },
    where: sql`status <> 'cancelled'`,
    zone: run.o.zone,
    fleet,
  })
  await target.create(run.db)
  await sql.raw(`insert into ${target.qualified} select * from ${TARGET}`).execute(run.db)
  const started = performance.now()
  await fleet.create(run.db)
  const fillSeconds = (performance.now() - started) / 1000
  await sql.raw(`analyze ${target.qualified}; analyze ${fleet.qualified}`).execute(run.db)
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.raw(fleet.qualified)}`.execute(run.db)
  return { rollup, target: target.qualified, fleet: fleet.qualified, fillSeconds, fleetRows: rows[0]!.n }
}
