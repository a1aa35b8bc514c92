import { sql, type Kysely } from 'kysely'
import { hasCitusExtension } from '../../db/database.js'
import { MigrationRequiredError, SchemaMismatchError } from '../../errors.js'
import { advisoryXactLock, int32Hash } from '../../sql/advisory-lock.js'
import { arrayLiteral } from '../../sql/literal.js'
import { compileSql } from '../../sql/statement-template.js'
import type { FleetTable, RollupParts } from '../config/index.js'
import type { FleetHooks, FleetMaintenance } from '../buckets/index.js'
import { fleetPlan, type FleetPlan } from './fleet-plan.js'
import { deleteEmptyFleetBuckets, deltaRebuildStatement, deltaRefreshStatement, recomputeFleetMonths } from './fleet-sql.js'
import { bindFleetPlan, fleetMarker, fleetMigrationStatements } from './fleet-table.js'
import { tableGrants } from '../schema/index.js'

/**
 * The fleet hooks of a rollup, installed in its context by the facade: with a declared fleet level,
 * its plan (checked now: an `InvalidArgumentError` for a measure that does not combine), its locks,
 * statements and read routing; without one, only the check that the server has no fleet level of
 * this rollup table (which the rollup's writes would leave behind).
 *
 * ### Examples
 * ```ts
 * const ctx = new RollupContext(config, fleetHooks)
 * ```
 */
export function fleetHooks(parts: RollupParts): FleetHooks {
  const fleet = parts.fleet
  if (!fleet) return { validate: (db) => refuseUndeclared(db, parts) }
  const plan = fleetPlan(parts, fleet)
  bindFleetPlan(fleet, plan)
  let ready: Promise<void> | undefined
  const isReady = (db: Kysely<any>) => {
    if (!ready) {
      const done = checkFleetTable(db, parts, fleet)
      ready = done
      done.catch(() => {
        if (ready === done) ready = undefined
      })
    }
    return ready
  }
  return { validate: isReady, level: maintenance(parts, fleet, plan, isReady) }
}

function maintenance(parts: RollupParts, fleet: FleetTable, plan: FleetPlan, ready: (db: Kysely<any>) => Promise<void>): FleetMaintenance {
  const lockClass = int32Hash(`pgscale.rollup.fleet:${fleet.qualified}`)
  const delta = plan.mode === 'delta'
  return {
    lockMonths: (months) =>
      advisoryXactLock(
        lockClass,
        months.map((m) => int32Hash(m)),
      ),
    ...(delta
      ? {
          refresh: (p, tenant, month) => deltaRefreshStatement(p, fleet, plan, tenant, month),
          rebuild: (p, tenant, months) => deltaRebuildStatement(p, fleet, plan, tenant, months),
        }
      : {}),
    after: (months) =>
      compileSql(
        delta ? deleteEmptyFleetBuckets(fleet, arrayLiteral(months)) : recomputeFleetMonths(parts, fleet, plan, arrayLiteral(months)),
      ),
    across: (view) =>
      !view.perTenant && !view.tenants && !view.fresh && view.keep.every((g) => fleet.groupBy.includes(g)) ? fleet.qualified : undefined,
    ready,
    migrationSql: (runtimeRole) => ({
      statements: fleetMigrationStatements(fleet, plan),
      grants: tableGrants(schemaOf(fleet.qualified), fleet.qualified, runtimeRole),
    }),
  }
}

/** The schema of a quoted `"schema"."name"` (undefined for a bare `"name"`). */
function schemaOf(quoted: string): string | undefined {
  const parts = quoted.split('"."')
  return parts.length === 2 ? parts[0]!.replace(/^"/, '') : undefined
}

/**
 * The declared fleet level on the server: refused on a source Citus distributes (the level has no
 * tenant to be distributed by, and a refresh would write a shard and a coordinator table in one
 * statement), a `MigrationRequiredError` when its table is missing or is not this rollup table's level.
 */
async function checkFleetTable(db: Kysely<any>, parts: RollupParts, fleet: FleetTable): Promise<void> {
  if (await hasCitusExtension(db)) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_dist_partition where logicalrelid in (to_regclass(${parts.source}), to_regclass(${parts.target.qualified}))`.execute(
      db,
    )
    if (rows[0]!.n > 0)
      throw new SchemaMismatchError(
        `MonthlyRollup: the fleet level ${fleet.name} is not supported on a Citus-distributed rollup: it has no tenant to be distributed by, ` +
          `and each refresh would write the tenant's shard and a coordinator table in one statement; read the fleet with readAcross from the rollup table`,
      )
  }
  const { rows } = await sql<{ marker: string | null; present: boolean }>`
    select to_regclass(${fleet.qualified}) is not null as present, obj_description(to_regclass(${fleet.qualified}), 'pg_class') as marker`.execute(
    db,
  )
  if (!rows[0]?.present)
    throw new MigrationRequiredError(
      `fleet:${fleet.qualified}`,
      `${fleet.name}.create(db) (or its migration)`,
      `the fleet level ${fleet.qualified} does not exist`,
    )
  if (rows[0].marker !== fleetMarker(parts.target))
    throw new SchemaMismatchError(`MonthlyRollup: ${fleet.qualified} exists but is not the fleet level of ${parts.target.qualified}`)
}

/** A rollup that declares no fleet level, on a rollup table that has one: its writes would leave that level behind. */
async function refuseUndeclared(db: Kysely<any>, parts: RollupParts): Promise<void> {
  const { rows } = await sql<{ name: string }>`
    select c.oid::regclass::text as name from pg_description d join pg_class c on c.oid = d.objoid
    where d.classoid = 'pg_class'::regclass and d.objsubid = 0 and d.description = ${fleetMarker(parts.target)} limit 1`.execute(db)
  if (rows[0])
    throw new SchemaMismatchError(
      `MonthlyRollup: ${parts.target.qualified} has a fleet level (${rows[0].name}) that this rollup does not declare: its refreshes would ` +
        `leave that level behind. Declare it (fleet: fleetTable('${rows[0].name}', { of: target, groupBy })) or drop it`,
    )
}
