import { sql } from 'kysely'
import { MonthlyRollup, rollupTable } from '../../../src/index.js'
import { fleetTable } from '../../../src/bench-kit.js'
import { SCHEMA, SOURCE, TARGET, type RollupRun } from '../rollup-run.js'

/** A level of a {@link FleetSide}: its table, rows and fill time. */
export interface SideLevel {
  table: string
  rows: number
  /** Seconds to fill it from the rollup table (`create`). */
  fillSeconds: number
}

/** The expenses rollup again, on a table of its own, with its levels: what `--across` compares with the plain one. */
export interface FleetSide {
  rollup: MonthlyRollup
  target: string
  /** The fleet level by category (no tenant). */
  fleet: SideLevel
  /** The per-tenant level (tenant × month, the category dropped), when declared. */
  tenantLevel?: SideLevel
}

/**
 * Declares the expenses rollup with a fleet level (`fleetTable(…, { groupBy: ['category'] })`,
 * kept by its writes or, with `deferred`, by `refreshFleet`) and,
 * with `perTenant`, a per-tenant level (`{ groupBy: [], perTenant: true }`) on tables of their own
 * (suffix `name`), copies the plain rollup's rows into it (the same buckets: no second rebuild) and
 * creates the levels (filled from that table).
 *
 * ### Examples
 * ```ts
 * const side = await fleetSide(run, { name: 'both', perTenant: true })
 * ```
 */
export async function fleetSide(run: RollupRun, o: { name: string; perTenant: boolean; deferred?: boolean }): Promise<FleetSide> {
  const target = rollupTable(`${SCHEMA}.expenses_monthly_${o.name}`, {
    groupBy: { category: 'varchar(64)' },
    measures: { total: 'numeric(14,2)', count: 'integer' },
    tenantType: 'bigint',
  })
  const fleet = fleetTable(`${SCHEMA}.expenses_fleet_${o.name}`, { of: target, groupBy: ['category'], deferred: o.deferred === true })
  const byTenant = o.perTenant
    ? fleetTable(`${SCHEMA}.expenses_by_tenant_${o.name}`, { of: target, groupBy: [], perTenant: true, deferred: o.deferred === true })
    : undefined
  const rollup = new MonthlyRollup({
    source: SOURCE,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)`, count: sql`count(*)` },
    where: sql`status <> 'cancelled'`,
    zone: run.o.zone,
    fleet: byTenant ? [fleet, byTenant] : fleet,
  })
  await target.create(run.db)
  await sql.raw(`insert into ${target.qualified} select * from ${TARGET}`).execute(run.db)
  await sql.raw(`analyze ${target.qualified}`).execute(run.db)
  const fill = async (level: typeof fleet): Promise<SideLevel> => {
    const started = performance.now()
    await level.create(run.db)
    const fillSeconds = (performance.now() - started) / 1000
    await sql.raw(`analyze ${level.qualified}`).execute(run.db)
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.raw(level.qualified)}`.execute(run.db)
    return { table: level.qualified, rows: rows[0]!.n, fillSeconds }
  }
  return { rollup, target: target.qualified, fleet: await fill(fleet), ...(byTenant ? { tenantLevel: await fill(byTenant) } : {}) }
}
