import {
  BaseFilterTranslator,
  type BlacklistedRootOperators,
  type LogicalOperatorValueMap,
  type OperatorSupport,
  type OperatorValueMap,
  type VectorFieldValue,
  type VectorFilter,
} from '@mastra/core/vector'
import { InvalidArgumentError } from '../../errors.js'
import { FilterTranslationError } from './filter-error.js'
import { whereTrue } from './three-valued.js'
import { matchesEverything, parseFilter, type MetadataFilter } from '../../filter/filter-tree.js'

export { FilterTranslationError } from './filter-error.js'

/** The operators of Mastra's filter language pgscale evaluates, with their operands (as @mastra/pg types them). */
type PgScaleOperatorValueMap = Omit<OperatorValueMap, '$in' | '$all' | '$nin' | '$eq' | '$ne' | '$regex' | '$options'> & {
  $eq: VectorFieldValue
  $ne: VectorFieldValue
  $in: VectorFieldValue
  $nin: VectorFieldValue
  $all: VectorFieldValue
  /** Every element present in an array field (`$all`); a string operand (substring) is refused. */
  $contains: VectorFieldValue
  $size: number
}

/**
 * Mastra's filter language as pgscale takes it: MongoDB's query operators over the vector's
 * metadata, without `$regex`/`$options` (refused: pgscale filters have no regular expressions),
 * with @mastra/pg's `$size` and array `$contains`. docs/adapters/mastra.md lists the mapping.
 *
 * ### Examples
 * ```ts
 * const filter: PgScaleVectorFilter = { thread_id: 'thread-1', createdAt: { $gte: '2025-01-01' }, tags: ['a', 'b'] }
 * ```
 */
export type PgScaleVectorFilter = VectorFilter<
  keyof PgScaleOperatorValueMap,
  PgScaleOperatorValueMap,
  LogicalOperatorValueMap,
  BlacklistedRootOperators | '$contains' | '$size'
>

const LOGICAL = new Set(['$and', '$or', '$nor'])

/**
 * A filter no row matches: `$in` of nothing is pgscale's constant false (the key is never read).
 * What an empty `$or` means, as in @mastra/pg.
 */
const NOTHING: MetadataFilter = { _: { $in: [] } }

/**
 * Translates Mastra filters into pgscale's filter language (src/filter). Both are MongoDB's, so most
 * of it passes through; what differs follows @mastra/pg, the store apps switch from: an array
 * value is an implicit `$in`; a nested object without operators is a nested path (`{ a: { b: 1 } }`
 * is `{ 'a.b': 1 }`); `$in`/`$nin`/`$all` take a single value as a one-element list; a logical
 * `$not` at the top is `$nor` of its filter; an empty `$and`/`$nor` matches everything and an empty
 * `$or` nothing; `$contains` with an array is `$all`. Refused with a {@link FilterTranslationError}
 * that names the operator: `$regex`, `$options`, a `RegExp` value, `$contains` with a non-array.
 * Mastra's own checks (`validateFilter`: unknown operators, operators at the wrong level) run first.
 *
 * ### Examples
 * ```ts
 * new PgScaleFilterTranslator().translate({ tags: ['a', 'b'], owner: { team: 'x' } }) // { tags: { $in: ['a', 'b'] }, 'owner.team': 'x' }
 * new PgScaleFilterTranslator().translate({ name: { $regex: '^A' } }) // throws FilterTranslationError (operator '$regex')
 * ```
 */
export class PgScaleFilterTranslator extends BaseFilterTranslator<PgScaleVectorFilter, MetadataFilter | undefined> {
  protected override getSupportedOperators(): OperatorSupport {
    return { ...BaseFilterTranslator.DEFAULT_OPERATORS, custom: ['$contains', '$size'] }
  }

  /**
   * The pgscale filter of a Mastra filter, checked by pgscale's parser too (so every filter error is
   * a {@link FilterTranslationError} before anything is sent); `undefined` for none (`null`,
   * `undefined`, `{}`).
   */
  translate(filter: PgScaleVectorFilter): MetadataFilter | undefined {
    if (this.isEmpty(filter)) return undefined
    if (!isPlainObject(filter)) throw new FilterTranslationError(`a filter is a plain object, got ${describe(filter)}`)
    refuseUnsupported(filter) // first: Mastra's checks would call `{ $not: /re/ }` an empty $not
    try {
      this.validateFilter(filter)
    } catch (err) {
      throw new FilterTranslationError((err as Error).message, undefined, { cause: err })
    }
    const translated = whereTrue(this.#query(filter))
    try {
      parseFilter(translated, 'filter')
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err
      throw new FilterTranslationError(err.message, undefined, { cause: err })
    }
    return translated
  }

  /** A query object: fields and logical operators, all ANDed. */
  #query(node: unknown, where = 'filter'): MetadataFilter {
    if (!isPlainObject(node)) throw new FilterTranslationError(`${where} takes a filter object, got ${describe(node)}`)
    const out = new Conjunction()
    for (const [key, value] of Object.entries(node)) {
      if (LOGICAL.has(key)) {
        const branches = this.#logical(key, value)
        if (branches.length > 0) out.add(key, branches)
      } else if (key === '$not') {
        out.add('$nor', [this.#query(value, '$not')])
      } else if (key.startsWith('$')) {
        out.add(key, value) // the store's parser names it
      } else {
        this.#field(key, value, out)
      }
    }
    return out.build()
  }

  /**
   * The branches of `$and`/`$or`/`$nor`. Empty, as in @mastra/pg: `$and`/`$nor` match everything
   * (no branches: the key is dropped), `$or` nothing (one branch no row matches).
   */
  #logical(key: string, value: unknown): MetadataFilter[] {
    if (!Array.isArray(value)) throw new FilterTranslationError(`${key} takes an array of filters, got ${describe(value)}`)
    if (value.length === 0) return key === '$or' ? [NOTHING] : []
    return value.map((branch, i) => this.#query(branch, `${key}[${i}]`))
  }

  /** A field's condition, at `path`: a value it equals, an array of values (`$in`), operators, or nested fields. */
  #field(path: string, value: unknown, out: Conjunction): void {
    if (value instanceof RegExp) refuse('$regex')
    if (Array.isArray(value)) return out.add(path, { $in: value })
    if (!isPlainObject(value)) return out.add(path, value) // a scalar, null or a Date; undefined is the store's to refuse
    const keys = Object.keys(value)
    if (keys.length === 0) return out.add(path, value)
    if (keys.some((k) => k.startsWith('$'))) return out.add(path, this.#operators(value))
    for (const [key, inner] of Object.entries(value)) this.#field(`${path}.${key}`, inner, out)
  }

  /** A field's operators, mapped where the dialects differ. */
  #operators(ops: Record<string, unknown>): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    const all = (values: unknown[]) => (out.$all = [...((out.$all as unknown[] | undefined) ?? []), ...values])
    for (const [op, operand] of Object.entries(ops)) {
      switch (op) {
        case '$regex':
        case '$options':
          return refuse(op)
        case '$in':
        case '$nin':
          out[op] = Array.isArray(operand) ? operand : [operand]
          break
        case '$all':
          all(Array.isArray(operand) ? operand : [operand])
          break
        case '$contains':
          if (!Array.isArray(operand)) {
            refuse('$contains', 'with a non-array operand it is a substring match, which pgscale does not do; with an array it is $all')
          }
          if (operand.length === 0)
            out.$contains = [] // @mastra/pg's ?& of no keys: three-valued.ts reads it
          else all(operand)
          break
        case '$not':
          if (operand instanceof RegExp) refuse('$regex')
          out.$not = isPlainObject(operand) && Object.keys(operand).some((k) => k.startsWith('$')) ? this.#operators(operand) : operand
          break
        case '$elemMatch':
          out.$elemMatch = this.#elemMatch(operand)
          break
        default:
          out[op] = operand
      }
    }
    return out
  }

  /** `$elemMatch` of operators on the element itself, or of a filter of the element's fields. */
  #elemMatch(operand: unknown): unknown {
    if (!isPlainObject(operand)) return operand
    const keys = Object.keys(operand)
    const onElement = keys.length > 0 && keys.every((k) => k.startsWith('$') && !LOGICAL.has(k))
    if (onElement) {
      refuse(
        '$elemMatch',
        "with operators on the element itself (@mastra/pg reads them as a field named '' of each element and matches no row); " +
          'give the fields of object elements, { $elemMatch: { score: { $gt: 4 } } }, or use $in / $all for scalar elements',
      )
    }
    return this.#query(operand, '$elemMatch')
  }
}

/**
 * Whether a translated filter matches every row: none, `{}`, or one that reduces to it
 * (`{ $and: [] }`). Deletes and updates refuse such a filter, as the store does `{}`.
 *
 * ### Examples
 * ```ts
 * matchesAll(new PgScaleFilterTranslator().translate({ $and: [] })) // true
 * ```
 */
export function matchesAll(filter: MetadataFilter | undefined): boolean {
  return filter === undefined || matchesEverything(parseFilter(filter, 'filter'))
}

/** The keys of one AND: each key once per object, a repeated key in the next object, all ANDed. */
class Conjunction {
  readonly #parts: Record<string, unknown>[] = []

  add(key: string, value: unknown): void {
    let part = this.#parts.find((p) => !Object.hasOwn(p, key))
    if (!part) this.#parts.push((part = {}))
    part[key] = value
  }

  build(): MetadataFilter {
    if (this.#parts.length <= 1) return this.#parts[0] ?? {}
    return { $and: this.#parts }
  }
}

const REFUSED: Record<string, string> = {
  $regex: "pgscale's filter language has no regular expressions; match whole values with $eq or $in",
  $options: 'it sets the flags of $regex, which pgscale does not support',
}

/** Refuses the first operator pgscale does not evaluate, wherever it is: `$regex`, `$options`, or a RegExp value. */
function refuseUnsupported(node: unknown): void {
  if (node instanceof RegExp) refuse('$regex')
  if (Array.isArray(node)) return node.forEach(refuseUnsupported)
  if (!isPlainObject(node)) return
  for (const [key, value] of Object.entries(node)) {
    if (key === '$regex' || key === '$options') refuse('$regex' in node ? '$regex' : key)
    refuseUnsupported(value)
  }
}

function refuse(operator: string, why = REFUSED[operator] ?? ''): never {
  throw new FilterTranslationError(`Unsupported operator: ${operator} (${why})`, operator)
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return `a ${value.constructor?.name ?? 'non-plain object'}`
  return typeof value === 'string' ? JSON.stringify(value) : String(value)
}
