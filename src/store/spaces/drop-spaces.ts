import { sql, type Kysely } from 'kysely'
import { resolveStoreConfig, type PgVectorStoreConfig, type ResolvedStoreConfig } from '../config/index.js'
import { dropStore } from '../schema/index.js'
import { hasSpaceCatalog, listSpaces } from './space-catalog.js'
import { DEFAULT_SPACE, spaceStoreConfig, spaceTables } from './space-config.js'

/**
 * Drops a store's embedding spaces, what the store's migration `down` runs before it drops the
 * store itself: each added space's table (with its indexes, tuning and version record), then the
 * bookkeeping — the catalog, the tenants' spaces, the change log — and the guard function with the
 * triggers that call it. A store that never added a space has none of these: nothing is sent
 * beyond one catalog lookup. Run it in the caller's transaction (a `Migrator` gives one) so a
 * failure leaves everything in place.
 *
 * ### Examples
 * ```ts
 * await dropSpaces(trx, { table: 'rag_chunks', dimensions: 384 }, resolveStoreConfig({ table: 'rag_chunks', dimensions: 384 }))
 * ```
 */
export async function dropSpaces(db: Kysely<any>, given: PgVectorStoreConfig, base: ResolvedStoreConfig): Promise<void> {
  if (!(await hasSpaceCatalog(db, base))) return
  for (const space of await listSpaces(db, base)) {
    if (space.name !== DEFAULT_SPACE) await dropStore(db, resolveStoreConfig(spaceStoreConfig(given, base, space)))
  }
  const t = spaceTables(base)
  await sql.raw(`drop table if exists ${t.changes}, ${t.tenants}, ${t.spaces}`).execute(db)
  await sql.raw(`drop function if exists ${t.guard}() cascade`).execute(db)
}
