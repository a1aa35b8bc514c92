import { InvalidArgumentError } from '../errors.js'

/**
 * Checks that `value` is an integer from `min` to `max` and returns it; otherwise an
 * {@link InvalidArgumentError} that names `what` and the range.
 *
 * ### Examples
 * ```ts
 * const k = assertIntegerIn(options.k ?? 10, 1, 1000, 'k')
 * ```
 */
export function assertIntegerIn(value: unknown, min: number, max: number, what: string): number {
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw new InvalidArgumentError(`${what} must be an integer from ${min} to ${max}, got ${String(value)}`)
  }
  return value as number
}
