import { sql, type RawBuilder } from 'kysely'
import { InvalidArgumentError } from '../../errors.js'
import { compileSql } from '../../sql/statement-template.js'
import { combinerOf, sketchKind, type PercentileRequest } from '../config/index.js'

/**
 * The select-list entry of one measure in `read`: a plain column as stored, or combined (`combined`:
 * groups or months folded) by `sum`/`min`/`max`; a `'hll'` sketch as its estimate (after a union
 * when combined); a `'tdigest'` as the requested percentiles (after merging when combined), or
 * nothing when none were asked for. Percentiles are bound values.
 */
export function measureOutput(
  m: { name: string; type: string; expression: RawBuilder<unknown> },
  combined: boolean,
  percentiles: PercentileRequest | undefined,
): RawBuilder<unknown> | undefined {
  const col = sql.raw(`"${m.name}"`)
  const kind = sketchKind(m.type)
  if (kind === 'hll')
    return combined
      ? sql`round(hll_cardinality(hll_union_agg(${col})))::bigint as ${col}`
      : sql`round(hll_cardinality(${col}))::bigint as ${col}`
  if (kind === 'tdigest') {
    const wanted = percentiles?.[m.name]
    if (!wanted) return undefined
    const p = sql`${[...wanted]}::double precision[]`
    // tdigest_percentile(tdigest, …) is an aggregate that merges: over the folded rows, or over one row.
    return combined
      ? sql`tdigest_percentile(${col}, ${p}) as ${col}`
      : sql`(select tdigest_percentile(v.d, ${p}) from (select ${col}) as v(d)) as ${col}`
  }
  if (!combined) return col
  const combine = combinerOf(compileSql(m.expression).sql)
  if (!combine)
    throw new InvalidArgumentError(
      `read: measure ${m.name} is not one plain sum(...), count(...), min(...) or max(...), so combining it over groups or months ` +
        `would be wrong (count(distinct ...) counts twice, ratios average averages); read all groups, store its parts as measures, or use approxCountDistinct`,
    )
  return sql.raw(`${combine}("${m.name}")::${m.type} as "${m.name}"`)
}

/** Checks `read`'s `percentiles`: tdigest measures of the rollup, each a non-empty list of numbers in [0, 1]. */
export function assertPercentiles(value: unknown, measures: ReadonlyArray<{ name: string; type: string }>): PercentileRequest | undefined {
  if (value === undefined) return undefined
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InvalidArgumentError('read: percentiles must be { measure: [0.5, 0.95] }')
  for (const [name, list] of Object.entries(value)) {
    const m = measures.find((x) => x.name === name)
    if (!m || m.type !== 'tdigest') throw new InvalidArgumentError(`read: percentiles of ${name}: not a tdigest measure of this rollup`)
    if (!Array.isArray(list) || list.length === 0 || list.length > 100 || !list.every((p) => typeof p === 'number' && p >= 0 && p <= 1))
      throw new InvalidArgumentError(`read: percentiles of ${name} must be 1-100 numbers from 0 to 1`)
  }
  return value as PercentileRequest
}
