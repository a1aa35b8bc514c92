import { sql } from 'kysely'
import { hasCitusShardNodes } from '../../../src/index.js'
import { SOURCE, TARGET, type RollupBenchReport, type RollupRun } from '../rollup-run.js'

/**
 * Step 4: the source's and the rollup's sizes.
 *
 * ### Examples
 * ```ts
 * const { rollupBytes } = await measureSizes(db)
 * ```
 */
export async function measureSizes(db: RollupRun['db']): Promise<RollupBenchReport['sizes']> {
  // On Citus the coordinator's tables are empty shells: the shards' sizes, summed.
  const { rows } = (await hasCitusShardNodes(db))
    ? await sql<{ table: string; indexes: string; rollup: string; rollup_rows: number }>`
    select citus_table_size(${SOURCE}::regclass)::text as table,
      (citus_total_relation_size(${SOURCE}::regclass) - citus_table_size(${SOURCE}::regclass))::text as indexes,
      citus_total_relation_size(${TARGET}::regclass)::text as rollup, (select count(*)::int from ${sql.raw(TARGET)}) as rollup_rows`.execute(
        db,
      )
    : await sql<{ table: string; indexes: string; rollup: string; rollup_rows: number }>`
    select pg_table_size(${SOURCE}::regclass)::text as table, pg_indexes_size(${SOURCE}::regclass)::text as indexes,
      pg_total_relation_size(${TARGET}::regclass)::text as rollup, (select count(*)::int from ${sql.raw(TARGET)}) as rollup_rows`.execute(
        db,
      )
  return {
    sourceTableBytes: Number(rows[0]!.table),
    sourceIndexesBytes: Number(rows[0]!.indexes),
    rollupBytes: Number(rows[0]!.rollup),
    rollupRows: rows[0]!.rollup_rows,
  }
}
