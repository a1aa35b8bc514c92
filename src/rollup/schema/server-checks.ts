import { sql, type Kysely } from 'kysely'
import { DatabaseError, InvalidArgumentError, InvalidTimeZoneError, toPgScaleError } from '../../errors.js'
import { SQLSTATE } from '../../sql/sqlstate.js'
import type { AtKind, RollupParts } from '../config/index.js'

const AT_KINDS: Record<string, AtKind> = {
  'timestamp with time zone': 'timestamptz',
  'timestamp without time zone': 'timestamp',
  date: 'date',
}

/**
 * Checks what only the server can: the zone is known, the source and its columns exist, every
 * measure is an aggregate; returns the `at` column's kind. Typed errors otherwise.
 *
 * ### Examples
 * ```ts
 * await checkRollupOnServer(db, parts) // 'timestamptz'
 * ```
 */
export async function checkRollupOnServer(db: Kysely<any>, p: RollupParts): Promise<AtKind> {
  await checkZone(db, p.zone)
  await checkColumns(db, p)
  for (const m of p.measures) await checkMeasure(db, p.source, m)
  return atKindOf(db, p)
}

async function checkZone(db: Kysely<any>, zone: string): Promise<void> {
  try {
    await sql`select now() at time zone ${zone}`.execute(db)
  } catch (thrown) {
    // Through the app's Kysely the driver's own error arrives: typed first, then branched on.
    const err = toPgScaleError(thrown)
    if (err instanceof DatabaseError && err.sqlState === SQLSTATE.invalidParameterValue)
      throw new InvalidTimeZoneError(zone, { cause: err })
    throw err
  }
}

async function checkColumns(db: Kysely<any>, p: RollupParts): Promise<void> {
  const cols = sql.join([sql.raw(`"${p.tenant}"`), sql.raw(`"${p.at}"`), ...p.groupBy.map((g) => sql.raw(`"${g}"`))])
  try {
    await sql`select ${cols} from ${sql.raw(p.source)} where ${p.where ? sql`(${p.where})` : sql`true`} limit 0`.execute(db)
  } catch (err) {
    throw new InvalidArgumentError(`MonthlyRollup: the source ${p.source} or one of its columns is not usable: ${(err as Error).message}`, {
      cause: err,
    })
  }
}

async function checkMeasure(db: Kysely<any>, source: string, m: RollupParts['measures'][number]): Promise<void> {
  let rows: unknown[]
  try {
    rows = (await sql`select ${m.expression} as v from ${sql.raw(source)} where false`.execute(db)).rows
  } catch (thrown) {
    const err = toPgScaleError(thrown)
    if (err instanceof DatabaseError && err.sqlState === SQLSTATE.groupingError) rows = []
    else
      throw new InvalidArgumentError(`MonthlyRollup: measure ${m.name} is not a valid expression: ${(err as Error).message}`, {
        cause: err,
      })
  }
  if (rows.length !== 1)
    throw new InvalidArgumentError(`MonthlyRollup: measure ${m.name} is not an aggregate expression (sum(...), count(*), max(...), ...)`)
}

async function atKindOf(db: Kysely<any>, p: RollupParts): Promise<AtKind> {
  const { rows } = await sql<{ type: string | null }>`
    select format_type(a.atttypid, a.atttypmod) as type from pg_attribute a
    where a.attrelid = to_regclass(${p.source}) and a.attname = ${p.at} and not a.attisdropped`.execute(db)
  const kind = AT_KINDS[rows[0]?.type ?? '']
  if (!kind) {
    throw new InvalidArgumentError(
      `MonthlyRollup: the at column ${p.source}.${p.at} is ${rows[0]?.type ?? 'not found'}; use timestamptz, timestamp (wall-clock times in ${p.zone}) or date`,
    )
  }
  return kind
}
