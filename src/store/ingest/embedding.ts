import { DimensionMismatchError, InvalidArgumentError } from '../../errors.js'
import { VECTOR_TYPES, type Distance, type VectorType } from '../config/index.js'
import { assertIntegerIn } from '../../util/assert-integer.js'

/** The largest finite float4: pgvector stores 4-byte floats, and a larger value overflows (22003). */
export const FLOAT4_MAX = VECTOR_TYPES.vector.maxAbs

/** An embedding as the store accepts it. */
export type Embedding = readonly number[] | Float32Array | Float64Array

/**
 * Checks an embedding: an array of `dimensions` finite numbers within the column type's range
 * (`halfvec`: ±65,504), and not all zero under cosine distance (a zero vector has no direction:
 * every distance would be NaN). Throws a typed error.
 */
export function assertEmbedding(
  value: unknown,
  dimensions: number,
  distance: Distance,
  where: string,
  type: VectorType = 'vector',
): Embedding {
  const maxAbs = VECTOR_TYPES[type].maxAbs
  if (!Array.isArray(value) && !(value instanceof Float32Array) && !(value instanceof Float64Array)) {
    throw new InvalidArgumentError(`${where}: the embedding must be an array of numbers`)
  }
  const v = value as ArrayLike<unknown>
  if (v.length !== dimensions) throw new DimensionMismatchError(dimensions, v.length, where)
  let nonZero = false
  for (let i = 0; i < v.length; i++) {
    const x = v[i]
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      throw new InvalidArgumentError(`${where}: embedding[${i}] is ${String(x)}; every value must be a finite number`)
    }
    if (Math.abs(x) > maxAbs) {
      throw new InvalidArgumentError(
        `${where}: embedding[${i}] is ${x}, beyond ${type === 'vector' ? 'a 4-byte float' : "halfvec's 2-byte float"} (±${maxAbs})`,
      )
    }
    if (x !== 0) nonZero = true
  }
  if (!nonZero && distance === 'cosine') {
    throw new InvalidArgumentError(`${where}: the embedding is all zeros, which has no cosine distance`)
  }
  return value as Embedding
}

/** A lone surrogate: not well-formed UTF-16. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/**
 * Checks a tenant or document id: a non-empty string of at most 256 characters that PostgreSQL
 * stores as it is: well-formed UTF-16 (a lone surrogate would be sent as U+FFFD, so two different
 * ids would name one tenant) and no NUL character (text cannot hold it).
 */
export function assertId(value: unknown, what: 'tenant id' | 'document id'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    throw new InvalidArgumentError(`${what} must be a non-empty string of at most 256 characters, got ${JSON.stringify(value)}`)
  }
  if (LONE_SURROGATE.test(value) || value.includes('\u0000')) {
    throw new InvalidArgumentError(`${what} ${JSON.stringify(value)} has a lone surrogate or a NUL character; ids must be well-formed text`)
  }
  return value
}

/** Checks `k`: an integer from 1 to 1000. */
export function assertK(value: unknown): number {
  return assertIntegerIn(value, 1, 1000, 'k')
}

/** Checks metadata: a plain JSON object (or undefined → `{}`). */
export function assertMetadata(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${where}: metadata must be a plain object`)
  }
  return value as Record<string, unknown>
}

/** An escape in JSON text that jsonb refuses: `\u0000` (NUL) or a lone surrogate, not itself escaped. */
const JSONB_REFUSES = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i

/**
 * Checks metadata and returns its JSON text, as a `jsonb` parameter takes it: a plain object
 * ({@link assertMetadata}; undefined → `{}`) that `JSON.stringify` writes as an object (no BigInt,
 * no cycle, no `toJSON` turning it into something else, a `Date`) and whose strings and keys
 * `jsonb` can hold (no NUL, no lone surrogate). Throws an
 * {@link InvalidArgumentError} otherwise, so nothing is sent.
 *
 * ### Examples
 * ```ts
 * metadataJson({ kind: 'invoice' }, 'upsertChunks row 0') // '{"kind":"invoice"}'
 * metadataJson({ bad: 'a\u0000b' }, 'upsertChunks row 1') // throws InvalidArgumentError
 * ```
 */
export function metadataJson(value: unknown, where: string): string {
  const metadata = assertMetadata(value, where)
  let json: string
  try {
    json = JSON.stringify(metadata)
  } catch (err) {
    throw new InvalidArgumentError(`${where}: metadata cannot be written as JSON (${(err as Error).message})`, { cause: err })
  }
  if (!json.startsWith('{')) throw new InvalidArgumentError(`${where}: metadata must be a plain object (its JSON is not an object)`)
  if (JSONB_REFUSES.test(json)) {
    throw new InvalidArgumentError(`${where}: metadata holds a NUL character or a lone surrogate, which jsonb cannot store`)
  }
  return json
}
