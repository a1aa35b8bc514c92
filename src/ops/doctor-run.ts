import type { Database } from '../db/database.js'
import { MigrationRequiredError, SchemaMismatchError } from '../errors.js'
import type { MonthlyRollup } from '../rollup/index.js'
import { PgVectorStore, type PgVectorStoreConfig } from '../store/index.js'
import { doctorRollup, doctorStore, type DoctorOptions } from './doctor.js'
import type { Finding } from './findings.js'
import type { RecordedObject } from './recorded-objects.js'

/** What {@link doctorAll} checks: the stores and rollups an ops command found, and the database's records. */
export interface DoctorTargets {
  stores: readonly PgVectorStoreConfig[]
  rollups: readonly MonthlyRollup[]
  /** Every record of the bookkeeping this role may read ({@link recordedObjects}). */
  records: readonly RecordedObject[]
}

/** `schema.table` of a configured name (`rag_chunks` is `public.rag_chunks`). */
export function qualifiedName(table: string): string {
  const plain = table.replaceAll('"', '')
  return plain.includes('.') ? plain : `public.${plain}`
}

/**
 * A finding per record whose object no longer exists: `fail`, `missing`, with the relation that is
 * gone and the command that removes the record (`pgscale forget <key>`).
 *
 * ### Examples
 * ```ts
 * missingFindings(await recordedObjects(db)) // [{ level: 'fail', check: 'missing', kind: 'store', object: 'store:public.old', … }]
 * ```
 */
export function missingFindings(records: readonly RecordedObject[]): Finding[] {
  return records
    .filter((r) => r.missing.length)
    .map((r) => {
      const table = r.missing.includes(r.relations[0]!)
      const what = table
        ? `its table ${r.relations[0]} no longer exists`
        : `its source ${r.missing.join(', ')} no longer exists (nor its tracking triggers)`
      return {
        level: 'fail' as const,
        kind: r.kind,
        object: r.key,
        check: 'missing',
        detail: `recorded in pgscale_object_version, but ${what}`,
        fix: `pgscale forget ${r.key} (or create it again: pgscale migrate)`,
      }
    })
}

/**
 * A `warn` finding per record that is there but out of date: its table was dropped and created
 * again since it was recorded (`recreated`: the oid differs; its owner's `pgscale migrate` checks
 * every step again and records the new table), or it is still in the old `public` table
 * (`not-moved`: its owner's `pgscale migrate` moves it to the schema's own bookkeeping).
 *
 * ### Examples
 * ```ts
 * staleRecordFindings(await recordedObjects(db)) // [{ level: 'warn', check: 'recreated', object: 'store:rag.chunks', … }]
 * ```
 */
export function staleRecordFindings(records: readonly RecordedObject[]): Finding[] {
  const present = records.filter((r) => !r.missing.length)
  return [
    ...present
      .filter((r) => r.recreated)
      .map((r) => ({
        level: 'warn' as const,
        kind: r.kind,
        object: r.key,
        check: 'recreated',
        detail: `${r.relations[0]} is not the table that was recorded: it was dropped and created again (or restored) since`,
        fix: 'pgscale migrate as its owner (checks every step again and records this table)',
      })),
    ...present
      .filter((r) => r.keptIn !== r.schema)
      .map((r) => ({
        level: 'warn' as const,
        kind: r.kind,
        object: r.key,
        check: 'not-moved',
        detail: `recorded in ${r.keptIn}.pgscale_object_version, where versions before per-schema bookkeeping kept every record`,
        fix: `pgscale migrate as its owner (moves it to ${r.schema}.pgscale_object_version)`,
      })),
  ]
}

/**
 * The finding for an object that is there but cannot be opened: the error's message as the why,
 * and the command that fixes it (the owner's migrate for a missing version, a table that no longer
 * matches its record — dropped and re-created by hand — moved aside before migrate).
 *
 * ### Examples
 * ```ts
 * cannotOpen('store', 'public.rag_chunks', err)
 * ```
 */
export function cannotOpen(kind: 'store' | 'rollup', object: string, err: unknown): Finding {
  const detail = err instanceof Error ? err.message : String(err)
  const fix =
    err instanceof MigrationRequiredError
      ? err.command
      : err instanceof SchemaMismatchError
        ? `the table is not the one recorded (re-created?): rename or drop it, then pgscale migrate; or pgscale forget ${kind}:${object} once it is gone`
        : 'pgscale migrate as the owner'
  return { level: 'fail', kind, object, check: 'cannot-open', detail, fix }
}

/**
 * Every check of `pgscale doctor`, never stopping at the first object that fails: records whose
 * objects are gone (`missing`), re-created or not moved yet (`recreated`, `not-moved`), then each store and rollup that is there — one that cannot be
 * opened is a `cannot-open` finding and the rest are still checked.
 *
 * ### Examples
 * ```ts
 * const findings = await doctorAll(db, { stores, rollups, records: await recordedObjects(db) }, { maxBacklogSeconds: 600 })
 * ```
 */
export async function doctorAll(
  db: Database,
  targets: DoctorTargets,
  options: DoctorOptions = {},
  log: (line: string) => void = () => {},
): Promise<Finding[]> {
  const findings = [...missingFindings(targets.records), ...staleRecordFindings(targets.records)]
  const gone = new Set(targets.records.filter((r) => r.missing.length).map((r) => `${r.schema}.${r.name}`))
  for (const config of targets.stores) {
    const name = qualifiedName(config.table ?? 'rag_chunks')
    if (gone.has(name)) continue
    log(`doctor: store ${name} …`)
    findings.push(...(await doctorOneStore(db, config, options).catch((err: unknown) => [cannotOpen('store', name, err)])))
  }
  for (const rollup of targets.rollups) {
    const name = qualifiedName(rollup.parts.target.name)
    if (gone.has(name)) continue
    log(`doctor: rollup ${name} …`)
    findings.push(...(await doctorRollup(db, rollup, options).catch((err: unknown) => [cannotOpen('rollup', name, err)])))
  }
  return findings
}

async function doctorOneStore(db: Database, config: PgVectorStoreConfig, options: DoctorOptions): Promise<Finding[]> {
  const store = await PgVectorStore.open(db, { ...config, migrate: false, querySample: false })
  try {
    return await doctorStore(db, store, options)
  } finally {
    await store.close()
  }
}
