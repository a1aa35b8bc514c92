import { sql, type Kysely } from 'kysely'
import { hasCitusShardNodes, type Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import { withTableMaintenanceLock } from './indexes/index-build.js'
import { querySampleTable, recallMonitorTable, type ResolvedStoreConfig, tuningTable } from '../config/index.js'
import { shardIndexSizes } from './indexes/shard-index-sizes.js'

/**
 * Distributes a store's table by `tenant_id` on a Citus coordinator (`create_distributed_table`;
 * the tuning, query sample and recall monitor tables colocated with it), unless it already is. Openers of one store take turns on
 * the table's maintenance lock, so two at once distribute it once. `'auto'`: only where Citus has a
 * node for shards and only a table without rows; explicit without Citus: a typed error.
 *
 * ### Examples
 * ```ts
 * await distributeStore(db, config) // config.distributed = { shardCount: 32 }
 * ```
 */
export async function distributeStore(db: Database, config: ResolvedStoreConfig): Promise<void> {
  if (config.distributed === false) return
  const auto = config.distributed === 'auto'
  if (!(await db.hasCitus())) {
    if (auto) return
    throw new InvalidArgumentError(
      `distributed: ${config.qualified} can only be distributed on a Citus coordinator (no citus extension here)`,
    )
  }
  if (auto && !(await hasCitusShardNodes(db))) return
  // The chunks first; the tuning, query sample and recall monitor tables colocated with them.
  const tables = [config.qualified, tuningTable(config), querySampleTable(config), recallMonitorTable(config)]
  // Already distributed (every open after the first): nothing to wait for. Only a change takes the
  // table's maintenance lock — an open must not wait for an index build that holds it.
  const { rows: done } = await sql<{ n: number }>`
    select count(*)::int as n from pg_dist_partition
    where logicalrelid = any(array[${sql.join(tables.map((t) => sql`to_regclass(${t})`))}])`.execute(db)
  if (done[0]?.n === tables.length) return
  const shards = config.distributed === 'auto' ? undefined : config.distributed.shardCount
  await withTableMaintenanceLock(db, config.qualified, async (conn) => {
    if (auto && (await hasRowsLocally(conn, config.qualified))) return
    for (const [i, table] of tables.entries()) {
      const colocate = i === 0 ? undefined : config.qualified
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

/** Whether a table that is not distributed yet has rows ('auto' leaves such a table where it is). */
async function hasRowsLocally(conn: Kysely<any>, qualified: string): Promise<boolean> {
  const { rows } = await sql<{ yes: boolean }>`
    select not exists (select 1 from pg_dist_partition where logicalrelid = to_regclass(${qualified}))
      and exists (select 1 from ${sql.raw(qualified)} limit 1) as yes`.execute(conn)
  return rows[0]?.yes === true
}

/**
 * Whether the store's table is distributed (Citus), and if so its sizes summed over every shard:
 * main fork, with TOAST, with indexes (`citus_relation_size`, `citus_table_size`,
 * `citus_total_relation_size`), and each index's.
 *
 * ### Examples
 * ```ts
 * const sizes = await distributedSizes(db, config) // undefined on plain PostgreSQL
 * ```
 */
export async function distributedSizes(
  db: Database,
  config: ResolvedStoreConfig,
): Promise<{ heap: number; toast: number; indexes: Record<string, number>; total: number } | undefined> {
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
  return { heap, toast: table - heap, indexes: await shardIndexSizes(db, config.qualified), total }
}
