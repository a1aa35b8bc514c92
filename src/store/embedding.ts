import { DimensionMismatchError, InvalidArgumentError } from '../errors.js'
import type { Distance } from './store-config.js'

/** An embedding as the store accepts it. */
export type Embedding = readonly number[] | Float32Array | Float64Array

/**
 * Checks an embedding: an array of `dimensions` finite numbers, and not all zero under cosine
 * distance (a zero vector has no direction: every distance would be NaN). Throws a typed error.
 */
export function assertEmbedding(value: unknown, dimensions: number, distance: Distance, where: string): Embedding {
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
    if (x !== 0) nonZero = true
  }
  if (!nonZero && distance === 'cosine') {
    throw new InvalidArgumentError(`${where}: the embedding is all zeros, which has no cosine distance`)
  }
  return value as Embedding
}

/** pgvector's text form, `[1,2,3]`, sent as a bound parameter. */
export function toVectorLiteral(v: Embedding): string {
  return `[${Array.prototype.join.call(v, ',')}]`
}

/** Checks a tenant or document id: a non-empty string of at most 256 characters. */
export function assertId(value: unknown, what: 'tenant id' | 'document id'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256) {
    throw new InvalidArgumentError(`${what} must be a non-empty string of at most 256 characters, got ${JSON.stringify(value)}`)
  }
  return value
}

/** Checks `k`: an integer from 1 to 1000. */
export function assertK(value: unknown): number {
  if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 1000) {
    throw new InvalidArgumentError(`k must be an integer from 1 to 1000, got ${String(value)}`)
  }
  return value as number
}

/** Checks metadata: a plain JSON object (or undefined → `{}`). */
export function assertMetadata(value: unknown, where: string): Record<string, unknown> {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidArgumentError(`${where}: metadata must be a plain object`)
  }
  return value as Record<string, unknown>
}
