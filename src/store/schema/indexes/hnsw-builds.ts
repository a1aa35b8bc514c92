import type { Database } from '../../../db/database.js'
import { assertMayAlter } from '../../../db/security/privileges.js'
import { storeIndexNames, tenantIndexName, type ResolvedStoreConfig } from '../../config/index.js'
import { hnswIndexDdl, tenantPartition } from './hnsw-ddl.js'
import { buildIndex, buildParameters, type IndexBuildOptions, type IndexBuildResult } from './index-build.js'

/**
 * Builds the store's shared HNSW index over all tenants (`store.createIndex`); a role that does
 * not own the table gets a `PrivilegeError` before anything is built.
 *
 * ### Examples
 * ```ts
 * await buildSharedIndex(db, config, { m: 16, efConstruction: 64 })
 * ```
 */
export async function buildSharedIndex(db: Database, config: ResolvedStoreConfig, options: IndexBuildOptions): Promise<IndexBuildResult> {
  await assertMayAlter(db, config.qualified, 'createIndex', 'builds an HNSW index')
  const { m, efConstruction, settings } = buildParameters(config, options)
  const name = storeIndexNames(config.table).sharedHnsw
  const ddl = await hnswIndexDdl(db, config, { name, m, efConstruction, concurrently: options.concurrently === true })
  return buildIndex(db, { schema: config.schema, name, qualifiedTable: config.qualified, ddl }, settings, options)
}

/**
 * Builds one tenant's partial HNSW index (`store.createTenantIndex`), on its partition when the
 * store is partitioned; a role that does not own the table gets a `PrivilegeError` first.
 *
 * ### Examples
 * ```ts
 * await buildTenantIndex(db, config, 'big-tenant', {})
 * ```
 */
export async function buildTenantIndex(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  options: IndexBuildOptions,
): Promise<IndexBuildResult> {
  await assertMayAlter(db, config.qualified, 'createTenantIndex', 'builds an HNSW index')
  const { m, efConstruction, settings } = buildParameters(config, options)
  const name = tenantIndexName(config.table, tenantId)
  const partition = await tenantPartition(db, config, tenantId)
  const ddl = await hnswIndexDdl(db, config, {
    name,
    m,
    efConstruction,
    concurrently: options.concurrently === true,
    tenantId,
    on: partition,
  })
  return buildIndex(db, { schema: config.schema, name, qualifiedTable: partition ?? config.qualified, ddl }, settings, options)
}
