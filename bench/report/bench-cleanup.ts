import { sql, type Kysely } from 'kysely'

/**
 * Drops a bench's schema and the records pgscale keeps of what was in it: `store:<schema>.…` and
 * `rollup:<schema>.…` rows of `pgscale_object_version` (a `DROP SCHEMA` alone leaves them, and
 * `pgscale doctor` then reports each as `missing`). Records are deleted only once the schema is
 * gone, in one statement; a record of another schema is never touched. Resolves to the records
 * removed.
 *
 * ### Examples
 * ```ts
 * if (!config.keep) await dropBenchSchema(db, 'pgscale_rag_bench')
 * ```
 */
export async function dropBenchSchema(db: Kysely<any>, schema: string): Promise<number> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`a bench schema is a plain lower-case identifier, not ${JSON.stringify(schema)}`)
  await sql.raw(`drop schema if exists ${schema} cascade`).execute(db)
  return forgetBenchRecords(db, { schema })
}

/**
 * Deletes the records (`pgscale_object_version`) of a bench's stores and rollups whose tables are
 * gone: those of `schema`, or the keys in `keys` (`store:public.bench_chunks`). A record whose
 * table still exists is kept. Resolves to the records removed; none when the table was never made.
 *
 * ### Examples
 * ```ts
 * await forgetBenchRecords(db, { keys: ['store:public.budget_chunks'] })
 * ```
 */
export async function forgetBenchRecords(db: Kysely<any>, which: { schema?: string; keys?: readonly string[] }): Promise<number> {
  const { rows: table } = await sql<{ present: boolean }>`select to_regclass('pgscale_object_version') is not null as present`.execute(db)
  if (!table[0]?.present) return 0
  const result = await sql`
    delete from pgscale_object_version
    where split_part(object, ':', 1) in ('store', 'rollup')
      and (split_part(split_part(object, ':', 2), '.', 1) = ${which.schema ?? null}::text or object = any(${[...(which.keys ?? [])]}::text[]))
      and to_regclass(format('%I.%I', split_part(split_part(object, ':', 2), '.', 1), split_part(split_part(object, ':', 2), '.', 2))) is null`.execute(
    db,
  )
  return Number(result.numAffectedRows ?? 0)
}
