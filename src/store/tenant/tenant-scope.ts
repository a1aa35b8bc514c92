import { CompiledQuery } from 'kysely'
import type { Database } from '../../db/database.js'
import { compileFilter, type CompiledFilter } from '../../filter/filter-sql.js'
import type { FilterNode } from '../../filter/filter-tree.js'
import { isoInstantFunction } from '../../filter/iso-instant.js'
import type { FilteredStatements } from './search/filtered-sql.js'
import type { DeclaredFields } from '../schema/index.js'
import type { FilterVerdicts } from './search/filter-verdicts.js'
import type { ResolvedStoreConfig } from '../config/index.js'

/**
 * What the filter-taking modules of a tenant handle need: the database, the store's configuration
 * and statements, the declared metadata fields, and the tenant every statement is bound to (`$1`).
 */
export interface TenantScope {
  readonly db: Database
  readonly config: ResolvedStoreConfig
  readonly tenantId: string
  readonly statements: FilteredStatements
  readonly fields: DeclaredFields
  /** What `auto` learned about filters, shared by the store's tenant handles. */
  readonly verdicts: FilterVerdicts
}

/**
 * Compiles a filter for a statement whose filter placeholders start at `first`, using the
 * store's declared fields.
 *
 * ### Examples
 * ```ts
 * const f = await compileForScope(scope, node, 4)
 * await runScoped(scope, scope.statements.exact(f.sql), [vector, k, ...f.params])
 * ```
 */
export async function compileForScope(scope: TenantScope, node: FilterNode, first: number): Promise<CompiledFilter> {
  return compileFilter(node, { first, fields: await scope.fields.get(scope.db), instantFunction: isoInstantFunction(scope.config.schema) })
}

/** Runs a tenant statement: the tenant is always `$1`, `params` follow it. */
export async function runScoped<R>(
  scope: Pick<TenantScope, 'db' | 'tenantId'>,
  text: string,
  params: readonly unknown[],
  executor: Pick<Database, 'executeQuery'> = scope.db,
): Promise<{ rows: R[]; numAffectedRows?: bigint }> {
  return executor.executeQuery<R>(CompiledQuery.raw(text, [scope.tenantId, ...params]))
}
