import { sql, type Kysely } from 'kysely'
import { hasCitusExtension } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import { withLease } from '../../db/lease-lock.js'
import type { RollupParts } from '../config/index.js'

/**
 * Distributes a rollup's table on a Citus coordinator, colocated with its source: the source must
 * already be distributed by the rollup's tenant column, so a bucket's refresh (its source rows and
 * its rollup rows) routes to one shard. Idempotent. Typed errors: no Citus, a source that is not
 * distributed, or distributed by another column.
 *
 * ### Examples
 * ```ts
 * await distributeRollup(db, rollup.parts)
 * ```
 */
export async function distributeRollup(db: Kysely<any>, parts: Pick<RollupParts, 'source' | 'target' | 'tenant'>): Promise<void> {
  if (!(await hasCitusExtension(db)))
    throw new InvalidArgumentError(`distribute: ${parts.target.qualified} can only be distributed on a Citus coordinator`)
  const { rows } = await sql<{ column: string | null }>`
    select column_to_column_name(logicalrelid, partkey) as column from pg_dist_partition
    where logicalrelid = to_regclass(${parts.source})`.execute(db)
  const column = rows[0]?.column
  if (column === undefined) {
    throw new InvalidArgumentError(
      `distribute: the source ${parts.source} is not distributed; distribute it by ${parts.tenant} first (create_distributed_table)`,
    )
  }
  if (column !== parts.tenant) {
    throw new InvalidArgumentError(
      `distribute: the source ${parts.source} is distributed by ${String(column)}, not by the rollup's tenant column ${parts.tenant}`,
    )
  }
  // Two callers at once take turns (found by a test: the second failed with 42P16, "already
  // distributed"); each checks after the lock.
  await withLease(db, `pgscale.rollup-distribute:${parts.target.qualified}`, async () => {
    const { rows: done } = await sql<{ done: boolean }>`
      select exists (select 1 from pg_dist_partition where logicalrelid = to_regclass(${parts.target.qualified})) as done`.execute(db)
    if (!done[0]?.done) {
      await sql`select create_distributed_table(${parts.target.qualified}, 'tenant_id', colocate_with => ${parts.source})`.execute(db)
    }
  })
}
