/**
 * Timestamps in metadata: a string `YYYY-MM-DDTHH:MM[:SS[.fff]]` followed by `Z` or `±HH:MM`, of a
 * real calendar day (years 0001-9999). Such a string compares with a `Date` operand as the instant
 * it names; any other string (no offset, a space for `T`, Feb 30, microseconds) is not a timestamp
 * and never matches. The same rule is written twice, here and in SQL ({@link isoInstantFunctionSql}),
 * and the differential filter test holds them together.
 */
const ISO =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([01][0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9])(?:\.([0-9]{1,3}))?)?(Z|([+-])(0[0-9]|1[0-4]):([0-5][0-9]))$/

/** The same pattern for PostgreSQL's regular expressions (no backslashes: safe under either `standard_conforming_strings`). */
const ISO_SQL = '^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]{1,3})?)?(Z|[+-](0[0-9]|1[0-4]):[0-5][0-9])$'

/**
 * The instant (ms since the epoch) a metadata value names, or `undefined` when it is not such a timestamp.
 *
 * ### Examples
 * ```ts
 * isoInstant('2024-01-01T00:30:00+01:00') // 1704065400000 (2023-12-31T23:30:00Z)
 * isoInstant('2024-02-30T00:00:00Z') // undefined
 * ```
 */
export function isoInstant(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined
  const m = ISO.exec(value)
  if (!m) return undefined
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number]
  const second = Number(m[6] ?? 0)
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0'))
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  const offsetMinutes = m[8] === 'Z' ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]))
  const utc = new Date(0)
  utc.setUTCFullYear(year, month - 1, day)
  utc.setUTCHours(hour, minute, second, ms)
  return utc.getTime() - offsetMinutes * 60_000
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
  return [4, 6, 9, 11].includes(month) ? 30 : 31
}

/** The SQL function's name in a schema (`undefined`: the search path's first, i.e. `public`). */
export function isoInstantFunction(schema: string | undefined): string {
  return schema ? `"${schema}".pgscale_iso_instant` : 'pgscale_iso_instant'
}

/**
 * `pgscale_iso_instant(jsonb) → timestamptz`: the instant of a JSON string that is such a timestamp,
 * else null (never an error: a bad date inside a matching string is caught). Immutable: the pattern
 * demands an explicit offset, so neither `TimeZone` nor `DateStyle` changes a result — which lets a
 * metadata index on a timestamp path use it.
 */
export function isoInstantFunctionSql(schema: string | undefined): string {
  return `create or replace function ${isoInstantFunction(schema)}(v jsonb) returns timestamptz
    language plpgsql immutable strict parallel safe as $pgscale_iso$
    begin
      if jsonb_typeof(v) <> 'string' or (v #>> '{}') !~ '${ISO_SQL}' then return null; end if;
      return (v #>> '{}')::timestamptz;
    exception when others then return null;
    end $pgscale_iso$`
}
