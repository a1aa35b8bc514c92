import type { MetadataFilter } from '../../filter/filter-tree.js'
import { FilterTranslationError } from './filter-error.js'

/**
 * @mastra/pg's meaning of a filter, in pgscale's two-valued filter language. @mastra/pg compiles a
 * filter to SQL over `metadata->>'f'`, so a condition on a field that is missing or JSON null is
 * SQL NULL — neither true nor false — and `NOT`, `$nor` and `$not` keep it NULL: `{ rating: { $not:
 * { $lt: 4 } } }` returns no row without `rating`. pgscale's filters are MongoDB's (a negation
 * matches what its operand does not, missing fields included), so the adapter writes each Mastra
 * condition as two pgscale filters: the rows where @mastra/pg's SQL is true ({@link whereTrue}) and
 * where it is false ({@link whereFalse}); a negation swaps them, AND and OR follow Kleene's logic,
 * and a search, delete or update takes the rows where the whole filter is true. Per operator, as
 * @mastra/pg 1.27 evaluates it (docs/adapters/mastra.md has the table a test fills in from both):
 * - `$eq`/`$ne`/`$in`/`$nin` compare texts, so `4` equals `'4'` and `true` equals `'true'`: each
 *   scalar operand stands for its textual twins too; a null in `$in`/`$nin` never makes them true;
 * - `$gt $gte $lt $lte` with a number (or a numeric string) compare numbers only; with another
 *   string or a Date they compare any value's text in the database's collation, which pgscale does
 *   not: under a negation they are refused, naming the operator;
 * - `$all` (and array `$contains`) are false on a JSON null or a scalar of another type, unknown on
 *   a missing field; `$contains: []` is true wherever the field is present, else unknown;
 * - `$elemMatch` with operators on the element itself matches no row in @mastra/pg: refused
 *   (mastra-filter.ts);
 * - `$exists`, `$size`, `$elemMatch` and `$eq`/`$ne` of null are never unknown.
 *
 * ### Examples
 * ```ts
 * whereTrue({ $nor: [{ rating: { $lt: 4 } }] }) // { rating: { $gte: 4 } }: rows without rating are not returned
 * ```
 */
export function whereTrue(filter: MetadataFilter): MetadataFilter {
  return conjunction(entries(filter).map(([key, value]) => entry(key, value, true)))
}

/**
 * The rows where @mastra/pg's SQL for `filter` is false (not unknown): what its negation matches.
 *
 * ### Examples
 * ```ts
 * whereFalse({ rating: { $lt: 4 } }) // { rating: { $gte: 4 } }
 * ```
 */
export function whereFalse(filter: MetadataFilter): MetadataFilter {
  return disjunction(entries(filter).map(([key, value]) => entry(key, value, false)))
}

/** A filter no row matches (`$in` of nothing), and its negation, one every row matches. */
const NOTHING: MetadataFilter = { _: { $in: [] } }
const EVERYTHING: MetadataFilter = {}

function entries(filter: MetadataFilter): Array<[string, unknown]> {
  return Object.entries(filter as Record<string, unknown>)
}

/** One key of a query object, where it is true (`truth`) or false. */
function entry(key: string, value: unknown, truth: boolean): MetadataFilter {
  const branches = () => (value as MetadataFilter[]).map((b) => (truth ? whereTrue(b) : whereFalse(b)))
  const negated = () => (value as MetadataFilter[]).map((b) => (truth ? whereFalse(b) : whereTrue(b)))
  switch (key) {
    case '$and':
      return truth ? conjunction(branches()) : disjunction(branches())
    case '$or':
      return truth ? disjunction(branches()) : conjunction(branches())
    case '$nor':
      return truth ? conjunction(negated()) : disjunction(negated())
    default:
      return field(key, value, truth)
  }
}

/** A field's condition: a value (equality) or operators, all ANDed; `$not` swaps truth. */
function field(path: string, value: unknown, truth: boolean): MetadataFilter {
  if (!isOperatorObject(value)) return leaf(path, '$eq', value, truth)
  const parts = Object.entries(value).map(([op, operand]) => {
    if (op !== '$not') return leaf(path, op, operand, truth)
    return isOperatorObject(operand) ? field(path, operand, !truth) : leaf(path, '$eq', operand, !truth)
  })
  return truth ? conjunction(parts) : disjunction(parts)
}

/** One operator on one field, where @mastra/pg's SQL for it is true (`truth`) or false. */
function leaf(path: string, op: string, operand: unknown, truth: boolean): MetadataFilter {
  const at = (ops: Record<string, unknown>): MetadataFilter => ({ [path]: ops }) as MetadataFilter
  switch (op) {
    case '$eq':
      return equality(path, operand, truth)
    case '$ne':
      return equality(path, operand, !truth)
    case '$in':
      return membership(path, operand as unknown[], truth)
    case '$nin':
      return membership(path, operand as unknown[], !truth)
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return range(path, op, operand, truth)
    case '$all':
      if ((operand as unknown[]).length === 0) return truth ? NOTHING : EVERYTHING
      return truth ? at({ $all: operand }) : at({ $exists: true, $not: { $all: operand } })
    case '$contains': // only `$contains: []` is left here (an array is `$all`): true wherever the field is, else unknown
      return truth ? at({ $exists: true }) : NOTHING
    case '$exists':
      return at({ $exists: truth ? operand : !operand })
    case '$elemMatch': // never unknown; its fields are @mastra/pg's conditions on each element
      return truth
        ? at({ $elemMatch: whereTrue(operand as MetadataFilter) })
        : at({ $not: { $elemMatch: whereTrue(operand as MetadataFilter) } })
    default: // $size: never unknown
      return truth ? at({ [op]: operand }) : at({ $not: { [op]: operand } })
  }
}

/** `$eq`: null is `IS NULL` (missing or null); a value equals its texts' twins; unknown on missing or null. */
function equality(path: string, operand: unknown, truth: boolean): MetadataFilter {
  if (operand === null) return { [path]: truth ? null : { $ne: null } } as MetadataFilter
  return membership(path, [operand], truth)
}

/** `$in`: some value's text among the operands'; false only where present, not null and none equal. */
function membership(path: string, operands: readonly unknown[], truth: boolean): MetadataFilter {
  if (operands.length === 0) return truth ? NOTHING : EVERYTHING // text = any('{}') is false
  const values = operands.filter((v) => v !== null).flatMap(twins)
  if (truth && values.length === 1 && (values[0] === null || typeof values[0] !== 'object')) return { [path]: values[0] } as MetadataFilter
  if (truth) return values.length === 0 ? NOTHING : ({ [path]: { $in: values } } as MetadataFilter)
  if (operands.includes(null)) return NOTHING // text = any('{…,NULL}') is never false
  return { [path]: { $nin: [...values, null] } } as MetadataFilter
}

/** A scalar with the scalars of the same text in @mastra/pg's comparison (`4` and `'4'`, `true` and `'true'`). */
function twins(value: unknown): unknown[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [value, String(value)] : [value]
  if (typeof value === 'boolean') return [value, String(value)]
  if (typeof value !== 'string') return [value]
  if (value === 'true' || value === 'false') return [value, value === 'true']
  const n = Number(value)
  return value.trim() !== '' && Number.isFinite(n) && String(n) === value ? [value, n] : [value]
}

const COMPLEMENT: Record<string, string> = { $gt: '$lte', $gte: '$lt', $lt: '$gte', $lte: '$gt' }

/** A comparison: numbers with numbers (a numeric string operand is its number); other operands only where true. */
function range(path: string, op: string, operand: unknown, truth: boolean): MetadataFilter {
  const numeric = typeof operand === 'number' || (typeof operand === 'string' && operand.trim() !== '' && Number.isFinite(Number(operand)))
  if (numeric) return { [path]: { [truth ? op : COMPLEMENT[op]!]: Number(operand) } } as MetadataFilter
  if (truth) return { [path]: { [op]: operand } } as MetadataFilter
  throw new FilterTranslationError(
    `Unsupported operator: ${op} under a negation with a non-numeric operand (@mastra/pg compares the text of any value ` +
      `in the database's collation there; pgscale compares strings with strings only, so the rows would differ)`,
    op,
  )
}

/** The AND of `parts`: one object where their keys differ (`{ a: …, b: … }`), else `$and`. */
function conjunction(parts: MetadataFilter[]): MetadataFilter {
  const kept = parts.filter((p) => Object.keys(p).length > 0)
  if (kept.length === 0) return EVERYTHING
  if (kept.length === 1) return kept[0]!
  const keys = kept.flatMap((p) => Object.keys(p))
  if (new Set(keys).size === keys.length) return Object.assign({}, ...kept) as MetadataFilter
  return { $and: kept } as MetadataFilter
}

function disjunction(parts: MetadataFilter[]): MetadataFilter {
  if (parts.some((p) => Object.keys(p).length === 0)) return EVERYTHING
  if (parts.length === 0) return NOTHING
  return parts.length === 1 ? parts[0]! : ({ $or: parts } as MetadataFilter)
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Date) return false
  const keys = Object.keys(value)
  return keys.length > 0 && keys.every((k) => k.startsWith('$'))
}
