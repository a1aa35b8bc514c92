import { InvalidArgumentError } from '../../errors.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'

/**
 * The operator keys of LangChain's community `PGVectorStore` filter dialect (`{ kind: { in: [...] } }`).
 * pgscale's language is MongoDB's (`{ kind: { $in: [...] } }`), in which such an object would be an
 * equality with an object of those keys: the adapter translates them instead, with PGVectorStore's
 * meaning.
 */
const PGVECTOR_STORE_OPERATORS = new Set(['in', 'notIn', 'arrayContains', 'gt', 'gte', 'lt', 'lte', 'neq'])

const LOGICAL = new Set(['$and', '$or', '$nor'])

/**
 * The filter a LangChain call passed, with conditions written in the community `PGVectorStore`
 * dialect (every key of a field's object one of `in notIn arrayContains gt gte lt lte neq`)
 * translated into pgscale's language with the meaning `PGVectorStore` (@langchain/community 1.1)
 * gives them — its SQL compares `metadata->>'f'` as text, so a row without the field (or with a
 * JSON null) is never matched by `in`, `notIn`, `arrayContains` or a range, and always by `neq`;
 * values compare as their texts (`4` and `'4'`). So `notIn` is `{ $nin: [..., null] }` (the field
 * there, not null, none of them), not MongoDB's `$nin`. A range with a non-number operand is
 * refused (PGVectorStore ignores it, matching every row). Everything else is pgscale's language,
 * the store's to check when it runs; `undefined` is no filter. An equality with an object of those
 * keys is written `{ field: { $eq: { in: [...] } } }`.
 *
 * ### Examples
 * ```ts
 * checkFilter({ kind: { $in: ['faq', 'blog'] } }) // returned as it is
 * checkFilter({ kind: { notIn: ['faq'] } }) // { kind: { $nin: ['faq', null] } }: rows without kind are not matched
 * ```
 */
export function checkFilter(filter: unknown): MetadataFilter | undefined {
  if (filter === undefined) return undefined
  return walk(filter, 'filter', 1) as MetadataFilter
}

function walk(query: unknown, at: string, depth: number): unknown {
  // Deeper than the store allows is the store's error; plain objects only (the store refuses the rest).
  if (depth > 16 || !isPlainObject(query)) return query
  const out: Record<string, unknown> = {}
  const and: unknown[] = []
  for (const [key, value] of Object.entries(query)) {
    if (LOGICAL.has(key) && Array.isArray(value)) {
      out[key] = value.map((sub, i) => walk(sub, `${at}.${key}[${i}]`, depth + 1))
      continue
    }
    const keys = isPlainObject(value) ? Object.keys(value) : []
    if (key.startsWith('$') || keys.length === 0 || !keys.every((k) => PGVECTOR_STORE_OPERATORS.has(k))) {
      out[key] = value
      continue
    }
    and.push(...dialect(key, value as Record<string, unknown>, `${at}.${key}`))
  }
  if (and.length === 0) return out
  if (Object.keys(out).length > 0) and.unshift(out)
  return and.length === 1 ? and[0] : { $and: and }
}

/** One field's PGVectorStore conditions, each as a pgscale filter with PGVectorStore's meaning. */
function dialect(field: string, ops: Record<string, unknown>, at: string): MetadataFilter[] {
  const list = (op: string, value: unknown): unknown[] => {
    if (!Array.isArray(value)) throw new InvalidArgumentError(`${at}.${op} takes an array of values (PGVectorStore's ${op})`)
    return value
  }
  return Object.entries(ops).map(([op, value]): MetadataFilter => {
    switch (op) {
      case 'in': // text in (…): never a missing or null field
        return { [field]: { $in: list(op, value).flatMap(twins) } }
      case 'notIn': // text not in (…): never a missing or null field either
        return { [field]: { $nin: [...list(op, value).flatMap(twins), null] } }
      case 'arrayContains': // ?| of texts: a string element (or the string itself) among them
        return { [field]: { $in: list(op, value).map(String) } }
      case 'neq': // text is null or text <> v: missing and null fields included
        return { [field]: { $nin: twins(value) } } as MetadataFilter
      default: // gt gte lt lte: (text)::numeric, numbers only
        if (typeof value !== 'number' || !Number.isFinite(value)) {
          throw new InvalidArgumentError(
            `${at}.${op} takes a number (PGVectorStore ignores a ${op} of another type and matches every row; write $${op} with a string or a Date)`,
          )
        }
        return { [field]: { [`$${op}`]: value } }
    }
  })
}

/** A scalar with the scalars of the same text (`4` and `'4'`, `true` and `'true'`): PGVectorStore compares texts. */
function twins(value: unknown): Array<string | number | boolean | null> {
  if (typeof value === 'number') return Number.isFinite(value) ? [value, String(value)] : [String(value)]
  if (typeof value === 'boolean') return [value, String(value)]
  if (typeof value !== 'string') return [String(value)]
  if (value === 'true' || value === 'false') return [value, value === 'true']
  const n = Number(value)
  return value.trim() !== '' && Number.isFinite(n) && String(n) === value ? [value, n] : [value]
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}
