import type { FilterNode, FilterPath, JsonValue } from './filter-tree.js'
import { fieldExpression, type MetadataFields, type MetadataFieldType } from './metadata-field.js'
import { arrayText } from '../sql/literal.js'

/** A compiled filter: a SQL boolean expression and the text values of its placeholders, in order. */
export interface CompiledFilter {
  /** E.g. `jsonb_path_exists(metadata, $4::jsonpath, $5::jsonb, true)`; `true` for the empty filter. */
  sql: string
  /** The values of `$first`, `$first + 1`, …: jsonpath texts, one jsonb of operands, array constants. */
  params: string[]
}

/** Where the compiled expression looks and what it may use. */
export interface FilterCompileOptions {
  /** The placeholder number of the first parameter the filter adds. */
  first: number
  /** The jsonb column (default `metadata`). */
  column?: string
  /** Declared metadata fields: conditions on them use their expression index. */
  fields?: MetadataFields
  /** The qualified `pgscale_iso_instant` function (timestamps). */
  instantFunction: string
}

/**
 * Compiles a filter tree into SQL over a jsonb column. Every key and value travels as a bound
 * parameter: the paths as jsonpath texts (keys written as JSON strings), the operands in one jsonb
 * object read by the paths' `$vN` variables and by `($V::jsonb -> 'vN')`. Negations are SQL `not`
 * over expressions that are never null, so `$ne`, `$nin`, `$not` and `$nor` match rows where the
 * field is missing. A condition on a declared field of its type becomes `(index_expr op value or
 * (index_expr is null and <general form>))`: exact, and served by the field's expression index.
 *
 * ### Examples
 * ```ts
 * compileFilter(parseFilter({ kind: 'invoice' }, 'f'), { first: 4, instantFunction: 'pgscale_iso_instant' })
 * // { sql: 'jsonb_path_exists(metadata, $4::jsonpath, $5::jsonb, true)', params: ['lax $."kind" ? (@.type() != "array" && @ == $v0)', '{"v0":"invoice"}'] }
 * ```
 */
export function compileFilter(node: FilterNode, options: FilterCompileOptions): CompiledFilter {
  if (node.kind === 'const') return { sql: node.value ? 'true' : 'false', params: [] }
  const compiler = new Compiler(options)
  const sql = compiler.node(node, options.column ?? 'metadata', 'top')
  return { sql, params: compiler.finish() }
}

class Compiler {
  readonly vars: Record<string, JsonValue> = {}
  readonly params: string[] = []
  #aliases = 0
  #variables = 0
  /** The placeholder of the operands' jsonb, allocated where first used (a statement may not leave a parameter unused). */
  #vars: { placeholder: string; index: number } | undefined

  constructor(readonly options: FilterCompileOptions) {}

  /** A placeholder holding `text`. */
  param(text: string, cast: string): string {
    this.params.push(text)
    return `$${this.options.first + this.params.length - 1}::${cast}`
  }

  get #varsParam(): string {
    if (!this.#vars) {
      const placeholder = this.param('', 'jsonb')
      this.#vars = { placeholder, index: this.params.length - 1 }
    }
    return this.#vars.placeholder
  }

  /** The parameters, the operands' jsonb in its place. */
  finish(): string[] {
    if (this.#vars) this.params[this.#vars.index] = JSON.stringify(this.vars)
    return this.params
  }

  /** A jsonpath variable holding `value`: its name in jsonpath and its SQL accessor. */
  variable(value: JsonValue): { name: string; json: string; text: string } {
    const name = `v${this.#variables++}`
    this.vars[name] = value
    return { name: `$${name}`, json: `(${this.#varsParam} -> '${name}')`, text: `(${this.#varsParam} ->> '${name}')` }
  }

  /**
   * `at`: `top` where the expression sits under no `not` and outside `$elemMatch` — the only place
   * the indexed form may go, since it is null (not false) where its general form is false, which
   * `where` reads as false but `not` would turn into null.
   */
  node(node: FilterNode, root: string, at: 'top' | 'inner'): string {
    switch (node.kind) {
      case 'const':
        return node.value ? 'true' : 'false'
      case 'and':
        return at === 'top' ? this.andTop(node.children, root) : `(${node.children.map((c) => this.node(c, root, at)).join(' and ')})`
      case 'or':
        return `(${node.children.map((c) => this.node(c, root, at)).join(' or ')})`
      case 'not':
        return `(not ${this.node(node.child, root, 'inner')})`
      case 'eq':
        return (at === 'top' && this.indexed(node, root)) || this.eq(root, node.path, node.value)
      case 'in':
        return (at === 'top' && this.indexed(node, root)) || this.in(root, node.path, node.values)
      case 'cmp':
        return (at === 'top' && this.indexed(node, root)) || this.cmp(root, node.path, node.op, node.value)
      case 'exists':
        return `${node.value ? '' : 'not '}${this.exists(root, lax(node.path))}`
      case 'size': {
        const n = this.variable(node.value)
        return this.anyValue(root, lax(node.path), (x) => `jsonb_typeof(${x}) = 'array' and jsonb_array_length(${x}) = ${n.text}::int`)
      }
      case 'elemMatch': {
        const i = ++this.#aliases
        const [x, e] = [`x${i}`, `e${i}`]
        const match = this.node(node.match, e, 'inner')
        return (
          `exists (select 1 from jsonb_path_query(${root}, ${this.param(lax(node.path), 'jsonpath')}, '{}', true) ${x}` +
          ` cross join lateral jsonb_array_elements(case when jsonb_typeof(${x}) = 'array' then ${x} end) ${e}` +
          ` where ${node.objectsOnly ? `jsonb_typeof(${e}) = 'object' and ` : ''}${match})`
        )
      }
    }
  }

  /** `jsonb_path_exists` of a path (with its variables). */
  exists(root: string, path: string): string {
    return `jsonb_path_exists(${root}, ${this.param(path, 'jsonpath')}, ${this.#varsParam}, true)`
  }

  /** Some value the path yields satisfies `predicate` (SQL over the value's alias). */
  anyValue(root: string, path: string, predicate: (x: string) => string): string {
    const x = `x${++this.#aliases}`
    return `exists (select 1 from jsonb_path_query(${root}, ${this.param(path, 'jsonpath')}, '{}', true) ${x} where ${predicate(x)})`
  }

  eq(root: string, path: FilterPath, value: JsonValue | Date): string {
    if (value instanceof Date) {
      const v = this.variable(value.toISOString())
      return this.anyValue(root, `${lax(path)}[*]`, (x) => `${this.options.instantFunction}(${x}) = ${v.text}::timestamptz`)
    }
    if (value === null) return `(${this.exists(root, scalarTest(path, '@ == null'))} or not ${this.exists(root, lax(path))})`
    if (typeof value !== 'object') return this.exists(root, scalarTest(path, `@ == ${this.variable(value).name}`))
    // An array or an object: jsonb equality with the whole value, or with an element.
    const v = this.variable(value)
    return `(${this.anyValue(root, lax(path), (x) => `${x} = ${v.json}`)} or ${this.anyValue(root, `${lax(path)}[*]`, (x) => `${x} = ${v.json}`)})`
  }

  in(root: string, path: FilterPath, values: readonly (JsonValue | Date)[]): string {
    const scalars = values.filter((v): v is string | number | boolean => v !== null && typeof v !== 'object')
    const others = values.filter((v) => v === null || typeof v === 'object')
    const parts = others.map((v) => this.eq(root, path, v))
    if (scalars.length > 0) {
      // One variable holding the values: `@ == $v[*]` is true when any of them equals (jsonpath compares sequences existentially).
      const list = scalars.length === 1 ? this.variable(scalars[0]!).name : `${this.variable(scalars).name}[*]`
      parts.unshift(this.exists(root, scalarTest(path, `@ == ${list}`)))
    }
    return parts.length === 1 ? parts[0]! : `(${parts.join(' or ')})`
  }

  cmp(root: string, path: FilterPath, op: 'gt' | 'gte' | 'lt' | 'lte', value: number | string | Date): string {
    if (value instanceof Date) {
      const v = this.variable(value.toISOString())
      return this.anyValue(root, `${lax(path)}[*]`, (x) => `${this.options.instantFunction}(${x}) ${SQL_OP[op]} ${v.text}::timestamptz`)
    }
    return this.exists(root, scalarTest(path, `@ ${SQL_OP[op]} ${this.variable(value).name}`))
  }

  /**
   * A top-level `and`: its children as usual, except that comparisons on one declared field of one
   * type (`{ year: { $gte: 2020, $lt: 2024 } }`) become one condition, `((index_expr >= a and
   * index_expr < b) or (index_expr is null and <general forms>))`, so the field's index serves both
   * bounds (as separate conditions each OR has its own, and the index serves one). The same rows: a
   * scalar field is judged by the index expression, an array by the general forms, as before.
   */
  andTop(children: readonly FilterNode[], root: string): string {
    // Each indexable comparison's group: the comparisons on its field and type.
    const byField = new Map<string, Array<Extract<FilterNode, { kind: 'cmp' }>>>()
    const groupOf = new Map<FilterNode, Array<Extract<FilterNode, { kind: 'cmp' }>>>()
    for (const c of children) {
      const type = c.kind === 'cmp' ? this.indexableType(c) : undefined
      if (c.kind !== 'cmp' || !type) continue
      const key = JSON.stringify([c.path, type])
      const group = byField.get(key) ?? []
      group.push(c)
      byField.set(key, group)
      groupOf.set(c, group)
    }
    const parts: string[] = []
    const done = new Set<FilterNode>()
    for (const c of children) {
      if (done.has(c)) continue
      const group = groupOf.get(c)
      if (!group || group.length < 2) {
        parts.push(this.node(c, root, 'top'))
        continue
      }
      const forms = group.map((g) => this.indexedForm(g, root)!)
      for (const g of group) done.add(g)
      parts.push(
        `((${forms.map((f) => f.condition).join(' and ')}) or (${forms[0]!.expression} is null and ${forms.map((f) => f.general).join(' and ')}))`,
      )
    }
    return `(${parts.join(' and ')})`
  }

  /** The declared field type a condition's operands share, when the field has an index of it (else undefined). */
  indexableType(node: Extract<FilterNode, { kind: 'eq' | 'in' | 'cmp' }>): MetadataFieldType | undefined {
    const fields = this.options.fields
    if (!fields || fields.size === 0) return undefined
    const operands = node.kind === 'in' ? node.values : [node.value]
    const type = commonType(operands)
    if (!type || !fields.has(node.path, type) || (node.kind === 'in' && type === 'boolean')) return undefined
    return type
  }

  /**
   * A condition on a declared field of the operand's type, at the top level (not inside
   * `$elemMatch`): the index expression, exact where it is not null, the general form where it is.
   */
  indexed(node: Extract<FilterNode, { kind: 'eq' | 'in' | 'cmp' }>, root: string): string | undefined {
    const form = this.indexedForm(node, root)
    return form && `(${form.condition} or (${form.expression} is null and ${form.general}))`
  }

  /** The parts of {@link indexed}: the index expression, the condition on it, and the general form. */
  indexedForm(
    node: Extract<FilterNode, { kind: 'eq' | 'in' | 'cmp' }>,
    root: string,
  ): { expression: string; condition: string; general: string } | undefined {
    const type = this.indexableType(node)
    if (!type) return undefined
    const operands = node.kind === 'in' ? node.values : [node.value]
    const expression = fieldExpression(root, node.path, type, this.options.instantFunction)
    let condition: string
    if (node.kind === 'in') {
      const texts = operands.map((v) => (v instanceof Date ? v.toISOString() : (v as string | number)))
      condition = `${expression} = any(${this.param(arrayText(texts), ARRAY_CAST[type as Exclude<MetadataFieldType, 'boolean'>])})`
    } else {
      const v = this.variable(node.value instanceof Date ? node.value.toISOString() : (node.value as JsonValue))
      const operand =
        type === 'string'
          ? v.text
          : type === 'timestamp'
            ? `${v.text}::timestamptz`
            : `${v.json}::${type === 'number' ? 'numeric' : 'boolean'}`
      condition = `${expression} ${node.kind === 'eq' ? '=' : SQL_OP[node.op]} ${operand}`
    }
    const general =
      node.kind === 'eq'
        ? this.eq(root, node.path, node.value)
        : node.kind === 'in'
          ? this.in(root, node.path, node.values)
          : this.cmp(root, node.path, node.op, node.value)
    return { expression, condition, general }
  }
}

const SQL_OP = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const
const ARRAY_CAST: Record<Exclude<MetadataFieldType, 'boolean'>, string> = {
  string: 'text[]',
  number: 'numeric[]',
  timestamp: 'timestamptz[]',
}

/** The field type all operands are of, if they share one an index can hold. */
function commonType(values: readonly (JsonValue | Date)[]): MetadataFieldType | undefined {
  const types = new Set(
    values.map((v) =>
      v instanceof Date
        ? 'timestamp'
        : typeof v === 'string'
          ? 'string'
          : typeof v === 'number'
            ? 'number'
            : typeof v === 'boolean'
              ? 'boolean'
              : 'other',
    ),
  )
  if (types.size !== 1) return undefined
  const [type] = types
  return type === 'other' ? undefined : (type as MetadataFieldType)
}

/**
 * A jsonpath test of the scalars at `path` (the value, or its elements where it is an array: lax
 * mode unwraps the filter's target once). An element that is itself an array is skipped — lax
 * comparisons would unwrap it again — so `[[1]]` does not equal `1`, as in MongoDB.
 */
function scalarTest(path: FilterPath, predicate: string): string {
  return `${lax(path)} ? (@.type() != "array" && ${predicate})`
}

/** A lax jsonpath to the values at `path`: `lax $."owner"."team"` (keys as JSON strings). */
export function lax(path: FilterPath): string {
  return `lax $${path.map((k) => `.${JSON.stringify(k)}`).join('')}`
}
