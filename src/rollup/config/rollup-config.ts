import type { RawBuilder } from 'kysely'
import type { ReplicaSet } from '../../replicas/index.js'
import { InvalidArgumentError } from '../../errors.js'
import { assertIdentifier, assertQualifiedName } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import { assertTimeZone } from './local-month.js'
import type { FleetTable, RollupParts, RollupTable } from './rollup-parts.js'

/** Configuration of a `MonthlyRollup`. */
export interface MonthlyRollupConfig {
  /** The source table (`expenses` or `schema.expenses`). */
  source: string
  /** The rollup table from {@link rollupTable}. */
  target: RollupTable
  /**
   * The source's time column: `timestamptz` (instants), `timestamp` (wall-clock times in `zone`)
   * or `date` (calendar dates in `zone`). Checked on the server; any other type is refused.
   */
  at: string
  /** The source's tenant column. */
  tenant: string
  /** Source columns to group by; the target's group columns, same names. */
  groupBy: readonly string[]
  /** Aggregate expressions per target measure, as Kysely `sql` fragments: `{ total: sql\`sum(amount)\` }`. */
  measures: Readonly<Record<string, RawBuilder<unknown>>>
  /** Which source rows count, as a Kysely `sql` fragment: `sql\`status <> 'cancelled'\``. */
  where?: RawBuilder<unknown>
  /** The IANA zone whose local months are the buckets, e.g. `America/Mexico_City`. */
  zone: string
  /**
   * The replicas `read(replicas, …)` goes through: every write of the rollup (`refreshAt`,
   * `rebuild`, `refreshDirty`/`drain`, `markDirty`) is noted there for read-your-writes, on any
   * handle — the app's transactions too (noted once the primary says they committed). Writes on the
   * very handle a `ReplicaSet` was made with as its primary are noted without it.
   */
  replicas?: ReplicaSet
  /**
   * Coarser levels from `fleetTable(name, { of: target, groupBy, perTenant })` — one, or an array
   * (e.g. a level without the tenant and a per-tenant level without the groups): refreshes,
   * rebuilds and drains keep each in the same transaction as the tenant buckets they change, and
   * `readAcross` reads the one that answers a view (the level without the tenant first). Every
   * measure must combine across tenants and groups (sum, count, min, max, `hll`, `tdigest`);
   * anything else is refused here.
   */
  fleet?: FleetTable | readonly FleetTable[]
}

/**
 * Validates a rollup's configuration into the parts its statements are built from: identifiers
 * checked, the source quoted, the group columns matching the target's, one aggregate fragment per
 * target measure, the zone an IANA name. The `at` column's kind is read later, on the server.
 *
 * ### Examples
 * ```ts
 * const parts = resolveRollupConfig({ source: 'expenses', target, at: 'paid_at', tenant: 'tenant_id', groupBy: ['category'], measures, zone: 'UTC' })
 * ```
 */
export function resolveRollupConfig(config: MonthlyRollupConfig): RollupParts {
  if (config === null || typeof config !== 'object') throw new InvalidArgumentError('MonthlyRollup needs a configuration object')
  const { target } = config
  if (!target || typeof target.qualified !== 'string' || !Array.isArray(target.measures)) {
    throw new InvalidArgumentError('MonthlyRollup: target must be a table declared with rollupTable()')
  }
  const source = assertQualifiedName(config.source, 'source table')
  const at = assertIdentifier(config.at, 'at column')
  const tenant = assertIdentifier(config.tenant, 'tenant column')
  if (!Array.isArray(config.groupBy)) throw new InvalidArgumentError('MonthlyRollup: groupBy must be an array of column names')
  const groupBy = config.groupBy.map((g) => assertIdentifier(g, 'groupBy column'))
  const targetGroups = target.groupBy.map((g) => g.name)
  if (groupBy.join() !== targetGroups.join()) {
    throw new InvalidArgumentError(
      `MonthlyRollup: groupBy [${groupBy}] must be the target's group columns [${targetGroups}], in that order`,
    )
  }
  const measures = target.measures.map(({ name }) => {
    const expression = config.measures?.[name]
    if (!isSqlFragment(expression)) {
      throw new InvalidArgumentError(
        `MonthlyRollup: measure ${name} needs an aggregate expression as a Kysely sql fragment, e.g. sql\`sum(amount)\``,
      )
    }
    return { name, expression }
  })
  const extra = Object.keys(config.measures ?? {}).filter((m) => !target.measures.some((t) => t.name === m))
  if (extra.length) throw new InvalidArgumentError(`MonthlyRollup: measures ${extra.join(', ')} are not columns of ${target.name}`)
  if (config.where !== undefined && !isSqlFragment(config.where)) {
    throw new InvalidArgumentError("MonthlyRollup: where must be a Kysely sql fragment, e.g. sql`status <> 'cancelled'`")
  }
  const zone = assertTimeZone(config.zone)
  const levels = resolveLevels(config.fleet, target)
  return {
    source: quoteQualified(source.schema, source.name),
    target,
    at,
    tenant,
    groupBy,
    measures,
    where: config.where,
    zone,
    atKind: 'timestamptz',
    ...(levels.length ? { fleet: levels[0]!, levels } : {}),
  }
}

/** The declared levels, checked: each a `fleetTable` of `target`, no table twice. */
function resolveLevels(fleet: MonthlyRollupConfig['fleet'], target: RollupTable): FleetTable[] {
  if (fleet === undefined) return []
  const levels: unknown[] = Array.isArray(fleet) ? fleet : [fleet]
  const bad = "MonthlyRollup: fleet must be a fleetTable(name, { of: target, … }) of this rollup's target table, or an array of them"
  if (Array.isArray(fleet) && fleet.length === 0) throw new InvalidArgumentError(`${bad}; got an empty array`)
  for (const level of levels)
    if (level === null || typeof level !== 'object' || (level as FleetTable).of?.qualified !== target.qualified)
      throw new InvalidArgumentError(bad)
  const tables = (levels as FleetTable[]).map((l) => l.qualified)
  const twice = tables.find((q, i) => tables.indexOf(q) !== i)
  if (twice) throw new InvalidArgumentError(`MonthlyRollup: the level ${twice} is declared twice`)
  return levels as FleetTable[]
}

function isSqlFragment(value: unknown): value is RawBuilder<unknown> {
  return (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toOperationNode?: unknown }).toOperationNode === 'function' &&
    typeof (value as { compile?: unknown }).compile === 'function'
  )
}
