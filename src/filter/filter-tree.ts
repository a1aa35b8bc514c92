import { InvalidArgumentError } from '../errors.js'

/** A JSON value as metadata holds it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/**
 * A metadata filter as apps write it: MongoDB's query language over the chunk's JSON metadata.
 * `{ field: value }` is equality; operators `$eq $ne $gt $gte $lt $lte $in $nin $all $size
 * $exists $elemMatch $not`; logical `$and $or $nor`; dotted paths (`'owner.team'`). See
 * docs/store.md "Filters" for the exact semantics. A field's object value whose keys all look like
 * operators without their `$` (`{ source: { in: [...] } }`: `in nin gt gte lt lte ne eq exists and
 * or not contains`) is refused with the spelling to use ("did you mean $in?"); an equality with such
 * an object is written with `$eq`: `{ source: { $eq: { in: [...] } } }`.
 *
 * ### Examples
 * ```ts
 * const filter: MetadataFilter = { kind: 'invoice', year: { $gte: 2024 }, $or: [{ owner: 'ana' }, { shared: true }] }
 * ```
 */
export type MetadataFilter = { readonly [key: string]: unknown }

/** A path into the metadata: its dotted segments. `[]` is the value itself (inside `$elemMatch`). */
export type FilterPath = readonly string[]

/** A comparison's operand: numbers with numbers, strings with strings, a `Date` with ISO-8601 timestamps. */
export type OrderedOperand = number | string | Date

/** The validated filter tree: what the SQL compiler and the reference evaluator both read. */
export type FilterNode =
  | { readonly kind: 'const'; readonly value: boolean }
  | { readonly kind: 'and' | 'or'; readonly children: readonly FilterNode[] }
  | { readonly kind: 'not'; readonly child: FilterNode }
  /** Some value at the path (an element, where it is an array) equals `value`; `null` also matches a missing path. */
  | { readonly kind: 'eq'; readonly path: FilterPath; readonly value: JsonValue | Date }
  /** `eq` of any of `values` (non-empty). */
  | { readonly kind: 'in'; readonly path: FilterPath; readonly values: readonly (JsonValue | Date)[] }
  /** Some value at the path (an element, where it is an array) of the operand's type compares so. */
  | { readonly kind: 'cmp'; readonly path: FilterPath; readonly op: 'gt' | 'gte' | 'lt' | 'lte'; readonly value: OrderedOperand }
  | { readonly kind: 'exists'; readonly path: FilterPath; readonly value: boolean }
  | { readonly kind: 'size'; readonly path: FilterPath; readonly value: number }
  /** Some value at the path is an array with an element that matches `match` (objects only, for the fields form). */
  | { readonly kind: 'elemMatch'; readonly path: FilterPath; readonly objectsOnly: boolean; readonly match: FilterNode }

/** Limits of one filter: deeper or larger filters are refused before anything is sent. */
export const FILTER_LIMITS = { depth: 8, nodes: 256 } as const

const FIELD_OPERATORS = new Set([
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$all',
  '$size',
  '$exists',
  '$elemMatch',
  '$not',
])
const LOGICAL_OPERATORS = new Set(['$and', '$or', '$nor'])

/**
 * Keys that look like operators without their `$` (LangChain's and other stores' dialects), with
 * what to write instead. As every key of a field's object value (`{ source: { in: [...] } }`) they
 * would be an equality with that object and match nothing, silently, so the parser refuses them; an
 * equality with such an object is written `{ source: { $eq: { in: [...] } } }`.
 */
export const BARE_OPERATOR_KEYS: ReadonlyMap<string, string> = new Map([
  ['in', '$in'],
  ['nin', '$nin'],
  ['gt', '$gt'],
  ['gte', '$gte'],
  ['lt', '$lt'],
  ['lte', '$lte'],
  ['ne', '$ne'],
  ['eq', '$eq'],
  ['exists', '$exists'],
  ['and', '$and'],
  ['or', '$or'],
  ['not', '$not'],
  ['contains', '$all'],
])
const ORDER_OPS = { $gt: 'gt', $gte: 'gte', $lt: 'lt', $lte: 'lte' } as const
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The always-true filter (`{}`). */
export const MATCH_ALL: FilterNode = { kind: 'const', value: true }

/**
 * Validates a filter and returns its tree; a bad filter is an {@link InvalidArgumentError} that says
 * where, and nothing is sent. `undefined` and `{}` match everything.
 *
 * ### Examples
 * ```ts
 * parseFilter({ price: { $lt: 10 } }, 'search filter') // { kind: 'cmp', path: ['price'], op: 'lt', value: 10 }
 * ```
 */
export function parseFilter(filter: unknown, where: string): FilterNode {
  if (filter === undefined) return MATCH_ALL
  const parser = new Parser(where)
  return parser.query(filter, where, 1)
}

/**
 * A filter tree as a string, equal for equal filters (a `Date` operand kept apart from the string
 * of its instant): the key under which what a filter matched can be remembered.
 *
 * ### Examples
 * ```ts
 * filterKey(parseFilter({ a: 1 }, 'f')) === filterKey(parseFilter({ a: { $eq: 1 } }, 'f')) // true
 * ```
 */
export function filterKey(node: FilterNode): string {
  return JSON.stringify(node, function (this: Record<string, unknown>, key, value) {
    const raw = this[key]
    return raw instanceof Date ? { $date: raw.getTime() } : value
  })
}

/** Whether a parsed filter is the match-everything filter (`{}`). */
export function matchesEverything(node: FilterNode): boolean {
  return node.kind === 'const' && node.value
}

class Parser {
  #nodes = 0
  constructor(readonly where: string) {}

  fail(at: string, message: string): never {
    throw new InvalidArgumentError(`${this.where}: ${at === this.where ? '' : `${at}: `}${message}`)
  }

  node<N extends FilterNode>(n: N, at: string): N {
    if (++this.#nodes > FILTER_LIMITS.nodes) this.fail(at, `a filter has at most ${FILTER_LIMITS.nodes} conditions`)
    return n
  }

  depth(at: string, depth: number): void {
    if (depth > FILTER_LIMITS.depth) this.fail(at, `a filter nests at most ${FILTER_LIMITS.depth} levels`)
  }

  /** A query object: fields and logical operators, all ANDed. */
  query(value: unknown, at: string, depth: number): FilterNode {
    this.depth(at, depth)
    if (!isPlainObject(value)) this.fail(at, `a filter is a plain object, got ${describe(value)}`)
    const parts: FilterNode[] = []
    for (const [key, item] of Object.entries(value)) {
      const here = `${at}.${key}`
      if (key.startsWith('$')) {
        if (!LOGICAL_OPERATORS.has(key)) {
          this.fail(here, `unknown operator ${key}${FIELD_OPERATORS.has(key) ? ' here (it belongs under a field)' : ''}`)
        }
        if (!Array.isArray(item) || item.length === 0) this.fail(here, `${key} takes a non-empty array of filters`)
        const children = item.map((sub, i) => this.query(sub, `${here}[${i}]`, depth + 1))
        const any = children.length === 1 ? children[0]! : this.node({ kind: key === '$and' ? 'and' : 'or', children }, here)
        parts.push(key === '$nor' ? this.node({ kind: 'not', child: any }, here) : any)
      } else {
        if ((key === 'and' || key === 'or') && Array.isArray(item) && item.length > 0 && item.every(isPlainObject)) {
          this.bareLogical(key, here)
        }
        parts.push(this.field(this.path(key, here), item, here, depth))
      }
    }
    if (parts.length === 0) return MATCH_ALL
    return parts.length === 1 ? parts[0]! : this.node({ kind: 'and', children: parts }, at)
  }

  path(key: string, at: string): FilterPath {
    this.text(key, at, 'a key')
    const segments = key.split('.')
    if (segments.some((s) => s.length === 0)) this.fail(at, `${JSON.stringify(key)} is not a path: keys and dotted segments are non-empty`)
    return segments
  }

  /** A field's condition: operators (every key `$…`), or a value it must equal. */
  field(path: FilterPath, value: unknown, at: string, depth: number): FilterNode {
    this.depth(at, depth)
    if (isPlainObject(value)) {
      const keys = Object.keys(value)
      const operators = keys.filter((k) => k.startsWith('$'))
      if (operators.length > 0) {
        if (operators.length !== keys.length) this.fail(at, 'an object mixes operators ($…) and fields; write one or the other')
        return this.operators(path, value, at, depth)
      }
      if (keys.length > 0 && keys.every((k) => BARE_OPERATOR_KEYS.has(k))) this.bareOperators(keys, at)
    }
    return this.node({ kind: 'eq', path, value: this.operand(value, at) }, at)
  }

  /** Refuses `{ field: { in: [...] } }`: operators start with `$`; `$eq` matches such an object literally. */
  bareOperators(keys: readonly string[], at: string): never {
    const hint = keys
      .map((k) => {
        const op = BARE_OPERATOR_KEYS.get(k)!
        if (k === 'and' || k === 'or') return `${op} (at the query level: { ${op}: [{ field: … }, …] })`
        if (k === 'contains') return `$all (every listed value an element of the array) or { field: value } (any element equals it)`
        return op
      })
      .join(', ')
    const literal = `{ $eq: { ${keys.map((k) => `${k}: …`).join(', ')} } }`
    return this.fail(
      at,
      `${keys.map((k) => JSON.stringify(k)).join(', ')} ${keys.length === 1 ? 'is not an operator' : 'are not operators'}: ` +
        `did you mean ${hint}? pgscale's operators start with $ (MongoDB's query language); ` +
        `to match an object with ${keys.length === 1 ? 'that key' : 'those keys'} literally, write ${literal}`,
    )
  }

  /** Refuses `{ or: [{ … }, { … }] }` at the query level: logical operators start with `$`. */
  bareLogical(key: 'and' | 'or', at: string): never {
    return this.fail(
      at,
      `"${key}" is not an operator: did you mean $${key}? (e.g. { $${key}: [{ a: 1 }, { b: 2 }] }); ` +
        `to match a field named ${key} literally, write { ${key}: { $eq: [...] } }`,
    )
  }

  operators(path: FilterPath, ops: Record<string, unknown>, at: string, depth: number): FilterNode {
    const parts: FilterNode[] = []
    for (const [op, operand] of Object.entries(ops)) {
      const here = `${at}.${op}`
      parts.push(this.operator(path, op, operand, here, depth))
    }
    if (parts.length === 0) this.fail(at, 'an operator object needs at least one operator')
    return parts.length === 1 ? parts[0]! : this.node({ kind: 'and', children: parts }, at)
  }

  operator(path: FilterPath, op: string, operand: unknown, at: string, depth: number): FilterNode {
    switch (op) {
      case '$eq':
        return this.node({ kind: 'eq', path, value: this.operand(operand, at) }, at)
      case '$ne':
        return this.node({ kind: 'not', child: this.node({ kind: 'eq', path, value: this.operand(operand, at) }, at) }, at)
      case '$in':
      case '$nin': {
        const any = this.anyOf(path, operand, at)
        return op === '$in' ? any : this.node({ kind: 'not', child: any }, at)
      }
      case '$all': {
        if (!Array.isArray(operand)) this.fail(at, `$all takes an array, got ${describe(operand)}`)
        if (operand.length === 0) return this.node({ kind: 'const', value: false }, at)
        const children = operand.map((v, i) => this.node({ kind: 'eq', path, value: this.operand(v, `${at}[${i}]`) }, at))
        return children.length === 1 ? children[0]! : this.node({ kind: 'and', children }, at)
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        return this.node({ kind: 'cmp', path, op: ORDER_OPS[op], value: this.ordered(operand, at) }, at)
      case '$exists':
        if (typeof operand !== 'boolean') this.fail(at, `$exists takes true or false, got ${describe(operand)}`)
        return this.node({ kind: 'exists', path, value: operand }, at)
      case '$size':
        if (!Number.isSafeInteger(operand) || (operand as number) < 0) {
          this.fail(at, `$size takes a non-negative integer, got ${describe(operand)}`)
        }
        return this.node({ kind: 'size', path, value: operand as number }, at)
      case '$not':
        if (!isPlainObject(operand) || Object.keys(operand).length === 0 || !Object.keys(operand).every((k) => k.startsWith('$'))) {
          this.fail(at, `$not takes a non-empty object of operators, e.g. { $not: { $gt: 5 } }, got ${describe(operand)}`)
        }
        return this.node({ kind: 'not', child: this.operators(path, operand, at, depth + 1) }, at)
      case '$elemMatch': {
        if (!isPlainObject(operand) || Object.keys(operand).length === 0) {
          this.fail(at, `$elemMatch takes a non-empty object (operators for scalar elements, fields for objects), got ${describe(operand)}`)
        }
        const keys = Object.keys(operand)
        // Operators on the element itself ({ $gte: 80, $lt: 85 }), or a filter of the element's fields.
        const onElement = keys.every((k) => FIELD_OPERATORS.has(k))
        const match = onElement ? this.operators([], operand, at, depth + 1) : this.query(operand, at, depth + 1)
        return this.node({ kind: 'elemMatch', path, objectsOnly: !onElement, match }, at)
      }
      default:
        return this.fail(at, `unknown operator ${op}`)
    }
  }

  anyOf(path: FilterPath, operand: unknown, at: string): FilterNode {
    if (!Array.isArray(operand)) this.fail(at, `${at.slice(at.lastIndexOf('.') + 1)} takes an array, got ${describe(operand)}`)
    if (operand.length === 0) return this.node({ kind: 'const', value: false }, at)
    const values = operand.map((v, i) => this.operand(v, `${at}[${i}]`))
    return this.node({ kind: 'in', path, values }, at)
  }

  /** An equality operand: any JSON value, or a `Date` (an instant). */
  operand(value: unknown, at: string): JsonValue | Date {
    if (value instanceof Date) return this.date(value, at)
    return this.json(value, at)
  }

  /** A comparison operand: a finite number, a string or a Date. */
  ordered(value: unknown, at: string): OrderedOperand {
    if (value instanceof Date) return this.date(value, at)
    if (typeof value === 'string') return this.text(value, at, 'a string')
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) this.fail(at, `${value} is not a finite number`)
      return value
    }
    return this.fail(at, `a comparison takes a number, a string or a Date, got ${describe(value)}`)
  }

  date(value: Date, at: string): Date {
    if (Number.isNaN(value.getTime())) this.fail(at, 'an invalid Date')
    return value
  }

  json(value: unknown, at: string): JsonValue {
    if (value === null || typeof value === 'boolean') return value
    if (typeof value === 'string') return this.text(value, at, 'a string')
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) this.fail(at, `${value} is not a finite number (JSON cannot hold it)`)
      return value
    }
    if (Array.isArray(value)) return value.map((v, i) => this.json(v, `${at}[${i}]`))
    if (isPlainObject(value)) {
      const out: Record<string, JsonValue> = {}
      for (const [k, v] of Object.entries(value)) out[this.text(k, at, 'a key')] = this.json(v, `${at}.${k}`)
      return out
    }
    return this.fail(
      at,
      value === undefined
        ? 'undefined is not a value (it would vanish from JSON and widen the filter)'
        : `${describe(value)} is not a JSON value`,
    )
  }

  text(value: string, at: string, what: string): string {
    if (value.includes('\u0000')) this.fail(at, `${what} cannot contain NUL (\\u0000), which PostgreSQL's JSON cannot hold`)
    if (LONE_SURROGATE.test(value)) this.fail(at, `${what} has a lone surrogate (not well-formed text)`)
    return value
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (value instanceof Date) return 'a Date'
  if (typeof value === 'object') return isPlainObject(value) ? 'an object' : `a ${value.constructor?.name ?? 'non-plain object'}`
  if (typeof value === 'string') return JSON.stringify(value)
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : typeof value
}
