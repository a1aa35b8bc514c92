import type { MetadataFilter as LlamaFilter, MetadataFilters } from '@llamaindex/core/vector-store'
import { InvalidArgumentError } from '../../errors.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'

/**
 * A LlamaIndex filter in pgscale's filter language: `filter` to pass to the store (absent: every
 * row), or `matchesNothing` when no row can match (an empty `or`), so no statement need be sent.
 * `relaxed`, where it differs, is the same filter without its array checks: pgscale's own
 * operators, cheaper, matching every row `filter` matches and also arrays that hold the values —
 * a search on it whose hits all pass `filter` has found `filter`'s nearest rows.
 */
export interface TranslatedFilters {
  readonly filter?: MetadataFilter
  readonly relaxed?: MetadataFilter
  readonly matchesNothing: boolean
}

/** One condition, exact and relaxed (a superset of the exact one; the same object where nothing is relaxed). */
interface Condition {
  exact: MetadataFilter
  relaxed: MetadataFilter
}

const same = (filter: MetadataFilter): Condition => ({ exact: filter, relaxed: filter })

/** The serialized node `nodeToMetadata` adds: not metadata, and LlamaIndex's own stores never filter on it. */
const NODE_CONTENT_KEY = '_node_content'

type Scalar = string | number

/**
 * Each of LlamaIndex's operators in pgscale's language, with SimpleVectorStore's semantics
 * (`buildFilterFn` in llamaindex 0.12.1): a missing key matches only `is_empty`; `==`, `!=`, `<`…,
 * `in` and `nin` compare the value itself, never an array's elements; `any`, `all` and `contains`
 * match arrays only. pgscale's operators also match an array through its elements, so each
 * condition says what the value is: `{ $eq: v, $not: { $elemMatch: { $eq: v } } }` is `v` itself,
 * not an array holding it; `{ $in: vs, $elemMatch: { $in: vs } }` an array with one of `vs` as an
 * element. One `$elemMatch` per condition, evaluated only on the rows the cheap operator (served
 * by a metadata index where one is declared) lets through; `relaxed` leaves out the `$not` checks.
 * `text_match` (a substring) has no exact form in pgscale's filter language and is refused.
 */
const OPERATORS: Record<string, (key: string, value: unknown, at: string) => Condition> = {
  '==': (key, value, at) => itself(key, '$eq', scalar(value, at)),
  '!=': (key, value, at) => {
    const v = scalar(value, at)
    return same({ $or: [{ [key]: { $exists: true, $ne: v } }, { [key]: { $elemMatch: { $eq: v } } }] })
  },
  '>': (key, value, at) => ordered(key, '$gt', scalar(value, at)),
  '>=': (key, value, at) => ordered(key, '$gte', scalar(value, at)),
  '<': (key, value, at) => ordered(key, '$lt', scalar(value, at)),
  '<=': (key, value, at) => ordered(key, '$lte', scalar(value, at)),
  in: (key, value, at) => itself(key, '$in', list(value, at)),
  nin: (key, value, at) => {
    const vs = list(value, at)
    return same({ $or: [{ [key]: { $exists: true, $nin: vs } }, { [key]: { $elemMatch: { $in: vs } } }] })
  },
  any: (key, value, at) => {
    const vs = list(value, at)
    return same({ [key]: { $in: vs, $elemMatch: { $in: vs } } })
  },
  all: (key, value, at) => {
    const vs = list(value, at)
    // Every one of no values: any array (JavaScript's [].every), where pgscale's $all [] matches nothing.
    if (vs.length === 0) return same({ $or: [{ [key]: { $size: 0 } }, { [key]: { $elemMatch: { $exists: true } } }] })
    return same({ [key]: { $all: vs, $elemMatch: { $in: vs } } })
  },
  contains: (key, value, at) => {
    const v = scalar(value, at)
    return same({ [key]: { $eq: v, $elemMatch: { $eq: v } } })
  },
  is_empty: (key) => {
    const empty = itself(key, '$in', [null, ''])
    return { exact: { $or: [empty.exact, { [key]: { $size: 0 } }] }, relaxed: { $or: [empty.relaxed, { [key]: { $size: 0 } }] } }
  },
}

/**
 * `op` on the value at `key` itself: true of a scalar, never of an array through its elements;
 * relaxed, pgscale's plain operator (an array matches through its elements too).
 */
function itself(key: string, op: '$eq' | '$gt' | '$gte' | '$lt' | '$lte' | '$in', operand: Scalar | Array<Scalar | null>): Condition {
  return { exact: { [key]: { [op]: operand, $not: { $elemMatch: { [op]: operand } } } }, relaxed: { [key]: { [op]: operand } } }
}

/** JavaScript's comparison of `null` (as 0) with a number, which SimpleVectorStore's `<`… make. */
const NULL_AS_ZERO: Record<'$gt' | '$gte' | '$lt' | '$lte', (n: number) => boolean> = {
  $gt: (n) => 0 > n,
  $gte: (n) => 0 >= n,
  $lt: (n) => 0 < n,
  $lte: (n) => 0 <= n,
}

/**
 * A comparison, as SimpleVectorStore makes it: of the value itself; a JSON null compares as 0 with a
 * number operand (`null < 4` is true in JavaScript), so it is matched where 0 would be.
 */
function ordered(key: string, op: '$gt' | '$gte' | '$lt' | '$lte', operand: Scalar): Condition {
  const plain = itself(key, op, operand)
  if (typeof operand !== 'number' || !NULL_AS_ZERO[op](operand)) return plain
  const isNull: MetadataFilter = { [key]: { $exists: true, $in: [null] } }
  return { exact: { $or: [plain.exact, isNull] }, relaxed: { $or: [plain.relaxed, isNull] } }
}

/**
 * LlamaIndex's `MetadataFilters` (`{ filters: [{ key, operator, value }], condition: 'and' | 'or' }`)
 * as a pgscale filter, with the semantics of LlamaIndex's reference store, SimpleVectorStore.
 * Mapped: `==`, `!=`, `>`, `>=`, `<`, `<=` (a string or a number), `in`, `nin`, `any`, `all` (an
 * array of strings and numbers), `contains` (a string or a number), `is_empty`. Refused, with an
 * {@link InvalidArgumentError} before anything is sent: `text_match` and any other operator, a
 * condition other than `and`/`or`, nested filters, a key that is empty, has a `.` (pgscale reads it
 * as a path into nested metadata, LlamaIndex as a literal key) or starts with `$`, the key
 * `_node_content`, and values of the wrong type (booleans, null, non-finite numbers). Comparisons
 * (`>`…) match values of the operand's type only: a number with numbers, a string with strings in
 * code-point order (SimpleVectorStore's JavaScript would coerce `"10" > 5`); a JSON null compares as
 * 0 with a number, as in JavaScript (`null < 4`).
 *
 * ### Examples
 * ```ts
 * toPgScaleFilter({ filters: [{ key: 'year', operator: '>=', value: 2024 }] })
 * // { filter: { year: { $gte: 2024, $not: { $elemMatch: { $gte: 2024 } } } }, relaxed: { year: { $gte: 2024 } }, matchesNothing: false }
 * toPgScaleFilter({ filters: [], condition: 'or' }).matchesNothing // true
 * ```
 */
export function toPgScaleFilter(filters: MetadataFilters | undefined): TranslatedFilters {
  if (filters === undefined || filters === null) return { matchesNothing: false }
  if (typeof filters !== 'object' || !Array.isArray(filters.filters)) {
    throw new InvalidArgumentError('query filters: expected MetadataFilters, { filters: [{ key, operator, value }], condition? }')
  }
  const condition = filters.condition ?? 'and'
  if (condition !== 'and' && condition !== 'or') {
    throw new InvalidArgumentError(`query filters: condition must be "and" or "or", got ${JSON.stringify(condition)}`)
  }
  const parts = filters.filters.map((f, i) => translateOne(f, `query filters[${i}]`))
  if (parts.length === 0) return condition === 'and' ? { matchesNothing: false } : { matchesNothing: true }
  const combine = (filters: MetadataFilter[]): MetadataFilter =>
    filters.length === 1 ? filters[0]! : condition === 'and' ? { $and: filters } : { $or: filters }
  const filter = combine(parts.map((p) => p.exact))
  if (parts.every((p) => p.relaxed === p.exact)) return { filter, matchesNothing: false }
  return { filter, relaxed: combine(parts.map((p) => p.relaxed)), matchesNothing: false }
}

function translateOne(filter: LlamaFilter, at: string): Condition {
  if (filter === null || typeof filter !== 'object' || 'filters' in filter) {
    throw new InvalidArgumentError(`${at}: expected { key, operator, value } (LlamaIndex.TS filters are flat: no nested MetadataFilters)`)
  }
  const key = filterKey(filter.key, at)
  const operator: string = filter.operator
  if (operator === 'text_match') {
    throw new InvalidArgumentError(
      `${at}: the operator text_match (a substring of a metadata value) has no exact form in pgscale's filter language; ` +
        'use ==, in or any, or a hybrid query (mode "hybrid") for words in the text',
    )
  }
  const translate = Object.hasOwn(OPERATORS, operator) ? OPERATORS[operator] : undefined
  if (!translate) throw new InvalidArgumentError(`${at}: unsupported operator ${JSON.stringify(operator)}`)
  return translate(key, filter.value, `${at} (${operator})`)
}

function filterKey(key: unknown, at: string): string {
  if (typeof key !== 'string' || key.length === 0) throw new InvalidArgumentError(`${at}: key must be a non-empty string`)
  if (key.includes('.') || key.startsWith('$')) {
    throw new InvalidArgumentError(
      `${at}: the key ${JSON.stringify(key)} cannot be filtered on exactly: pgscale reads "." as a path into nested ` +
        'metadata and "$" as an operator, where LlamaIndex means a literal top-level key',
    )
  }
  if (key === NODE_CONTENT_KEY) throw new InvalidArgumentError(`${at}: ${NODE_CONTENT_KEY} is the serialized node, not metadata`)
  return key
}

function scalar(value: unknown, at: string): Scalar {
  if (typeof value === 'string') return value
  if (typeof value === 'number' && Number.isFinite(value)) return value
  throw new InvalidArgumentError(`${at}: the value must be a string or a finite number, got ${describe(value)}`)
}

function list(value: unknown, at: string): Scalar[] {
  if (!Array.isArray(value))
    throw new InvalidArgumentError(`${at}: the value must be an array of strings and numbers, got ${describe(value)}`)
  return value.map((v, i) => scalar(v, `${at}[${i}]`))
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'string') return JSON.stringify(value)
  return typeof value === 'object' && value !== null ? 'an object' : String(value)
}
