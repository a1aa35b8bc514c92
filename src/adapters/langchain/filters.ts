import { InvalidArgumentError } from '../../errors.js'
import type { MetadataFilter } from '../../filter/filter-tree.js'

/**
 * The operator keys of LangChain's community `PGVectorStore` filter dialect (`{ kind: { in: [...] } }`).
 * pgscale's language is MongoDB's (`{ kind: { $in: [...] } }`), in which such an object is an
 * equality with an object of those keys: it would match nothing, silently.
 */
const PGVECTOR_STORE_OPERATORS = new Set(['in', 'notIn', 'arrayContains', 'gt', 'gte', 'lt', 'lte', 'neq'])

const MONGO_SPELLING: Record<string, string> = {
  in: '$in',
  notIn: '$nin',
  arrayContains: '$in (on an array field: any element)',
  gt: '$gt',
  gte: '$gte',
  lt: '$lt',
  lte: '$lte',
  neq: '$ne',
}

const LOGICAL = new Set(['$and', '$or', '$nor'])

/**
 * The filter a LangChain call passed, checked for the one mistake pgscale's own validation cannot
 * see: a condition written in the community `PGVectorStore` dialect (every key of a field's object
 * one of `in notIn arrayContains gt gte lt lte neq`), refused with the MongoDB spelling to use. An
 * equality with such an object is still written `{ field: { $eq: { in: [...] } } }`. Everything else
 * (and the shape of the filter) is the store's to check when it runs; `undefined` is no filter.
 *
 * ### Examples
 * ```ts
 * checkFilter({ kind: { $in: ['faq', 'blog'] } }) // returned as it is
 * checkFilter({ kind: { in: ['faq', 'blog'] } }) // throws InvalidArgumentError: write { kind: { $in: [...] } }
 * ```
 */
export function checkFilter(filter: unknown): MetadataFilter | undefined {
  if (filter === undefined) return undefined
  walk(filter, 'filter', 1)
  return filter as MetadataFilter
}

function walk(query: unknown, at: string, depth: number): void {
  // Deeper than the store allows is the store's error; plain objects only (the store refuses the rest).
  if (depth > 16 || !isPlainObject(query)) return
  for (const [key, value] of Object.entries(query)) {
    if (LOGICAL.has(key) && Array.isArray(value)) {
      value.forEach((sub, i) => walk(sub, `${at}.${key}[${i}]`, depth + 1))
      continue
    }
    if (key.startsWith('$') || !isPlainObject(value)) continue
    const keys = Object.keys(value)
    if (keys.length > 0 && keys.every((k) => PGVECTOR_STORE_OPERATORS.has(k))) {
      const rewrite = keys.map((k) => `${MONGO_SPELLING[k]}`).join(', ')
      throw new InvalidArgumentError(
        `${at}.${key}: ${JSON.stringify(keys)} is the filter dialect of LangChain's PGVectorStore; pgscale filters are MongoDB's ` +
          `(use ${rewrite}, e.g. { ${JSON.stringify(key)}: { $in: [...] } }); for an equality with such an object write { $eq: {...} }`,
      )
    }
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}
