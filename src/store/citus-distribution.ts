import { sql } from 'kysely'
import type { Database } from '../db/database.js'
import { InvalidArgumentError } from '../errors.js'
import { withTableMaintenanceLock } from './index-build.js'
import { tuningTable } from './index-names.js'
import type { ResolvedStoreConfig } from './store-config.js'

/**
 * Distributes a store's table by `tenant_id` on a Citus coordinator (`create_distributed_table`;
 * the tuning table colocated with it), unless it already is. Openers of one store take turns on
 * the table's maintenance lock, so two at once distribute it once. Without Citus: a typed error.
 *
 * ### Examples
 * ```ts
 * await distributeStore(db, config) // config.distributed = { shardCount: 32 }
 * ```
 */
export async function distributeStore(db: Database, config: ResolvedStoreConfig): Promise<void> {
  if (config.distributed === false) return
  if (!(await db.hasCitus())) {
    throw new InvalidArgumentError(
      `distributed: ${config.qualified} can only be distributed on a Citus coordinator (no citus extension here)`,
    )
  }
  const shards = config.distributed.shardCount
  await withTableMaintenanceLock(db, config.qualified, async (conn) => {
    for (const [table, colocate] of [
      [config.qualified, undefined],
      [tuningTable(config), config.qualified],
    ] as const) {
      const { rows } = await sql<{ done: boolean }>`
        select exists (select 1 from pg_dist_partition where logicalrelid = to_regclass(${table})) as done`.execute(conn)
      if (rows[0]?.done) continue
      if (colocate) await sql`select create_distributed_table(${table}, 'tenant_id', colocate_with => ${colocate})`.execute(conn)
      else if (shards !== undefined)
        await sql`select create_distributed_table(${table}, 'tenant_id', shard_count => ${shards})`.execute(conn)
      else await sql`select create_distributed_table(${table}, 'tenant_id')`.execute(conn)
    }
  })
}

/**
 * Whether the store's table is distributed (Citus), and if so its sizes summed over every shard:
 * main fork, with TOAST, with indexes (`citus_relation_size`, `citus_table_size`,
 * `citus_total_relation_size`).
 *
 * ### Examples
 * ```ts
 * const sizes = await distributedSizes(db, config) // undefined on plain PostgreSQL
 * ```
 */
export async function distributedSizes(
  db: Database,
  config: ResolvedStoreConfig,
): Promise<{ heap: number; toast: number; indexes: number; total: number } | undefined> {
  if (!(await db.hasCitus())) return undefined
  const { rows } = await sql<{ heap: string; table: string; total: string } | { heap: null }>`
    select citus_relation_size(p.logicalrelid)::text as heap, citus_table_size(p.logicalrelid)::text as table,
      citus_total_relation_size(p.logicalrelid)::text as total
    from pg_dist_partition p where p.logicalrelid = to_regclass(${config.qualified})`.execute(db)
  const r = rows[0] as { heap: string; table: string; total: string } | undefined
  if (!r) return undefined
  const heap = Number(r.heap)
  const table = Number(r.table)
  const total = Number(r.total)
  return { heap, toast: table - heap, indexes: total - table, total }
}
