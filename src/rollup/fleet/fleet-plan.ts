import { InvalidArgumentError } from '../../errors.js'
import { compileSql } from '../../sql/statement-template.js'
import { combinerOf, sketchKind, type FleetTable, type RollupParts } from '../config/index.js'

/** How one measure of the rollup table combines into the fleet level. */
export type FleetCombiner = 'sum' | 'min' | 'max' | 'hll' | 'tdigest'

/**
 * How a level is kept: `delta` — every measure a sum or count of an exact type (integers,
 * numeric): each refresh adds its new tenant rows and subtracts the old ones in the same statement
 * (no read of other tenants' buckets); `recompute` — otherwise (min/max, sketches, floating-point
 * sums): the months a refresh touched are recomputed from the rollup table after its tenant writes;
 * `tenant` — a per-tenant level, whatever its measures: the refresh statement replaces the
 * tenant's rows of its months by the rows it wrote, combined over the dropped groups; `deferred` —
 * declared so, whatever its measures: a write marks its months pending, and `refreshFleet`
 * recomputes them later as fleet-wide work.
 */
export interface FleetPlan {
  mode: 'delta' | 'recompute' | 'tenant' | 'deferred'
  measures: ReadonlyArray<{ name: string; type: string; combiner: FleetCombiner; nonNull?: string }>
}

/** Column types whose sums add and subtract exactly. */
export function isExactNumberType(type: string): boolean {
  return /^(smallint|integer|int|bigint|numeric)(\s*\(.*\))?$/i.test(type.trim())
}

/**
 * The fleet level's plan for `parts` (which declares `fleet`), checked when the rollup is declared:
 * each measure combines across tenants (sum/count, min, max, an `hll` union, a `tdigest` merge) or
 * the level is refused with an `InvalidArgumentError` naming it; a level that recomputes is refused
 * on a rollup table under row-level security (a tenant's refresh cannot see the other tenants'
 * buckets) unless it is deferred (recomputed later as fleet-wide work).
 *
 * ### Examples
 * ```ts
 * fleetPlan(parts) // { mode: 'delta', measures: [{ name: 'total', combiner: 'sum', nonNull: 'pgscale_nn_total', … }] }
 * ```
 */
export function fleetPlan(parts: RollupParts, fleet: FleetTable): FleetPlan {
  const measures = parts.target.measures.map((m) => {
    const kind = sketchKind(m.type)
    const expression = parts.measures.find((x) => x.name === m.name)!.expression
    const combiner: FleetCombiner | undefined = kind ?? combinerOf(compileSql(expression).sql)
    if (!combiner)
      throw new InvalidArgumentError(
        `MonthlyRollup: the fleet level ${fleet.name} cannot combine measure ${m.name} across ${fleet.perTenant ? 'groups' : 'tenants'}: only one plain sum(...), ` +
          `count(...), min(...) or max(...), an approxCountDistinct (hll) or an approxPercentiles (tdigest) combines; ` +
          `store its parts as measures, or declare no fleet level`,
      )
    const nonNull = fleet.nonNullColumns[m.name]
    return { name: m.name, type: m.type, combiner, ...(nonNull ? { nonNull } : {}) }
  })
  if (fleet.deferred) return { mode: 'deferred', measures }
  if (fleet.perTenant) return { mode: 'tenant', measures }
  const delta = measures.every((m) => m.combiner === 'sum' && isExactNumberType(m.type) && m.nonNull)
  if (!delta && parts.target.isolation === 'rls')
    throw new InvalidArgumentError(
      `MonthlyRollup: the fleet level ${fleet.name} would recompute months from every tenant's buckets (its measures are not all ` +
        `exact sums and counts), which a tenant's refresh under row-level security cannot see: keep only sums and counts, or no fleet level`,
    )
  return { mode: delta ? 'delta' : 'recompute', measures }
}
