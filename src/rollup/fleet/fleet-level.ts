import { sql, type Kysely } from 'kysely'
import { hasCitusExtension } from '../../db/database.js'
import { MigrationRequiredError, SchemaMismatchError } from '../../errors.js'
import { advisoryXactLock, advisoryXactLockShared, int32Hash } from '../../sql/advisory-lock.js'
import { arrayLiteral } from '../../sql/literal.js'
import { compileSql } from '../../sql/statement-template.js'
import type { FleetTable, RollupParts } from '../config/index.js'
import type { FleetHooks, FleetMaintenance } from '../buckets/index.js'
import { fleetPlan } from './fleet-plan.js'
import {
  deleteEmptyFleetBuckets,
  fleetRowCount,
  levelsRebuildStatement,
  levelsRefreshStatement,
  markPendingBucketKeys,
  markPendingMonths,
  recomputeFleetMonths,
  recomputeTenantLevelBuckets,
  type StatementLevel,
} from './fleet-sql.js'
import {
  bindFleetPlan,
  deferredFleetMarker,
  deferredTenantLevelMarker,
  fleetMarker,
  fleetMigrationStatements,
  levelMarker,
  tenantLevelMarker,
} from './fleet-table.js'
import { deferredSource, refreshFleet, type DeferredLevel } from './deferred-level.js'
import { tableGrants } from '../schema/index.js'

/**
 * The level hooks of a rollup, installed in its context by the facade: with declared levels (a
 * fleet level, a per-tenant level, or an array of them), their plans (checked now: an
 * `InvalidArgumentError` for a measure that does not combine), locks, statements and read routing;
 * without one, only the check that the server has no level of this rollup table (which the
 * rollup's writes would leave behind).
 *
 * ### Examples
 * ```ts
 * const ctx = new RollupContext(config, fleetHooks)
 * ```
 */
export function fleetHooks(parts: RollupParts): FleetHooks {
  const levels = parts.levels ?? (parts.fleet ? [parts.fleet] : [])
  if (!levels.length) return { validate: (db) => refuseUndeclared(db, parts, []) }
  const planned = levels.map((fleet) => {
    const plan = fleetPlan(parts, fleet)
    bindFleetPlan(fleet, plan)
    return { fleet, plan }
  })
  let ready: Promise<void> | undefined
  const isReady = (db: Kysely<any>) => {
    if (!ready) {
      const done = checkLevels(db, parts, levels)
      ready = done
      done.catch(() => {
        if (ready === done) ready = undefined
      })
    }
    return ready
  }
  return { validate: isReady, level: maintenance(parts, planned, isReady) }
}

function maintenance(parts: RollupParts, levels: readonly StatementLevel[], ready: (db: Kysely<any>) => Promise<void>): FleetMaintenance {
  const fleetWide = levels.filter((l) => !l.fleet.perTenant)
  // One lock class for every level without the tenant: the first one's (every writer of this rollup takes it).
  const lockClass = fleetWide.length ? int32Hash(`pgscale.rollup.fleet:${fleetWide[0]!.fleet.qualified}`) : undefined
  // Levels the tenant statement writes itself (deltas, per-tenant levels, a deferred per-tenant
  // level's marks); recomputed ones after it; deferred ones without the tenant only marked after it.
  const inStatement = levels.filter(
    (l) => l.plan.mode === 'delta' || l.plan.mode === 'tenant' || (l.plan.mode === 'deferred' && l.fleet.perTenant),
  )
  const perTenant = levels.filter((l) => l.fleet.perTenant)
  const deltaKept = fleetWide.filter((l) => l.plan.mode === 'delta')
  const allDeferred = levels.filter((l): l is DeferredLevel => l.plan.mode === 'deferred' && l.fleet.pending !== undefined)
  const deferred = allDeferred.filter((l) => !l.fleet.perTenant)
  const keptByWrites = fleetWide.filter((l) => l.plan.mode !== 'deferred')
  // Writers of a rollup whose only levels without the tenant are deferred take shared month locks
  // (they do not take turns; refreshFleet's exclusive lock waits for them); else exclusive ones.
  const lock = keptByWrites.length ? advisoryXactLock : advisoryXactLockShared
  const marks = (months: readonly string[]) => deferred.map(({ fleet }) => compileSql(markPendingMonths(fleet, arrayLiteral(months))))
  return {
    lockMonths: (months) =>
      lockClass === undefined
        ? []
        : [
            lock(
              lockClass,
              months.map((m) => int32Hash(m)),
            ),
          ],
    ...(inStatement.length
      ? {
          refresh: (p, tenant, month) => levelsRefreshStatement(p, inStatement, tenant, month),
          rebuild: (p, tenant, months) => levelsRebuildStatement(p, inStatement, tenant, months),
        }
      : {}),
    after: (months) => [
      ...keptByWrites.map(({ fleet, plan }) =>
        compileSql(
          plan.mode === 'delta'
            ? deleteEmptyFleetBuckets(fleet, arrayLiteral(months))
            : recomputeFleetMonths(parts, fleet, plan, arrayLiteral(months)),
        ),
      ),
      ...marks(months),
    ],
    // A large drain recomputes its levels once after its tenants' statements (which leave them out):
    // the levels without the tenant for the claimed months, the per-tenant ones for the claimed buckets.
    ...(deltaKept.length
      ? {
          bulk: {
            after: (months, keys) => [
              ...keptByWrites.map(({ fleet, plan }) => compileSql(recomputeFleetMonths(parts, fleet, plan, arrayLiteral(months)))),
              ...perTenant.map(({ fleet, plan }) =>
                compileSql(
                  (plan.mode === 'deferred' ? markPendingBucketKeys : recomputeTenantLevelBuckets)(
                    parts,
                    fleet,
                    plan,
                    arrayLiteral(keys.map((k) => k.tenantId)),
                    arrayLiteral(keys.map((k) => k.month)),
                  ),
                ),
              ),
              ...marks(months),
            ],
            rows: (months) => compileSql(fleetRowCount(deltaKept[0]!.fleet, arrayLiteral(months))),
          },
        }
      : {}),
    refreshDeferred: (ctx, db, options) => refreshFleet(ctx, allDeferred, lockClass ?? 0, db, options),
    deferred: allDeferred.length > 0,
    across: (view) => acrossLevel(parts, levels, view),
    ready,
    migrationSql: (runtimeRole) => ({
      statements: levels.flatMap(({ fleet, plan }) => fleetMigrationStatements(fleet, plan)),
      grants: levels.flatMap(({ fleet }) =>
        [fleet.qualified, ...(fleet.pending ? [fleet.pending] : [])].flatMap((t) => tableGrants(schemaOf(fleet.qualified), t, runtimeRole)),
      ),
    }),
  }
}

/**
 * The level that answers a `readAcross` view, else undefined (the rollup table answers): never a
 * `fresh` one; a level without the tenant when the view has no tenant detail and keeps only groups
 * it keeps; else the per-tenant level with the fewest groups that keeps every group the view keeps.
 */
function acrossLevel(
  parts: RollupParts,
  levels: readonly StatementLevel[],
  view: Parameters<FleetMaintenance['across']>[0],
): string | undefined {
  if (view.fresh) return undefined
  const keeps = (l: StatementLevel) => view.keep.every((g) => l.fleet.groupBy.includes(g))
  const fleetWide = levels.find((l) => !l.fleet.perTenant && !view.perTenant && !view.tenants && keeps(l))
  // A deferred level: its rows of the months not pending, the rollup table's of the pending ones.
  if (fleetWide) return fleetWide.fleet.deferred ? deferredSource(parts, fleetWide.fleet) : fleetWide.fleet.qualified
  const perTenant = levels.filter((l) => l.fleet.perTenant && keeps(l)).sort((a, b) => a.fleet.groupBy.length - b.fleet.groupBy.length)
  const level = perTenant[0]?.fleet
  return level?.deferred ? deferredSource(parts, level) : level?.qualified
}

/** The schema of a quoted `"schema"."name"` (undefined for a bare `"name"`). */
function schemaOf(quoted: string): string | undefined {
  const parts = quoted.split('"."')
  return parts.length === 2 ? parts[0]!.replace(/^"/, '') : undefined
}

/**
 * The declared levels on the server: refused on a source Citus distributes (a level without the
 * tenant has no tenant to be distributed by, and a refresh would write a shard and a coordinator
 * table in one statement; a per-tenant level is not colocated either), a `MigrationRequiredError`
 * when a level's table is missing, a `SchemaMismatchError` when it is not this rollup table's level
 * of that kind or the server has a level of this rollup table that is not declared.
 */
async function checkLevels(db: Kysely<any>, parts: RollupParts, levels: readonly FleetTable[]): Promise<void> {
  if (await hasCitusExtension(db)) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_dist_partition where logicalrelid in (to_regclass(${parts.source}), to_regclass(${parts.target.qualified}))`.execute(
      db,
    )
    if (rows[0]!.n > 0)
      throw new SchemaMismatchError(
        `MonthlyRollup: the fleet level ${levels[0]!.name} is not supported on a Citus-distributed rollup: it has no tenant to be distributed by, ` +
          `and each refresh would write the tenant's shard and a coordinator table in one statement; read the fleet with readAcross from the rollup table`,
      )
  }
  for (const fleet of levels) await checkLevelTable(db, fleet)
  await refuseUndeclared(db, parts, levels)
}

/** One declared level's table: present, and marked as this rollup table's level of its kind. */
async function checkLevelTable(db: Kysely<any>, fleet: FleetTable): Promise<void> {
  const { rows } = await sql<{ marker: string | null; present: boolean }>`
    select to_regclass(${fleet.qualified}) is not null as present, obj_description(to_regclass(${fleet.qualified}), 'pg_class') as marker`.execute(
    db,
  )
  if (!rows[0]?.present)
    throw new MigrationRequiredError(
      `fleet:${fleet.qualified}`,
      `${fleet.name}.create(db) (or its migration)`,
      `the ${fleet.perTenant ? 'per-tenant' : 'fleet'} level ${fleet.qualified} does not exist`,
    )
  if (rows[0].marker !== levelMarker(fleet))
    throw new SchemaMismatchError(
      `MonthlyRollup: ${fleet.qualified} exists but is not the ${fleet.perTenant ? 'per-tenant' : fleet.deferred ? 'deferred fleet' : 'fleet'} level of ${fleet.of.qualified}` +
        (rows[0].marker === deferredFleetMarker(fleet.of) || rows[0].marker === deferredTenantLevelMarker(fleet.of) || fleet.deferred
          ? ': a level is created deferred or kept by its writes, and cannot change kind in place (drop it and create it again)'
          : ''),
    )
  if (fleet.pending) {
    const { rows: pending } = await sql<{ present: boolean }>`select to_regclass(${fleet.pending}) is not null as present`.execute(db)
    if (!pending[0]?.present)
      throw new MigrationRequiredError(
        `fleet:${fleet.pending}`,
        `${fleet.name}.create(db) (or its migration)`,
        `the deferred level's pending table ${fleet.pending} does not exist`,
      )
  }
}

/** A level of the rollup table on the server that the rollup does not declare: its writes would leave that level behind. */
async function refuseUndeclared(db: Kysely<any>, parts: RollupParts, declared: readonly FleetTable[]): Promise<void> {
  const markers = [
    fleetMarker(parts.target),
    tenantLevelMarker(parts.target),
    deferredFleetMarker(parts.target),
    deferredTenantLevelMarker(parts.target),
  ]
  const { rows } = await sql<{ name: string; marker: string }>`
    select c.oid::regclass::text as name, d.description as marker from pg_description d join pg_class c on c.oid = d.objoid
    where d.classoid = 'pg_class'::regclass and d.objsubid = 0 and d.description = any(${markers}::text[])
      and c.oid <> all(array(select to_regclass(q) from unnest(${declared.map((l) => l.qualified)}::text[]) as q where to_regclass(q) is not null))
    limit 1`.execute(db)
  if (rows[0]) {
    const perTenant = ['', ', perTenant: true', ', deferred: true', ', perTenant: true, deferred: true'][
      Math.max(0, markers.indexOf(rows[0].marker))
    ]!
    throw new SchemaMismatchError(
      `MonthlyRollup: ${parts.target.qualified} has a level (${rows[0].name}) that this rollup does not declare: its refreshes would ` +
        `leave that level behind. Declare it (fleet: fleetTable('${rows[0].name}', { of: target, groupBy${perTenant} })) or drop it`,
    )
  }
}
