import { sql, type Kysely } from 'kysely'
import { dirtyKeyNames, type RollupParts } from '../config/index.js'
import { claimDirtyKeys, type DirtyKey } from './dirty-log.js'

/**
 * {@link claimDirtyKeys} for a log Citus distributes by tenant, where a claim must name its tenant
 * (Citus runs `FOR UPDATE` only in a statement routed to one shard): the tenants with waiting keys
 * (up to `limit`, in tenant order), then one routed claim per tenant of up to what is left of
 * `limit`, in the caller's transaction. Keys come back ordered by tenant and month, as
 * `claimDirtyKeys` returns them; rows another drainer holds are skipped.
 *
 * ### Examples
 * ```ts
 * const keys = await claimDistributedKeys(trx, parts, { limit: 1000 })
 * ```
 */
export async function claimDistributedKeys(
  trx: Kysely<any>,
  parts: RollupParts,
  options: { limit: number; tenantId?: string | number },
): Promise<DirtyKey[]> {
  if (options.tenantId !== undefined) return claimDirtyKeys(trx, parts, options)
  const log = sql.raw(dirtyKeyNames(parts).log)
  const { rows: tenants } = await sql<{ tenant_id: string | number }>`
    select distinct tenant_id from ${log} order by tenant_id limit ${options.limit}`.execute(trx)
  const keys: DirtyKey[] = []
  for (const { tenant_id: tenantId } of tenants) {
    if (keys.length >= options.limit) break
    keys.push(...(await claimDirtyKeys(trx, parts, { limit: options.limit - keys.length, tenantId })))
  }
  return keys
}
