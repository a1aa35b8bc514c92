import { sql, type Kysely } from 'kysely'
import { hasCitusExtension } from '../../db/database.js'
import { SchemaMismatchError } from '../../errors.js'
import type { RollupParts } from '../config/index.js'

/**
 * Where a rollup's dirty-key log lives, which decides how writes mark it and drainers claim it:
 * `local` — one table beside a source on one server (or a source Citus does not distribute);
 * `citus` — a source Citus distributes by the tenant: the log is distributed colocated with it,
 * the triggers run on the source's shards and mark the log's colocated shard.
 */
export type LogPlacement = 'local' | 'citus'

/**
 * Where the dirty-key log of `parts` belongs, read from the catalog: `citus` when Citus distributes
 * the source — then it must be distributed by the rollup's tenant column, and the rollup table
 * colocated with it (`rollup.distribute(db)`), or a `SchemaMismatchError` says which and nothing is
 * created —, else `local`.
 *
 * ### Examples
 * ```ts
 * if ((await logPlacement(db, parts)) === 'citus') … // the log is distributed with the source
 * ```
 */
export async function logPlacement(db: Kysely<any>, parts: RollupParts): Promise<LogPlacement> {
  if (!(await hasCitusExtension(db))) return 'local'
  const { rows } = await sql<{ column: string | null; colocation: number; targetColocation: number | null }>`
    select column_to_column_name(p.logicalrelid, p.partkey) as column, p.colocationid as colocation,
      (select t.colocationid from pg_dist_partition t where t.logicalrelid = to_regclass(${parts.target.qualified})) as "targetColocation"
    from pg_dist_partition p where p.logicalrelid = to_regclass(${parts.source})`.execute(db)
  const source = rows[0]
  if (!source) return 'local'
  if (source.column !== parts.tenant)
    throw new SchemaMismatchError(
      `rollup.track: ${parts.source} is ${source.column ? `distributed by ${source.column}` : 'a reference table'}, not by the rollup's ` +
        `tenant column ${parts.tenant}: a bucket's writes would span shards`,
    )
  if (source.targetColocation !== source.colocation)
    throw new SchemaMismatchError(
      `rollup.track: ${parts.source} is distributed by Citus but the rollup table ${parts.target.qualified} is not colocated with it: ` +
        `run rollup.distribute(db) first`,
    )
  return 'citus'
}
