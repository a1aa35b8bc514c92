import { sql, type Kysely } from 'kysely'
import { OBJECT_VERSION_TABLE } from '../db/migration/object-migrations.js'
import type { PgVectorStoreConfig } from '../store/index.js'

/**
 * Every store this database has recorded (`pgscale_object_version`), as the configuration to
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
  const { rows: table } = await sql<{ present: boolean }>`select to_regclass(${OBJECT_VERSION_TABLE}) is not null as present`.execute(db)
  if (!table[0]?.present) return []
  // The isolation is the table's (row-level security on or off), not a recorded key.
  const { rows } = await sql<{ object: string; config: Record<string, unknown>; rls: boolean | null }>`
    select object, config, (select c.relrowsecurity from pg_class c where c.oid = to_regclass(substr(object, 7))) as rls
    from ${sql.table(OBJECT_VERSION_TABLE)} where object like 'store:%' order by object`.execute(db)
  return rows.map(({ object, config, rls }) => {
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
