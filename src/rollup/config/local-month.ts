import { InvalidArgumentError, InvalidTimeZoneError } from '../../errors.js'
import { monthInput } from './month-input.js'

/**
 * Checks an IANA time zone name against this machine's zone database.
 *
 * ### Examples
 * ```ts
 * assertTimeZone('America/Mexico_City') // ok
 * assertTimeZone('Mars/Olympus') // throws InvalidTimeZoneError
 * ```
 */
export function assertTimeZone(zone: unknown): string {
  if (typeof zone !== 'string' || zone.length === 0 || !/^[A-Za-z0-9_+\-/]+$/.test(zone)) throw new InvalidTimeZoneError(String(zone))
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
  } catch (err) {
    throw new InvalidTimeZoneError(zone, { cause: err })
  }
  return zone
}

/**
 * A moment as a valid Date: a Date, an ISO 8601 string or epoch milliseconds.
 *
 * ### Examples
 * ```ts
 * toMoment('2025-03-09T08:30:00Z')
 * ```
 */
export function toMoment(value: unknown, what = 'moment'): Date {
  const date = value instanceof Date ? value : typeof value === 'string' || typeof value === 'number' ? new Date(value) : undefined
  if (!date || Number.isNaN(date.getTime()))
    throw new InvalidArgumentError(`${what} must be a Date, an ISO 8601 string or epoch milliseconds, got ${JSON.stringify(value)}`)
  return date
}

const monthFormats = new Map<string, Intl.DateTimeFormat>()

/**
 * The local month of a moment in `zone`, as the first day: `'2025-03-01'`.
 *
 * ### Examples
 * ```ts
 * localMonth(new Date('2025-04-01T05:59:59Z'), 'America/Mexico_City') // '2025-03-01' (still March there)
 * ```
 */
export function localMonth(moment: Date, zone: string): string {
  let format = monthFormats.get(zone)
  if (!format) {
    // Building a DateTimeFormat costs far more than using one: one per zone.
    format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit' })
    monthFormats.set(zone, format)
  }
  const parts = format.formatToParts(moment)
  const year = parts.find((p) => p.type === 'year')?.value
  const month = parts.find((p) => p.type === 'month')?.value
  return `${year}-${month}-01`
}

/** The months from `first` to `last` inclusive (`YYYY-MM-01` strings). */
export function monthsBetween(first: string, last: string): string[] {
  const out: string[] = []
  let [y, m] = first.split('-').map(Number) as [number, number]
  const [ly, lm] = last.split('-').map(Number) as [number, number]
  while (y < ly || (y === ly && m <= lm)) {
    out.push(`${y}-${String(m).padStart(2, '0')}-01`)
    m++
    if (m === 13) {
      m = 1
      y++
    }
  }
  return out
}

/**
 * The local month (`YYYY-MM-01`) an input names, by the rollup's one month grammar
 * ({@link monthInput}: `'YYYY-MM'`, `'YYYY-MM-DD'`, ISO 8601 date-times, Dates, epoch ms; years
 * 1-9999); anything else is an `InvalidArgumentError` naming the value.
 *
 * ### Examples
 * ```ts
 * monthOf('2025-03-01', 'America/Mexico_City') // '2025-03-01'
 * monthOf(new Date('2025-03-01T00:00:00Z'), 'America/Mexico_City') // '2025-02-01'
 * ```
 */
export function monthOf(value: unknown, zone: string, what = 'moment'): string {
  return monthInput(value, zone, what)
}
