import { InvalidArgumentError } from '../errors.js'
import type { MetadataFilter } from './filter-tree.js'

/** A filter as stored: its JSON, with the paths of its `Date` operands (held as ISO strings) beside it. */
export interface StoredFilter {
  filter: unknown
  dates: string[][]
}

/**
 * A filter as JSON that gives the same filter back: JSON has no `Date`, so each `Date` operand is
 * written as its ISO-8601 string and its path listed in `dates` (a string operand stays a string;
 * no key of the filter is reinterpreted).
 *
 * ### Examples
 * ```ts
 * filterToStored({ at: { $gte: new Date('2024-01-01T00:00:00Z') } })
 * // { filter: { at: { $gte: '2024-01-01T00:00:00.000Z' } }, dates: [['at', '$gte']] }
 * ```
 */
export function filterToStored(filter: MetadataFilter): StoredFilter {
  const dates: string[][] = []
  const walk = (value: unknown, path: string[]): unknown => {
    if (value instanceof Date) {
      dates.push(path)
      return value.toISOString()
    }
    if (Array.isArray(value)) return value.map((v, i) => walk(v, [...path, String(i)]))
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]))
    }
    return value
  }
  return { filter: walk(filter, []), dates }
}

/**
 * The filter {@link filterToStored} wrote, with its `Date` operands back; anything else is an
 * {@link InvalidArgumentError}.
 *
 * ### Examples
 * ```ts
 * filterFromStored(filterToStored({ at: { $lt: new Date(0) } })) // { at: { $lt: new Date(0) } }
 * ```
 */
export function filterFromStored(stored: unknown): MetadataFilter {
  const s = (typeof stored === 'string' ? JSON.parse(stored) : stored) as Partial<StoredFilter> | null
  if (s === null || typeof s !== 'object' || typeof s.filter !== 'object' || s.filter === null || !Array.isArray(s.dates)) {
    throw new InvalidArgumentError('a stored filter must be { filter, dates }')
  }
  const filter = structuredClone(s.filter) as Record<string, unknown>
  for (const path of s.dates) {
    if (!Array.isArray(path) || path.length === 0) throw new InvalidArgumentError('a stored filter date path must be a non-empty array')
    let at: Record<string, unknown> = filter
    for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>
    const last = path.at(-1)!
    if (at === null || typeof at !== 'object' || typeof at[last] !== 'string')
      throw new InvalidArgumentError('a stored filter date path must name a string')
    at[last] = new Date(at[last])
  }
  return filter
}
