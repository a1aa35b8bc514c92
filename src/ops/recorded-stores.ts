import { sql, type Kysely } from 'kysely'
import { readRecords } from '../db/migration/bookkeeping.js'
import type { PgVectorStoreConfig } from '../store/index.js'

/**
 * Every store this database has recorded that this role may read (each schema's
 * `pgscale_object_version`; another team's schema stays theirs), as the configuration to
 * open it with: table, dimensions, distance, vector type, quantization, partitions, full text.
 * Options `open` does not record (query sample bounds, the default `ef_search`) take their
 * defaults: give a config module when they differ.
 *
 * ### Examples
 * ```ts
 * for (const config of await recordedStores(db)) await (await PgVectorStore.open(db, { ...config, migrate: false })).optimize()
 * ```
 */
export async function recordedStores(db: Kysely<any>): Promise<PgVectorStoreConfig[]> {
  const records = await readRecords(db, ['store:'])
  if (!records.length) return []
  // The isolation is the table's (row-level security on or off), not a recorded key.
  const { rows: secured } = await sql<{ object: string }>`
    select o as object from unnest(${records.map((r) => r.object)}::text[]) o
    where (select c.relrowsecurity from pg_class c where c.oid = to_regclass(substr(o, 7)))`.execute(db)
  const rlsOn = new Set(secured.map((r) => r.object))
  return records.map(({ object, config }) => {
    const rls = rlsOn.has(object)
    const [schema, table] = object.slice('store:'.length).split('.') as [string, string]
    const c = config as {
      dimensions: number
      distance?: PgVectorStoreConfig['distance']
      textSearchConfig?: string
      fullText?: boolean
      partitions?: number
      vectorType?: PgVectorStoreConfig['vectorType']
      quantization?: NonNullable<PgVectorStoreConfig['index']>['quantization']
    }
    return {
      table: schema === 'public' ? table : `${schema}.${table}`,
      dimensions: c.dimensions,
      distance: c.distance,
      textSearchConfig: c.textSearchConfig,
      fullText: c.fullText ?? true,
      partitions: c.partitions ?? 0,
      vectorType: c.vectorType ?? 'vector',
      index: { quantization: c.quantization ?? 'none' },
      ...(rls ? { isolation: 'rls' as const } : {}),
    }
  })
}
