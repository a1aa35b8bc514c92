import { sql, type Kysely } from 'kysely'

/**
 * Each index of a distributed table, its bytes summed over every shard. A shard's index is named
 * the coordinator's name + `_<shardid>` (`run_command_on_shards` asks each shard).
 *
 * ### Examples
 * ```ts
 * const sizes = await shardIndexSizes(db, '"rag_chunks"') // { rag_chunks_pkey: 1236992, … }
 * ```
 */
export async function shardIndexSizes(db: Kysely<any>, qualified: string): Promise<Record<string, number>> {
  const command = `select coalesce(json_object_agg(c.relname, pg_relation_size(c.oid)), '{}') from pg_index x
    join pg_class c on c.oid = x.indexrelid where x.indrelid = '%s'::regclass`
  const { rows } = await sql<{ shardid: string; success: boolean; result: string }>`
    select shardid::text, success, result from run_command_on_shards(${qualified}, ${command})`.execute(db)
  const sizes: Record<string, number> = {}
  for (const row of rows) {
    if (!row.success) throw new Error(`stats: shard ${row.shardid} of ${qualified} did not answer: ${row.result}`)
    for (const [name, bytes] of Object.entries(JSON.parse(row.result) as Record<string, number>)) {
      const suffix = `_${row.shardid}`
      const index = name.endsWith(suffix) ? name.slice(0, -suffix.length) : name
      sizes[index] = (sizes[index] ?? 0) + Number(bytes)
    }
  }
  return Object.fromEntries(Object.entries(sizes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
