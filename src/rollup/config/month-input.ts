import { InvalidArgumentError } from '../../errors.js'

/**
 * The one grammar every rollup method reads a month or a moment with (`read`, `readAcross`,
 * `refreshAt`, `rebuild`, `markDirty`), checked before anything is sent:
 *
 * - `'YYYY-MM'` — a local month (not for `markDirty`, which takes the moments of rows);
 * - `'YYYY-MM-DD'` — a local calendar date: its month, wherever the zone is;
 * - `'YYYY-MM-DDTHH:MM[:SS[.fff]]'` (or a space for `T`) — a wall-clock time in the rollup's zone:
 *   the month of its date, whatever the process's `TZ`;
 * - the same with `Z` or an offset (`+01:00`, `+0100`, `+01`) — an instant, placed in its local month;
 * - a valid `Date`, or a finite number of epoch milliseconds — an instant, likewise.
 *
 * Years are 0001-9999, months 01-12, days real days of that month, times in range. Anything else
 * (`'2025-3'`, `'2025/03'`, `'March 2025'`, `'202501'`, `'10000-01'`, `'-001-01'`, `NaN`, `{}`) is an
 * `InvalidArgumentError` naming the value.
 *
 * ### Examples
 * ```ts
 * monthInput('2025-03', 'America/Mexico_City', 'from') // '2025-03-01'
 * monthInput('2025-04-01T05:59:59Z', 'America/Mexico_City', 'moment') // '2025-03-01' (still March there)
 * monthInput('2025-3', 'UTC', 'from') // throws InvalidArgumentError: from "2025-3" is not …
 * ```
 */
export function monthInput(value: unknown, zone: string, what: string, options: { months?: boolean } = {}): string {
  if (value instanceof Date || typeof value === 'number') return instantMonth(value, zone, what)
  if (typeof value !== 'string') throw refused(value, what, options)
  const match = ISO.exec(value)
  if (!match) throw refused(value, what, options)
  const [, year, month, day, hour, minute, second, , offset] = match as unknown as Array<string | undefined>
  if (day === undefined && options.months === false) throw refused(value, what, options)
  if (year === '0000' || Number(month) < 1 || Number(month) > 12) throw refused(value, what, options)
  if (day !== undefined && (Number(day) < 1 || Number(day) > daysIn(Number(year), Number(month)))) throw refused(value, what, options)
  if (hour !== undefined && (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59)) throw refused(value, what, options)
  if (offset !== undefined && offset !== 'Z' && Number(offset.replace(':', '').slice(3, 5) || 0) > 59) throw refused(value, what, options)
  if (offset === undefined || hour === undefined) return `${year}-${month}-01`
  return instantMonth(instantOf(match as unknown as string[]), zone, what, value)
}

/** `YYYY-MM`, `YYYY-MM-DD`, `YYYY-MM-DD[T ]HH:MM[:SS[.f]][Z|±HH[:MM]]`. */
const ISO = /^(\d{4})-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?)?$/

/** Days in a month of the proleptic Gregorian calendar. */
function daysIn(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!
}

/** The instant a date-time with an offset names (years below 100 kept as written). */
function instantOf(match: string[]): Date {
  const [, year, month, day, hour, minute, second, fraction, offset] = match
  const date = new Date(0)
  date.setUTCFullYear(Number(year), Number(month) - 1, Number(day))
  date.setUTCHours(Number(hour), Number(minute), Number(second ?? 0), Math.floor(Number(`0${fraction ?? '.0'}`) * 1000))
  if (offset === 'Z') return date
  const sign = offset!.startsWith('-') ? -1 : 1
  const digits = offset!.slice(1).replace(':', '')
  const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || 0)
  return new Date(date.getTime() - sign * minutes * 60_000)
}

const formats = new Map<string, Intl.DateTimeFormat>()

/** The local month of an instant (a Date or epoch ms) in `zone`, refused outside years 1-9999. */
function instantMonth(value: Date | number, zone: string, what: string, given: unknown = value): string {
  const date = new Date(value instanceof Date ? value.getTime() : value)
  if (Number.isNaN(date.getTime())) throw refused(given, what)
  let format = formats.get(zone)
  if (!format) {
    // With the era: Intl names years before 1 by era (1 BC), not by sign.
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, era: 'short', year: 'numeric', month: '2-digit' })
    formats.set(zone, format)
  }
  const parts = format.formatToParts(date)
  const year = Number(parts.find((p) => p.type === 'year')?.value)
  const month = parts.find((p) => p.type === 'month')?.value
  const era = parts.find((p) => p.type === 'era')?.value
  if (era !== 'AD' || !(year >= 1 && year <= 9999)) throw refused(given, what)
  return `${String(year).padStart(4, '0')}-${month}-01`
}

function refused(value: unknown, what: string, options: { months?: boolean } = {}): InvalidArgumentError {
  const shown =
    value instanceof Date
      ? Number.isNaN(value.getTime())
        ? 'Invalid Date'
        : `Date(${value.toISOString()})`
      : typeof value === 'number'
        ? String(value)
        : JSON.stringify(value)
  const months = options.months === false ? '' : "'YYYY-MM', "
  return new InvalidArgumentError(
    `${what} ${shown ?? String(value)} is not a month or moment: use ${months}'YYYY-MM-DD', an ISO 8601 date-time, a Date or epoch milliseconds (years 1-9999)`,
  )
}
