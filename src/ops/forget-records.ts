import { sql } from 'kysely'
import type { Database } from '../db/database.js'
import { objectVersionTable, OBJECT_VERSION_TABLE, recordTables } from '../db/migration/bookkeeping.js'
import { InvalidArgumentError } from '../errors.js'
import { recordedObjects, recordRelations, relationExists, type RecordedObject } from './recorded-objects.js'

/** What {@link forgetRecord} did with one record. */
export interface ForgetOutcome {
  key: string
  /** `forgotten`: the record was removed; `exists`: its object is there (again), so the record was kept. */
  result: 'forgotten' | 'exists'
  /** The relations that were missing when the record was removed (or, kept, an empty list). */
  missing: string[]
}

/**
 * The record `name` designates: its key (`store:public.rag_chunks`), its table qualified
 * (`public.rag_chunks`) or not (`rag_chunks`, in `public`). A name no record matches is a typed
 * error naming the recorded keys.
 *
 * ### Examples
 * ```ts
 * resolveRecord(await recordedObjects(db), 'rag_chunks').key // 'store:public.rag_chunks'
 * ```
 */
export function resolveRecord(records: readonly RecordedObject[], name: string): RecordedObject {
  const qualified = name.includes('.') ? name : `public.${name}`
  const found = records.filter((r) => r.key === name || `${r.schema}.${r.name}` === qualified)
  if (found.length === 1) return found[0]!
  const known = records.map((r) => r.key).join(', ') || 'none'
  if (!found.length) throw new InvalidArgumentError(`no recorded object ${name} (recorded: ${known})`)
  throw new InvalidArgumentError(`${name} names ${found.map((r) => r.key).join(' and ')}: give the key`)
}

/**
 * Removes the record `key` from the bookkeeping that keeps it (its schema's `pgscale_object_version`,
 * or the old `public` one before the move) when the object it describes no longer
 * exists, and keeps it (`exists`) when it does. Safe beside a concurrent `migrate`, `open` or
 * `track` of the same object: in one transaction it takes the object's advisory lock (the one
 * migrations take), locks the record's row (waiting for a writer of it to commit), and only then,
 * in a statement of its own and so with a snapshot that sees what that writer created, deletes
 * the row where one of its relations is missing. A migration that comes after re-records it.
 *
 * ### Examples
 * ```ts
 * await forgetRecord(db, 'store:public.rag_chunks') // { result: 'forgotten', missing: ['"public"."rag_chunks"'] }
 * ```
 */
export async function forgetRecord(db: Database, key: string): Promise<ForgetOutcome> {
  return db.transaction(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('pgscale.object'), hashtext(${key}))`.execute(trx)
    for (const { schema } of await recordTables(trx, key)) {
      const table = sql.raw(objectVersionTable(schema))
      const { rows } = await sql<{ config: unknown }>`select config from ${table} where object = ${key} for update`.execute(trx)
      const relations = rows[0] ? recordRelations(key, rows[0].config)?.relations : undefined
      if (!relations) continue
      const { rows: gone } = await sql<{ missing: string[] }>`
        with missing as (select coalesce(array_agg(r), '{}') as missing from unnest(${relations}::text[]) r where not ${sql.raw(relationExists('r'))}),
        deleted as (delete from ${table} where object = ${key} and (select cardinality(missing) > 0 from missing) returning 1)
        select missing from missing where exists (select from deleted)`.execute(trx)
      return gone[0] ? { key, result: 'forgotten' as const, missing: gone[0].missing } : { key, result: 'exists' as const, missing: [] }
    }
    throw new InvalidArgumentError(`no record ${key} in ${OBJECT_VERSION_TABLE}`)
  })
}

/**
 * Removes every record whose object no longer exists (what `pgscale forget --missing` runs), each
 * as {@link forgetRecord} does; records of objects that are there are kept.
 *
 * ### Examples
 * ```ts
 * for (const o of await forgetMissing(db)) console.log(o.key, o.result)
 * ```
 */
export async function forgetMissing(db: Database): Promise<ForgetOutcome[]> {
  const outcomes: ForgetOutcome[] = []
  for (const record of await recordedObjects(db)) if (record.missing.length) outcomes.push(await forgetRecord(db, record.key))
  return outcomes
}
