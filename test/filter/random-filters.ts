import { seededRandom } from '../../src/bench-kit.js'

type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
type Rng = () => number

/**
 * Seeded random metadata and filters for the differential and isolation tests: few keys and values,
 * so filters match often; hostile keys and strings (quotes, backslashes, `$`, dots-free unicode,
 * astral characters); timestamps valid and not; arrays of scalars and of objects; nesting.
 */
const COMMON_KEYS = ['a', 'b', 'n', 's', 'tags', 'd']
const HOSTILE_KEYS = ["q'uote", 'back\\slash', 'dol$1', 'ü😀', 'x y']
/** Mostly common keys (so filters match), a quarter hostile ones. */
const key = (r: Rng): string => (r() < 0.75 ? pick(r, COMMON_KEYS) : pick(r, HOSTILE_KEYS))
const STRINGS = ['', 'x', 'y', 'X', 'é', 'z', '😀', '\uffff', "it's", 'a\\b', '$1', '"q"', '1', 'true', 'null']
const TIMESTAMPS = [
  '2024-01-01T00:30:00+01:00',
  '2023-12-31T23:30:00Z',
  '2024-01-01T00:00:00Z',
  '2024-02-29T12:00:00.5Z',
  '2024-02-30T00:00:00Z', // no such day: not a timestamp
  '2024-01-01T00:00:00', // no offset: not a timestamp
  '2024-06-01T08:00Z',
  '0001-01-01T00:00:00-14:00',
]
const DATES = ['2024-01-01T00:00:00Z', '2023-12-31T23:30:00Z', '2024-03-01T00:00:00Z', '2000-01-01T00:00:00Z'].map((s) => new Date(s))

export function rng(seed: string): Rng {
  const random = seededRandom(seed)
  return () => random.next()
}

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!

function scalar(r: Rng): Json {
  const x = r()
  if (x < 0.3) return pick(r, [-2, -1, 0, 1, 1.5, 2, 3, 10, 1e21, -0.25])
  if (x < 0.6) return pick(r, STRINGS)
  if (x < 0.75) return pick(r, TIMESTAMPS)
  if (x < 0.9) return r() < 0.5
  return null
}

function value(r: Rng, depth: number): Json {
  const x = r()
  if (depth < 2 && x < 0.15) return object(r, depth + 1)
  if (depth < 2 && x < 0.3) {
    const n = Math.floor(r() * 4)
    return Array.from({ length: n }, () => (r() < 0.3 && depth < 1 ? object(r, depth + 1) : r() < 0.1 ? [scalar(r)] : scalar(r)))
  }
  return scalar(r)
}

function object(r: Rng, depth: number): { [key: string]: Json } {
  const out: { [key: string]: Json } = {}
  const n = 1 + Math.floor(r() * (depth === 0 ? 7 : 3))
  for (let i = 0; i < n; i++) out[key(r)] = value(r, depth)
  return out
}

/** A random metadata object. */
export function randomMetadata(r: Rng): { [key: string]: Json } {
  return object(r, 0)
}

function path(r: Rng): string {
  return r() < 0.7 ? key(r) : `${key(r)}.${key(r)}`
}

function operand(r: Rng): unknown {
  const x = r()
  if (x < 0.1) return pick(r, DATES)
  if (x < 0.2) return value(r, 1)
  return scalar(r)
}

function ordered(r: Rng): unknown {
  const x = r()
  if (x < 0.25) return pick(r, DATES)
  if (x < 0.6) return pick(r, [-1, 0, 1, 1.5, 2, 3, 1e20])
  return pick(r, STRINGS)
}

function operators(r: Rng, depth: number): Record<string, unknown> {
  const ops: Record<string, unknown> = {}
  const n = 1 + Math.floor(r() * 2)
  for (let i = 0; i < n; i++) {
    const op = pick(r, ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$all', '$size', '$exists', '$elemMatch', '$not'])
    switch (op) {
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        ops[op] = ordered(r)
        break
      case '$in':
      case '$nin':
        ops[op] = Array.from({ length: Math.floor(r() * 4) }, () => operand(r))
        break
      case '$all':
        ops[op] = Array.from({ length: Math.floor(r() * 3) }, () => scalar(r))
        break
      case '$size':
        ops[op] = Math.floor(r() * 3)
        break
      case '$exists':
        ops[op] = r() < 0.5
        break
      case '$elemMatch':
        ops[op] = depth < 3 && r() < 0.5 ? randomFilter(r, depth + 1) : { [pick(r, ['$gt', '$lt', '$eq'])]: ordered(r) }
        break
      case '$not':
        ops[op] = { [pick(r, ['$gt', '$eq', '$in', '$exists'])]: pick(r, [1, 'x', ['x', 1], true]) }
        if ('$exists' in (ops[op] as object)) ops[op] = { $exists: r() < 0.5 }
        if ('$in' in (ops[op] as object)) ops[op] = { $in: ['x', 1, null] }
        if ('$gt' in (ops[op] as object)) ops[op] = { $gt: ordered(r) }
        break
      default:
        ops[op] = operand(r)
    }
  }
  return ops
}

/** A random filter tree: fields with values or operators, and `$and`/`$or`/`$nor` of sub-filters. */
export function randomFilter(r: Rng, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const n = 1 + Math.floor(r() * 2)
  for (let i = 0; i < n; i++) {
    const x = r()
    if (depth < 3 && x < 0.2) {
      out[pick(r, ['$and', '$or', '$nor'])] = Array.from({ length: 1 + Math.floor(r() * 3) }, () => randomFilter(r, depth + 1))
    } else if (x < 0.5) {
      out[path(r)] = operand(r)
    } else {
      out[path(r)] = operators(r, depth)
    }
  }
  return out
}

/** How a filter prints in a failure message: Dates as `Date(…)`. */
export function showFilter(filter: unknown): string {
  return JSON.stringify(filter, function (this: Record<string, unknown>, key, v) {
    const raw = this[key]
    return raw instanceof Date ? `Date(${raw.toISOString()})` : v
  })
}
