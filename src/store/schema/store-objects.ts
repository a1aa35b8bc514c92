import type { ObjectMigrationStep } from '../../db/migration/object-migrations.js'
import { objectVersionTable } from '../../db/migration/bookkeeping.js'
import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { rowSecurityDdl, rowSecurityOn } from '../../db/security/row-security.js'
import { DatabaseError, MigrationRequiredError } from '../../errors.js'
import { SQLSTATE } from '../../sql/sqlstate.js'
import { assertIdentifier } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import {
  partitionName,
  querySamplePartition,
  querySampleTable,
  recallMonitorTable,
  type ResolvedStoreConfig,
  tuningTable,
} from '../config/index.js'
import { chunksTableSteps } from './chunks-table.js'

/** A store as a versioned object: its key in its schema's `pgscale_object_version`, recorded config and steps. */
export interface StoreObject {
  key: string
  config: Record<string, unknown>
  steps: ObjectMigrationStep[]
  relation: string
  recordedDefaults: Record<string, unknown>
}

/**
 * The store's versioned object: what `open`, the store's migration and `pgscale migrate` all
 * create and check, from one place.
 *
 * ### Examples
 * ```ts
 * storeObject(resolveStoreConfig({ dimensions: 384 })).key // 'store:public.rag_chunks'
 * ```
 */
export function storeObject(resolved: ResolvedStoreConfig): StoreObject {
  return {
    key: `store:${resolved.schema ?? 'public'}.${resolved.table}`,
    config: {
      dimensions: resolved.dimensions,
      distance: resolved.distance,
      textSearchConfig: resolved.textSearchConfig,
      fullText: resolved.fullText,
      partitions: resolved.partitions,
      vectorType: resolved.vectorType,
      quantization: resolved.quantization,
    },
    steps: chunksTableSteps(resolved),
    relation: resolved.qualified,
    // Stores created before a key was recorded had its old default.
    recordedDefaults: { fullText: true, partitions: 0, vectorType: 'vector', quantization: 'none' },
  }
}

/**
 * Every table a store owns, quoted: the chunks and their partitions, the tuning table, the query
 * sample and its partitions, the recall monitor. `tenantData` marks the tables of tenants' rows
 * (row-level security applies to them).
 *
 * ### Examples
 * ```ts
 * storeTables(config).map((t) => t.name) // ['"rag_chunks"', '"rag_chunks_tenant_tuning"', …]
 * ```
 */
export function storeTables(config: ResolvedStoreConfig): Array<{ name: string; partition: boolean }> {
  const partitions = (of: (r: number) => string) =>
    Array.from({ length: config.partitions }, (_, r) => ({ name: quoteQualified(config.schema, of(r)), partition: true }))
  return [
    { name: config.qualified, partition: false },
    ...partitions((r) => partitionName(config.table, r)),
    { name: tuningTable(config), partition: false },
    { name: querySampleTable(config), partition: false },
    ...partitions((r) => querySamplePartition(config.table, r)),
    { name: recallMonitorTable(config), partition: false },
  ]
}

/**
 * What the app's runtime role needs on a store, and no more: `USAGE` on its schema, `SELECT`
 * on that schema's `pgscale_object_version` (how `open` checks the version without DDL; another
 * schema's bookkeeping stays out of reach), and `SELECT, INSERT, UPDATE, DELETE` on every table
 * the store owns.
 *
 * ### Examples
 * ```ts
 * storeGrants(config, 'app') // ['grant usage on schema "public" to "app"', …]
 * ```
 */
export function storeGrants(config: ResolvedStoreConfig, role: string): string[] {
  const grantee = `"${assertIdentifier(role, 'runtime role')}"`
  return [
    `grant usage on schema "${config.schema ?? 'public'}" to ${grantee}`,
    `grant select on ${objectVersionTable(config.schema ?? 'public')} to ${grantee}`,
    ...storeTables(config).map((t) => `grant select, insert, update, delete on ${t.name} to ${grantee}`),
  ]
}

/**
 * Row-level security on every table of the store (`isolation: 'rls'`): each table and partition
 * gets pgscale's tenant policy (src/db/security/row-security.ts). Empty for a store without it.
 *
 * ### Examples
 * ```ts
 * storeRowSecurity(resolveStoreConfig({ dimensions: 384, isolation: 'rls' })) // ['alter table "rag_chunks" enable row level security', …]
 * ```
 */
export function storeRowSecurity(config: ResolvedStoreConfig): string[] {
  if (config.isolation !== 'rls') return []
  return storeTables(config).flatMap((t) => rowSecurityDdl(t.name))
}

/**
 * A store opened without `isolation: 'rls'` on a table that has row-level security (made with
 * it): a {@link MigrationRequiredError} naming both, before anything is read — under the policy a
 * runtime role's statements, which would not set the tenant, would silently see no rows.
 */
async function refuseUnrequestedRowSecurity(db: Database, config: ResolvedStoreConfig): Promise<void> {
  const { rows } = await sql<{ rls: boolean }>`
    select c.relrowsecurity as rls from pg_class c where c.oid = to_regclass(${config.qualified})`.execute(db)
  if (!rows[0]?.rls) return
  const object = storeObject(config).key
  throw new MigrationRequiredError(
    object,
    `open it with { isolation: 'rls' } (or the owner ends the isolation: alter table ${config.qualified} disable row level security)`,
    `${object} has row-level security (isolation 'rls' in the database) and this store opens with isolation 'none': ` +
      `its statements would set no tenant and a runtime role would see no rows`,
  )
}

/**
 * Makes sure a store with `isolation: 'rls'` has its policies: read from the catalog first (a
 * runtime role opens a protected store without DDL); missing ones are created when `migrate`
 * allows and the role may, else a `MigrationRequiredError` before anything changes. A store
 * without it on a table that has row-level security is a `MigrationRequiredError` too (either
 * direction: the isolation in the database and the one asked for must agree).
 *
 * ### Examples
 * ```ts
 * await ensureStoreRowSecurity(db, config)
 * ```
 */
export async function ensureStoreRowSecurity(db: Database, config: ResolvedStoreConfig): Promise<void> {
  if (config.isolation !== 'rls') return refuseUnrequestedRowSecurity(db, config)
  if (
    await rowSecurityOn(
      db,
      storeTables(config).map((t) => t.name),
    )
  )
    return
  const object = storeObject(config).key
  const command = '`npx pgscale migrate` with this store in its config, or PgVectorStore.migration(config) in your migrations'
  if (!config.migrate)
    throw new MigrationRequiredError(object, command, `${object} has no row-level security yet and opens with migrate: false`)
  try {
    await db.transaction(async (trx) => {
      for (const statement of storeRowSecurity(config)) await sql.raw(statement).execute(trx)
    })
  } catch (err) {
    if (err instanceof DatabaseError && err.sqlState === SQLSTATE.insufficientPrivilege)
      throw new MigrationRequiredError(object, command, `${object} needs its row-level security policies, which this role may not create`, {
        cause: err,
      })
    throw err
  }
}
