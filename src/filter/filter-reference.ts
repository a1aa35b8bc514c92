import { parseFilter, type FilterNode, type FilterPath, type JsonValue, type MetadataFilter } from './filter-tree.js'
import { isoInstant } from './iso-instant.js'

/**
 * The reference evaluator: whether `metadata` matches `filter`, decided in TypeScript by the rules
 * the SQL compiler implements (docs/store.md "Filters"). The store never uses it to answer; tests
 * compare the server's answers with it, and apps can use it to check a filter on their own data.
 *
 * ### Examples
 * ```ts
 * matchesFilter({ stock: [{ loc: 'A' }, { loc: 'B' }] }, { 'stock.loc': 'B' }) // true
 * matchesFilter({ price: '5' }, { price: { $lt: 10 } }) // false: a string never compares with a number
 * ```
 */
export function matchesFilter(metadata: Record<string, unknown>, filter: MetadataFilter): boolean {
  return evaluate(metadata as JsonValue, parseFilter(filter, 'matchesFilter'))
}

/** {@link matchesFilter} on a parsed tree. */
export function evaluate(root: JsonValue, node: FilterNode): boolean {
  switch (node.kind) {
    case 'const':
      return node.value
    case 'and':
      return node.children.every((c) => evaluate(root, c))
    case 'or':
      return node.children.some((c) => evaluate(root, c))
    case 'not':
      return !evaluate(root, node.child)
    case 'eq':
      return equals(root, node.path, node.value)
    case 'in':
      return node.values.some((v) => equals(root, node.path, v))
    case 'cmp':
      return elementsAt(root, node.path).some((e) => {
        const c = compare(e, node.value)
        if (c === undefined) return false
        return node.op === 'gt' ? c > 0 : node.op === 'gte' ? c >= 0 : node.op === 'lt' ? c < 0 : c <= 0
      })
    case 'exists':
      return valuesAt(root, node.path).length > 0 === node.value
    case 'size':
      return valuesAt(root, node.path).some((v) => Array.isArray(v) && v.length === node.value)
    case 'elemMatch':
      return valuesAt(root, node.path).some(
        (v) => Array.isArray(v) && v.some((el) => (!node.objectsOnly || isObject(el)) && evaluate(el, node.match)),
      )
  }
}

/**
 * The values at a path, as PostgreSQL's lax jsonpath walks it: a key applied to an array is applied
 * to each of its elements (one level: an array inside an array is not entered); a missing key
 * yields nothing. The last value is returned as it is (an array stays an array).
 */
export function valuesAt(root: JsonValue, path: FilterPath): JsonValue[] {
  let current: JsonValue[] = [root]
  for (const key of path) {
    const next: JsonValue[] = []
    for (const value of current) {
      if (Array.isArray(value)) {
        for (const el of value) if (isObject(el) && Object.hasOwn(el, key)) next.push(el[key]!)
      } else if (isObject(value) && Object.hasOwn(value, key)) {
        next.push(value[key]!)
      }
    }
    current = next
  }
  return current
}

/** The values at a path with each array replaced by its elements (one level): what comparisons look at. */
export function elementsAt(root: JsonValue, path: FilterPath): JsonValue[] {
  return valuesAt(root, path).flatMap((v) => (Array.isArray(v) ? v : [v]))
}

function equals(root: JsonValue, path: FilterPath, operand: JsonValue | Date): boolean {
  if (operand instanceof Date) return elementsAt(root, path).some((e) => isoInstant(e) === operand.getTime())
  if (operand === null) return valuesAt(root, path).length === 0 || elementsAt(root, path).some((e) => e === null)
  if (typeof operand !== 'object') return elementsAt(root, path).some((e) => e === operand)
  // An array or object: the whole value equals it, or an element does.
  return valuesAt(root, path).some((v) => deepEqual(v, operand)) || elementsAt(root, path).some((e) => deepEqual(e, operand))
}

/** The sign of `value` against `operand` when they are of one type (numbers, strings by code point, timestamps); else undefined. */
function compare(value: JsonValue, operand: number | string | Date): number | undefined {
  if (operand instanceof Date) {
    const instant = isoInstant(value)
    return instant === undefined ? undefined : Math.sign(instant - operand.getTime())
  }
  if (typeof operand === 'number') return typeof value === 'number' ? Math.sign(value - operand) : undefined
  return typeof value === 'string' ? compareCodePoints(value, operand) : undefined
}

/** Strings in Unicode code-point order (not UTF-16 units, not a linguistic collation). */
export function compareCodePoints(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!)
  const y = Array.from(b, (c) => c.codePointAt(0)!)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1
  return Math.sign(x.length - y.length)
}

/** JSON equality as jsonb has it: numbers by value, objects by their keys regardless of order, arrays in order. */
function deepEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]!))
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a)
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && deepEqual(a[k]!, b[k]!))
  }
  return false
}

function isObject(value: unknown): value is { [key: string]: JsonValue } {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
