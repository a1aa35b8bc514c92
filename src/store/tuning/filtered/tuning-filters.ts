import { sql } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { MetadataFilter } from '../../../filter/filter-tree.js'
import { isoInstantFunction } from '../../../filter/iso-instant.js'
import { fieldExpression, type MetadataField } from '../../../filter/metadata-field.js'
import type { ResolvedStoreConfig } from '../../config/index.js'

/** Selectivities the synthetic filters of a declared field aim at (the share of the tenant's rows they match). */
export const SYNTHETIC_SELECTIVITIES = [0.01, 0.1, 0.33, 0.5] as const

/** Declared fields tuning builds synthetic filters over, at most. */
const MAX_FIELDS = 3

/** Distinct values of a string or boolean field looked at per tenant. */
const MAX_VALUES = 200

/**
 * Synthetic filters over a tenant's declared metadata fields, at a few selectivities
 * ({@link SYNTHETIC_SELECTIVITIES}), built from what the tenant's rows hold there: for a number or
 * timestamp field a range up to the quantile (`{ price: { $lt: q } }`), for a string or boolean
 * field an `$in` of its values, least common first, until they match the share. Up to three fields;
 * a selectivity a field cannot come near (one value already holds twice the share) is left out.
 * Every statement filters `tenant_id = $1`.
 *
 * ### Examples
 * ```ts
 * const filters = await syntheticFilters(db, config, 'acme', fields, 30_000) // [{ owner: { $in: [...] } }, { price: { $lt: 12.5 } }, …]
 * ```
 */
export async function syntheticFilters(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  fields: readonly MetadataField[],
  rows: number,
): Promise<MetadataFilter[]> {
  const out: MetadataFilter[] = []
  // Ranges reach any selectivity; a string field's values may not: number and timestamp fields first.
  const ranked = [...fields].sort((a, b) => rank(a) - rank(b))
  for (const field of ranked.slice(0, MAX_FIELDS)) {
    const expr = fieldExpression('metadata', field.path, field.type, isoInstantFunction(config.schema))
    const key = field.path.join('.')
    // Timestamps as seconds since the epoch: one numeric quantile, back to a `Date` operand.
    if (field.type === 'timestamp') out.push(...(await rangeFilters(db, config, tenantId, key, `extract(epoch from ${expr})`, 'timestamp')))
    else if (field.type === 'number') out.push(...(await rangeFilters(db, config, tenantId, key, expr, 'number')))
    else out.push(...(await valueFilters(db, config, tenantId, key, expr, rows)))
  }
  return out
}

/** `{ key: { $lt: q } }` at each selectivity's quantile of the field's values (timestamps as `Date`s). */
async function rangeFilters(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  key: string,
  expr: string,
  type: 'number' | 'timestamp',
): Promise<MetadataFilter[]> {
  const { rows } = await sql<{ q: unknown[] | null }>`
    select percentile_disc(${[...SYNTHETIC_SELECTIVITIES]}::float8[]) within group (order by v) as q
    from (select ${sql.raw(expr)} as v from ${sql.raw(config.qualified)} where tenant_id = ${tenantId}) s where v is not null`.execute(db)
  const quantiles = rows[0]?.q ?? []
  const bounds = [...new Set(quantiles.filter((q) => q !== null).map((q) => String(q)))]
  return bounds.map((q) => ({ [key]: { $lt: type === 'timestamp' ? new Date(Number(q) * 1000) : Number(q) } }))
}

/** `{ key: { $in: values } }` per selectivity: the least common values added until they match its share of `rows`. */
async function valueFilters(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  key: string,
  expr: string,
  rows: number,
): Promise<MetadataFilter[]> {
  const { rows: counts } = await sql<{ v: string | boolean; n: number }>`
    select v, count(*)::int as n from (select ${sql.raw(expr)} as v from ${sql.raw(config.qualified)} where tenant_id = ${tenantId}) s
    where v is not null group by v order by count(*), v limit ${MAX_VALUES}`.execute(db)
  const out: MetadataFilter[] = []
  const seen = new Set<string>()
  for (const share of SYNTHETIC_SELECTIVITIES) {
    const want = share * rows
    const values: Array<string | boolean> = []
    let matched = 0
    for (const { v, n } of counts) {
      if (matched >= want) break
      if (matched + n > 2 * want) continue
      values.push(v)
      matched += n
    }
    const id = JSON.stringify(values)
    if (matched < want / 2 || seen.has(id)) continue
    seen.add(id)
    out.push({ [key]: values.length === 1 ? values[0] : { $in: values } })
  }
  return out
}

function rank(field: MetadataField): number {
  return field.type === 'number' || field.type === 'timestamp' ? 0 : 1
}
