import { sql, type Kysely, type RawBuilder } from 'kysely'
import { DatabaseError, ExtensionMissingError, InvalidArgumentError } from '../errors.js'
import { SQLSTATE } from '../sql/sqlstate.js'
import { compileSql } from '../sql/statement-template.js'
import { combinerOf } from './measure-combiner.js'

/** The measure column types that hold a sketch instead of a number: they combine by union. */
export type SketchKind = 'hll' | 'tdigest'

const PACKAGES: Record<SketchKind, string> = { hll: 'hll', tdigest: 'tdigest' }

/** The sketch a measure column type holds, or undefined for a plain number. */
export function sketchKind(type: string): SketchKind | undefined {
  return type === 'hll' || type === 'tdigest' ? type : undefined
}

/**
 * A distinct count that combines across groups and months: a HyperLogLog sketch of `expression`
 * (the `hll` extension's `hll_add_agg(hll_hash_any(…))`, log2m 11: a relative standard error of
 * about 2.3%). Store it in a `'hll'` measure column; `read` returns its estimate, and unions the
 * sketches (never adds the counts) when it folds groups (`groupBy`) or months (`combineMonths`).
 *
 * ### Examples
 * ```ts
 * const monthly = rollupTable('visits_monthly', { groupBy: { page: 'text' }, measures: { users: 'hll' } })
 * new MonthlyRollup({ …, target: monthly, measures: { users: approxCountDistinct(sql`user_id`) } })
 * ```
 */
export function approxCountDistinct(expression: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`hll_add_agg(hll_hash_any(${expression}))`
}

/**
 * Percentiles that combine across groups and months: a t-digest of `expression` (the `tdigest`
 * extension, 100 centroids). Store it in a `'tdigest'` measure column and ask `read` for the
 * percentiles: `read({ …, percentiles: { latency: [0.5, 0.95] } })` → `latency: [p50, p95]`.
 *
 * ### Examples
 * ```ts
 * new MonthlyRollup({ …, measures: { latency: approxPercentiles(sql`duration_ms`) } })
 * ```
 */
export function approxPercentiles(expression: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`tdigest((${expression})::double precision, 100)`
}

/**
 * Creates the extensions the sketch columns need (`create extension if not exists`); when the
 * server does not have one, an {@link ExtensionMissingError} that names Debian's package. Two
 * callers at once both succeed (the loser's unique violation means the other created it).
 *
 * ### Examples
 * ```ts
 * await ensureSketchExtensions(db, ['hll'])
 * ```
 */
export async function ensureSketchExtensions(db: Kysely<any>, kinds: readonly SketchKind[]): Promise<void> {
  for (const kind of new Set(kinds)) {
    const { rows } = await sql<{ available: boolean; installed: boolean; major: string }>`
      select exists (select 1 from pg_available_extensions where name = ${kind}) as available,
        exists (select 1 from pg_extension where extname = ${kind}) as installed,
        current_setting('server_version_num')::int / 10000 as major`.execute(db)
    const state = rows[0]!
    if (state.installed) continue
    if (!state.available)
      throw new ExtensionMissingError(
        `the ${kind} extension is not on this server (its ${kind} measures need it): install Debian's postgresql-${state.major}-${PACKAGES[kind]} (npm run db:install does), or build it for this server`,
      )
    try {
      await sql.raw(`create extension if not exists ${kind}`).execute(db)
    } catch (err) {
      // Two processes creating it at once: the loser sees a unique violation; the extension exists.
      if (err instanceof DatabaseError && (err.sqlState === SQLSTATE.uniqueViolation || err.sqlState === SQLSTATE.duplicateObject)) continue
      throw new ExtensionMissingError(
        `could not create the ${kind} extension (${(err as Error).message}): run CREATE EXTENSION ${kind} as its owner`,
        {
          cause: err,
        },
      )
    }
  }
}

/** Which percentiles `read` returns for each `'tdigest'` measure: `{ latency: [0.5, 0.95] }`. */
export type PercentileRequest = Readonly<Record<string, readonly number[]>>

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
