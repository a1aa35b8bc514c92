import { sql, type Kysely } from 'kysely'
import { InvalidArgumentError, toPgScaleError } from '../../errors.js'
import { ALL_TENANTS_SETTING, fleetSecurityDdl, rowSecurityDdl, rowSecurityOn } from '../../db/security/row-security.js'
import { assertIdentifier, assertQualifiedName, fitIdentifier } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import { sketchKind, type FleetTable, type RollupMigrationOptions, type RollupTable } from '../config/index.js'
import { ensureSketchExtensions, tableGrants } from '../schema/index.js'
import { isExactNumberType, type FleetPlan } from './fleet-plan.js'
import { compileSql } from '../../sql/statement-template.js'
import { fillFleet, fleetKeyConstraint } from './fleet-sql.js'

/** Options of {@link fleetTable}. */
export interface FleetTableConfig {
  /** The rollup table it combines (from `rollupTable`). */
  of: RollupTable
  /**
   * The group columns it keeps: a subset of the rollup table's (default all of them; `[]`: one row
   * per month). With `perTenant`, default `[]`, and at least one group must be dropped.
   */
  groupBy?: readonly string[]
  /**
   * Keep the tenant: one row per tenant, local month and kept group (`tenant_id` leads the key),
   * the dropped groups combined — what a view with tenant detail but no dropped group reads (the
   * top 20 tenants per month). Written by the tenant's own refresh statement (no lock of other
   * tenants' buckets); under row-level security it has the rollup table's tenant policy.
   */
  perTenant?: boolean
  /**
   * Keep the level by the drain instead of by every write: a refresh, rebuild or drain only marks
   * the months it wrote in the level's pending table (`<name>_pending`, one row a month) under a
   * shared lock, so writes of the same month by many tenants no longer take turns and pay ~one
   * small insert instead of the level's upsert; `readAcross` reads the level for every month not
   * pending and the rollup table for the pending ones (one statement: exact); `rollup.refreshFleet`
   * — and the `drain` loop whenever the log is empty — recomputes the pending months. Any measure
   * the level combines (the recomputation runs as fleet-wide work, also under row-level security).
   * With `perTenant`, the marks are the tenant's buckets (tenant × month, under the bucket locks the
   * write holds) and `refreshFleet` recomputes those.
   */
  deferred?: boolean
}

/** The comment that marks a table as the fleet level of a rollup table: how a rollup that declares none finds one. */
export function fleetMarker(of: Pick<RollupTable, 'qualified'>): string {
  return `pgscale.fleet:${of.qualified}`
}

/** The comment that marks a table as a per-tenant level of a rollup table (`perTenant`). */
export function tenantLevelMarker(of: Pick<RollupTable, 'qualified'>): string {
  return `pgscale.fleet.tenant:${of.qualified}`
}

/** The comment that marks a table as a deferred fleet level of a rollup table (`deferred`: kept by the drain). */
export function deferredFleetMarker(of: Pick<RollupTable, 'qualified'>): string {
  return `pgscale.fleet.deferred:${of.qualified}`
}

/** The comment that marks a table as a deferred per-tenant level of a rollup table (`perTenant` and `deferred`). */
export function deferredTenantLevelMarker(of: Pick<RollupTable, 'qualified'>): string {
  return `pgscale.fleet.tenant.deferred:${of.qualified}`
}

/** The marker of `level`'s kind. */
export function levelMarker(level: Pick<FleetTable, 'of' | 'perTenant' | 'deferred'>): string {
  if (level.perTenant) return level.deferred ? deferredTenantLevelMarker(level.of) : tenantLevelMarker(level.of)
  return level.deferred ? deferredFleetMarker(level.of) : fleetMarker(level.of)
}

/** The plans of declared fleet levels (set when a `MonthlyRollup` declares the level): what `create` fills by. */
const plans = new WeakMap<FleetTable, FleetPlan>()

/** Records the plan a `MonthlyRollup` declared for `fleet` (its measures' combiners), for `create`'s fill. */
export function bindFleetPlan(fleet: FleetTable, plan: FleetPlan): void {
  plans.set(fleet, plan)
}

/**
 * Declares a rollup's fleet level: one row per local month and kept group (`groupBy`, a subset of
 * the rollup table's groups), every measure combined over all tenants, plus the counts that keep it
 * exact (`pgscale_buckets`: the rollup rows it combines; `pgscale_nn_<measure>` for each integer or
 * numeric measure: its non-null contributions). Give it to the `MonthlyRollup` as `fleet`: its
 * refreshes, rebuilds and drains keep the level in the same transaction as the tenant buckets, and
 * `readAcross` reads it when a view needs no tenant detail. `create` fills it from the rollup
 * table, so declare the `MonthlyRollup` (which checks that every measure combines) first.
 *
 * With `perTenant: true` it keeps the tenant and drops groups instead: one row per tenant, month
 * and kept group (`groupBy`, default `[]`), written by each tenant refresh's own statement from the
 * rows it wrote; `readAcross` reads it for a view with tenant detail (`top`, `perTenant`,
 * `tenants`) that keeps none of the groups it drops. Declare both kinds as an array.
 *
 * ### Examples
 * ```ts
 * const expensesFleet = fleetTable('expenses_fleet', { of: expensesMonthly, groupBy: ['category'] })
 * const expensesByTenant = fleetTable('expenses_by_tenant', { of: expensesMonthly, groupBy: [], perTenant: true })
 * const rollup = new MonthlyRollup({ …, target: expensesMonthly, fleet: [expensesFleet, expensesByTenant] })
 * await expensesFleet.create(db) // filled from expenses_monthly
 * await expensesByTenant.create(db)
 * await rollup.readAcross(db, { from: '2025-10', to: '2025-12', groupBy: [], top: { by: 'total', n: 20 } }) // reads expenses_by_tenant
 * ```
 */
export function fleetTable(name: string, config: FleetTableConfig): FleetTable {
  const { schema, name: table } = assertQualifiedName(name, 'fleet table name')
  if (config === null || typeof config !== 'object') throw new InvalidArgumentError('fleetTable needs { of, groupBy }')
  const of = config.of
  if (!of || typeof of.qualified !== 'string' || !Array.isArray(of.measures))
    throw new InvalidArgumentError('fleetTable: of must be a rollup table declared with rollupTable()')
  const all = of.groupBy.map((g) => g.name)
  if (config.groupBy !== undefined && !Array.isArray(config.groupBy))
    throw new InvalidArgumentError('fleetTable: groupBy must be an array of the rollup table’s group columns')
  if (config.perTenant !== undefined && typeof config.perTenant !== 'boolean')
    throw new InvalidArgumentError('fleetTable: perTenant must be a boolean')
  const perTenant = config.perTenant === true
  if (config.deferred !== undefined && typeof config.deferred !== 'boolean')
    throw new InvalidArgumentError('fleetTable: deferred must be a boolean')
  const deferred = config.deferred === true
  const wanted = (config.groupBy ?? (perTenant ? [] : all)).map((g) => assertIdentifier(g, 'fleet groupBy column'))
  const unknown = wanted.find((g) => !all.includes(g))
  if (unknown) throw new InvalidArgumentError(`fleetTable: ${unknown} is not a group column of ${of.name} [${all}]`)
  if (new Set(wanted).size !== wanted.length) throw new InvalidArgumentError('fleetTable: a group column is named twice')
  const groupBy = all.filter((g) => wanted.includes(g))
  if (perTenant && groupBy.length === all.length)
    throw new InvalidArgumentError(
      `fleetTable: a per-tenant level must drop a group of ${of.name} [${all}]: keeping them all, it would be the rollup table`,
    )
  const qualified = quoteQualified(schema, table)
  const pending = deferred ? quoteQualified(schema, fitIdentifier(table, 'pending')) : undefined
  if (qualified === of.qualified) throw new InvalidArgumentError('fleetTable: the fleet table must not be the rollup table')
  // A per-tenant level is rewritten from the rows its tenant's statement wrote: no delta counts.
  const nonNullColumns = perTenant
    ? {}
    : Object.fromEntries(of.measures.filter((m) => isExactNumberType(m.type)).map((m) => [m.name, fitIdentifier('pgscale_nn', m.name)]))
  const fleet: FleetTable = {
    name,
    qualified,
    of,
    groupBy,
    perTenant,
    deferred,
    pending,
    nonNullColumns,
    ddl: () => fleetDdl(fleet),
    create: (db) => typed(createFleet(db, fleet)),
    migration: (options: RollupMigrationOptions = {}) => {
      const grants = [qualified, ...(pending ? [pending] : [])].flatMap((t) => tableGrants(schema, t, options?.runtimeRole))
      return {
        up: (db) =>
          typed(
            (async () => {
              await createFleet(db, fleet)
              for (const grant of grants) await sql.raw(grant).execute(db)
            })(),
          ),
        down: (db) =>
          typed(sql.raw(`drop table if exists ${[qualified, ...(pending ? [pending] : [])].join(', ')}`).execute(db)).then(() => undefined),
      }
    },
  }
  return fleet
}

/**
 * The fleet table's DDL: the extensions its sketches need, the table, its marker comment, its
 * row-level security (an `rls` rollup's: the fleet-wide policy, or a per-tenant level's tenant policy).
 */
function fleetDdl(f: FleetTable): string[] {
  const sketches = [...new Set(f.of.measures.flatMap((m) => sketchKind(m.type) ?? []))]
  const types = new Map(f.of.groupBy.map((g) => [g.name, g.type]))
  const table = f.qualified.split('"."').pop()!.replace(/"/g, '')
  const key = [...(f.perTenant ? ['tenant_id'] : []), 'month', ...f.groupBy.map((g) => `"${g}"`)].join(', ')
  const definitions = [
    ...(f.perTenant ? [`tenant_id ${f.of.tenantType} not null`] : []),
    'month date not null',
    ...f.groupBy.map((g) => `"${g}" ${types.get(g)}`),
    ...f.of.measures.map((m) => `"${m.name}" ${m.type}`),
    ...Object.values(f.nonNullColumns).map((c) => `"${c}" integer not null`),
    ...(f.perTenant ? [] : ['pgscale_buckets integer not null']),
    `constraint "${fleetKeyConstraint(f)}" unique nulls not distinct (${key})`,
    `constraint "${fitIdentifier(table, 'month_is_first_day')}" check (extract(day from month) = 1)`,
  ]
  const security = f.perTenant
    ? rowSecurityDdl(f.qualified, { textTenant: /^(text|varchar|character varying)/i.test(f.of.tenantType) })
    : fleetSecurityDdl(f.qualified)
  // A per-tenant level's month index, as the rollup table's: what readAcross scans (its key serves one tenant's writes).
  const monthIndex = `create index if not exists "${fitIdentifier(table, 'month')}" on ${f.qualified} (month, tenant_id)`
  return [
    ...sketches.map((kind) => `create extension if not exists ${kind}`),
    `create table if not exists ${f.qualified} (\n  ${definitions.join(',\n  ')}\n)`,
    ...(f.perTenant ? [monthIndex] : []),
    `comment on table ${f.qualified} is '${levelMarker(f).replace(/'/g, "''")}'`,
    ...(f.of.isolation === 'rls' ? security : []),
    ...pendingDdl(f),
  ]
}

/**
 * A deferred level's table of pending months (one row a month some write changed since the level
 * last recomputed it), with the level's row-level security; nothing for a level kept by its writes.
 */
function pendingDdl(f: FleetTable): string[] {
  if (!f.pending) return []
  if (f.perTenant) {
    // A per-tenant level's pending buckets (tenant × month), with the rollup table's tenant policy.
    const table = f.pending.split('"."').pop()!.replace(/"/g, '')
    return [
      `create table if not exists ${f.pending} (\n  tenant_id ${f.of.tenantType} not null,\n  month date not null\n)`,
      `create index if not exists "${fitIdentifier(table, 'bucket')}" on ${f.pending} (tenant_id, month)`,
      ...(f.of.isolation === 'rls'
        ? rowSecurityDdl(f.pending, { textTenant: /^(text|varchar|character varying)/i.test(f.of.tenantType) })
        : []),
    ]
  }
  // No unique key: a writer must not wait for another's commit to mark a month (deferred-level.ts).
  return [
    `create table if not exists ${f.pending} (\n  month date not null\n)`,
    ...(f.of.isolation === 'rls' ? fleetSecurityDdl(f.pending) : []),
  ]
}

/**
 * The fleet level as plain SQL for a migration script (what `migrationSql` adds after the rollup
 * table), in the script's transaction: the rollup table held in `SHARE` mode (refreshes wait), the
 * table, its marker and row-level security as `create` makes them, and the fill from the rollup
 * table — only into an empty level, so running the script again changes nothing.
 *
 * ### Examples
 * ```ts
 * fleetMigrationStatements(fleet, plan) // ['create table if not exists "expenses_fleet" (…)', …, 'insert into "expenses_fleet" … where not exists (…)']
 * ```
 */
export function fleetMigrationStatements(f: FleetTable, plan: FleetPlan): string[] {
  const ddl = fleetDdl(f)
  const fill = compileSql(fillFleet({ target: f.of }, f, plan, { onlyIntoEmpty: true })).sql
  return [
    ...ddl.filter((s) => s.startsWith('create extension')),
    `lock table ${f.of.qualified} in share mode`,
    ...(f.of.isolation === 'rls' ? [`select set_config('${ALL_TENANTS_SETTING}', 'on', true)`] : []),
    ...ddl.filter((s) => !s.startsWith('create extension')),
    fill,
  ]
}

/**
 * Creates the fleet table if missing and fills it from the rollup table, in one transaction holding
 * the rollup table in `SHARE` mode (refreshes wait; the fill sees every committed bucket).
 */
async function createFleet(db: Kysely<any>, f: FleetTable): Promise<void> {
  const plan = plans.get(f)
  if (!plan)
    throw new InvalidArgumentError(
      `fleetTable ${f.name}: declare the MonthlyRollup that keeps it (fleet: ${f.name}) before create: the fill combines its measures by their rules`,
    )
  const { rows } = await sql<{ present: boolean }>`select to_regclass(${f.qualified}) is not null as present`.execute(db)
  if (rows[0]?.present) {
    // A level made before its rollup table's isolation was asked for gets its policy (the owner's migration).
    if (f.of.isolation === 'rls' && !(await rowSecurityOn(db, [f.qualified, ...(f.pending ? [f.pending] : [])])))
      for (const statement of fleetDdl(f).filter((s) => /^(alter table|drop policy|create policy)/.test(s)))
        await sql.raw(statement).execute(db)
    return
  }
  const sketches = [...new Set(f.of.measures.flatMap((m) => sketchKind(m.type) ?? []))]
  if (sketches.length) await ensureSketchExtensions(db, sketches)
  const run = async (trx: Kysely<any>) => {
    await sql.raw(`lock table ${f.of.qualified} in share mode`).execute(trx)
    if (f.of.isolation === 'rls') await sql`select set_config(${ALL_TENANTS_SETTING}, 'on', true)`.execute(trx)
    for (const statement of fleetDdl(f).filter((s) => !s.startsWith('create extension'))) await sql.raw(statement).execute(trx)
    await fillFleet({ target: f.of }, f, plan).execute(trx)
  }
  await (db.isTransaction ? run(db) : db.transaction().execute(run))
}

async function typed<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    throw toPgScaleError(err)
  }
}
