import { sql, type Kysely } from 'kysely'
import { deleteRecord } from '../../db/migration/bookkeeping.js'
import { objectMigrationSql } from '../../db/migration/object-migration-sql.js'
import { recordStatements } from '../../db/migration/recording-kysely.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import { storeGrants, storeObject, storeRowSecurity, storeTables } from './store-objects.js'

/** Options of a store's migration (`PgVectorStore.migration`, `PgVectorStore.migrationSql`, `pgscale migrate`). */
export interface StoreMigrationOptions {
  /** The app's runtime role: granted `USAGE` on the schema, `SELECT` on the version table and DML on every store table. */
  runtimeRole?: string
}

/**
 * The statements that create a store, as plain SQL text: the `vector` extension, then every step
 * of the store's object, in order, recorded from the same code `open` runs.
 *
 * ### Examples
 * ```ts
 * const statements = await storeDdl(config) // ['create extension if not exists vector', 'create table if not exists "rag_chunks" (…)', …]
 * ```
 */
export async function storeDdl(config: ResolvedStoreConfig): Promise<string[]> {
  const object = storeObject(config)
  const steps = await recordStatements(async (db) => {
    for (const step of object.steps) await step.up(db)
  })
  return ['create extension if not exists vector', ...steps]
}

/**
 * A store's migration as one transaction of plain SQL (what `pgscale migrate --print` writes):
 * its DDL, its version row, and the grants of `runtimeRole`.
 *
 * ### Examples
 * ```ts
 * await writeFile('V7__rag_chunks.sql', await storeMigrationSql(config, { runtimeRole: 'app' }))
 * ```
 */
export async function storeMigrationSql(config: ResolvedStoreConfig, options: StoreMigrationOptions = {}): Promise<string> {
  const object = storeObject(config)
  return objectMigrationSql({
    key: object.key,
    config: object.config,
    recordedDefaults: object.recordedDefaults,
    version: object.steps.length,
    statements: await storeDdl(config),
    after: [...storeRowSecurity(config), ...(options.runtimeRole ? storeGrants(config, options.runtimeRole) : [])],
  })
}

/**
 * Grants `runtimeRole` what it needs on the store (see {@link storeGrants}), in `db`'s transaction.
 *
 * ### Examples
 * ```ts
 * await grantStore(trx, config, 'app')
 * ```
 */
export async function grantStore(db: Kysely<any>, config: ResolvedStoreConfig, role: string): Promise<void> {
  for (const grant of storeGrants(config, role)) await sql.raw(grant).execute(db)
}

/**
 * Drops everything a store owns and its version row: a migration's `down`.
 *
 * ### Examples
 * ```ts
 * await dropStore(db, config)
 * ```
 */
export async function dropStore(db: Kysely<any>, config: ResolvedStoreConfig): Promise<void> {
  const tables = storeTables(config).filter((t) => !t.partition)
  await sql.raw(`drop table if exists ${tables.map((t) => t.name).join(', ')}`).execute(db)
  await deleteRecord(db, storeObject(config).key)
}
