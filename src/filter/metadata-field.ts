import { InvalidArgumentError } from '../errors.js'
import type { FilterPath } from './filter-tree.js'

/** The type a metadata index holds at its path. */
export type MetadataFieldType = 'string' | 'number' | 'boolean' | 'timestamp'

/** A declared metadata field: a path and the type its index holds. */
export interface MetadataField {
  /** Dotted segments, e.g. `['owner', 'team']`. */
  readonly path: FilterPath
  readonly type: MetadataFieldType
}

export const METADATA_FIELD_TYPES: readonly MetadataFieldType[] = ['string', 'number', 'boolean', 'timestamp']

/** The key of a field in lookups: its path and type. */
export function fieldKey(path: FilterPath, type: MetadataFieldType): string {
  return `${type}:${JSON.stringify(path)}`
}

/**
 * A SQL text constant for `value`, safe whatever the session's `standard_conforming_strings`: an
 * escape string (`E'…'`) where every character but ASCII letters, digits, `_` and space is a
 * `\uXXXX`/`\UXXXXXXXX` escape — so it holds no quote, no backslash of its own and no `$` (the
 * one-message path replaces `$n`). NUL is refused (text cannot hold it).
 *
 * ### Examples
 * ```ts
 * sqlTextConstant("it's") // "E'it\\u0027s'"
 * ```
 */
export function sqlTextConstant(value: string): string {
  let out = "E'"
  for (const ch of value) {
    const cp = ch.codePointAt(0)!
    if (cp === 0) throw new InvalidArgumentError('text cannot contain NUL (\\u0000)')
    if ((cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a) || cp === 0x5f || cp === 0x20) out += ch
    else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`
    else out += `\\U${cp.toString(16).padStart(8, '0')}`
  }
  return `${out}'`
}

/**
 * The typed value at exactly `path` of the JSON in `column`, or null (missing, another type, or an
 * array anywhere on the path: `->` with a key gives null on an array). This is the expression a
 * metadata index is built on; the filter compiler emits the very same text for that path, so the
 * planner can match the two.
 *
 * ### Examples
 * ```ts
 * fieldExpression('metadata', ['price'], 'number', 'pgscale_iso_instant')
 * // "(case when jsonb_typeof((metadata -> E'price')) = 'number' then ((metadata -> E'price'))::numeric end)"
 * ```
 */
export function fieldExpression(column: string, path: FilterPath, type: MetadataFieldType, instantFunction: string): string {
  const value = `(${column}${path.map((k) => ` -> ${sqlTextConstant(k)}`).join('')})`
  switch (type) {
    case 'string':
      return `((case when jsonb_typeof(${value}) = 'string' then ${value} #>> '{}' end) collate "C")`
    case 'number':
      return `(case when jsonb_typeof(${value}) = 'number' then (${value})::numeric end)`
    case 'boolean':
      return `(case when jsonb_typeof(${value}) = 'boolean' then (${value})::boolean end)`
    case 'timestamp':
      return `${instantFunction}(${value})`
  }
}

/** The declared fields of a store, looked up by path and type. */
export class MetadataFields {
  readonly #byKey = new Map<string, MetadataField>()

  constructor(fields: Iterable<MetadataField> = []) {
    for (const f of fields) this.#byKey.set(fieldKey(f.path, f.type), f)
  }

  has(path: FilterPath, type: MetadataFieldType): boolean {
    return this.#byKey.has(fieldKey(path, type))
  }

  get size(): number {
    return this.#byKey.size
  }

  list(): MetadataField[] {
    return [...this.#byKey.values()]
  }
}
