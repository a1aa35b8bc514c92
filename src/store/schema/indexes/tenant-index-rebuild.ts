import { CompiledQuery, sql, type Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import { withLease } from '../../../db/lease-lock.js'
import { assertMayAlter } from '../../../db/security/privileges.js'
import { quoteQualified } from '../../../sql/quote.js'
import { tenantIndexName, tenantRebuildIndexName, type ResolvedStoreConfig } from '../../config/index.js'
import { hnswIndexDdl, tenantPartition } from './hnsw-ddl.js'
import { buildIndex, buildParameters, dropIndexInTurn, indexState, type IndexBuildOptions, type IndexBuildResult } from './index-build.js'

/**
 * Rebuilds a tenant's own HNSW index with other parameters, and the tenant is never left without
 * one: the new graph is built beside the old under a replacement name (`CREATE INDEX CONCURRENTLY`
 * with `concurrently`, so writes go on), then swapped in — the old dropped and the new renamed to
 * the tenant's index name, in one transaction (with `concurrently`: `DROP INDEX CONCURRENTLY`, then
 * the rename, under the table's maintenance lock). Two rebuilds of one tenant take turns (a lease
 * on its index). A rebuild that failed before the swap leaves the old index serving; one
 * interrupted between the drop and the rename is finished by the next rebuild (the replacement is
 * renamed), and a replacement left beside a live index is dropped (when the rebuild fails, and
 * again by the next one). Resolves to the build of
 * the new index, under the tenant's index name.
 *
 * ### Examples
 * ```ts
 * const { seconds } = await rebuildTenantIndex(db, config, 'acme', { m: 24, efConstruction: 256 })
 * ```
 */
export async function rebuildTenantIndex(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  options: IndexBuildOptions,
): Promise<IndexBuildResult> {
  await assertMayAlter(db, config.qualified, 'optimize', 'rebuilds a tenant HNSW index')
  const { m, efConstruction, settings } = buildParameters(config, options)
  const name = tenantIndexName(config.table, tenantId)
  const next = tenantRebuildIndexName(config.table, tenantId)
  const concurrently = options.concurrently === true
  const partition = await tenantPartition(db, config, tenantId)
  // Maintenance of the relation the index is on takes turns, as tenant index builds do (a partition's, on a partitioned store).
  const at: Place = { config, table: partition ?? config.qualified, concurrently }
  return withLease(db, `pgscale.rebuild:${quoteQualified(config.schema, name)}`, async () => {
    await settleInterruptedRebuild(db, at, name, next)
    const ddl = await hnswIndexDdl(db, config, { name: next, m, efConstruction, concurrently, tenantId, on: partition })
    try {
      const built = await buildIndex(db, { schema: config.schema, name: next, qualifiedTable: at.table, ddl }, settings, options)
      await swapIndex(db, at, name, next)
      return { ...built, index: name }
    } catch (error) {
      await abandonReplacement(db, at, name, next)
      throw error
    }
  })
}

/**
 * After a rebuild failed: while the old index still serves, the replacement is dropped (best
 * effort; one left is dropped by the next rebuild); when the old one is gone already (a concurrent
 * swap failed between its drop and the rename), the replacement is what serves the tenant, and stays.
 */
async function abandonReplacement(db: Database, at: Place, name: string, next: string): Promise<void> {
  try {
    if (await indexState(db, at.config.schema, name)) await drop(db, at, next)
  } catch {
    // The rebuild's own error is the one to report.
  }
}

/**
 * What an earlier rebuild of this index left: a replacement with no index of the tenant's name (the
 * swap interrupted after the drop) is renamed into place; a replacement beside the live index (a
 * build or swap that failed before the drop) is dropped.
 */
async function settleInterruptedRebuild(db: Database, at: Place, name: string, next: string): Promise<void> {
  const { schema } = at.config
  const [live, left] = [await indexState(db, schema, name), await indexState(db, schema, next)]
  if (!left) return
  if (!live && left.valid) return rename(db, at, next, name)
  await drop(db, at, next)
}

/** The new index takes the old one's place: plain, in one transaction; concurrently, a concurrent drop then the rename. */
async function swapIndex(db: Database, at: Place, name: string, next: string): Promise<void> {
  if (!at.concurrently) {
    await db.withTransactionConnection(async (conn) => {
      await run(conn, `drop index if exists ${q(at, name)}`)
      await run(conn, `alter index ${q(at, next)} rename to "${name}"`)
    })
    return
  }
  await drop(db, at, name)
  await rename(db, at, next, name)
}

/** Where a rebuild happens: the store, the relation the index is on, and whether it builds concurrently. */
interface Place {
  config: ResolvedStoreConfig
  table: string
  concurrently: boolean
}

async function rename(db: Database, at: Place, from: string, to: string): Promise<void> {
  await run(db, `alter index ${q(at, from)} rename to "${to}"`)
}

/** Drops an index, plainly or concurrently, under the relation's maintenance lock (as builds of it take turns). */
async function drop(db: Database, at: Place, name: string): Promise<void> {
  await dropIndexInTurn(db, { schema: at.config.schema, name, table: at.table }, at.concurrently)
}

async function run(conn: Pick<Kysely<any>, 'executeQuery'>, text: string): Promise<void> {
  await conn.executeQuery(CompiledQuery.raw(text))
}

/** An index of the store's schema, quoted (names come from validated identifiers and hashes). */
function q(at: Place, name: string): string {
  return quoteQualified(at.config.schema, name)
}

/**
 * The graph parameters a tenant's own index was built with (`m`, `ef_construction` from its storage
 * options; pgvector's defaults 16 / 64 where not set), or undefined when it has none.
 *
 * ### Examples
 * ```ts
 * await tenantIndexGraph(db, config, 'acme') // { m: 16, efConstruction: 64 }
 * ```
 */
export async function tenantIndexGraph(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
): Promise<{ m: number; efConstruction: number } | undefined> {
  const index = quoteQualified(config.schema, tenantIndexName(config.table, tenantId))
  const { rows } = await sql<{ options: string[] | null }>`
    select c.reloptions as options from pg_class c where c.oid = to_regclass(${index})`.execute(db)
  if (!rows[0]) return undefined
  const option = (key: string, fallback: number) => {
    const found = (rows[0]!.options ?? []).find((o) => o.startsWith(`${key}=`))
    return found ? Number(found.slice(key.length + 1)) : fallback
  }
  return { m: option('m', 16), efConstruction: option('ef_construction', 64) }
}
