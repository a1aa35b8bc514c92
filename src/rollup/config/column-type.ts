import { InvalidArgumentError } from '../../errors.js'

const TYPES = [
  /^(smallint|integer|int|bigint|real|double precision|boolean|date|text|uuid|timestamptz|timestamp with time zone)$/,
  /^numeric(\(\d{1,4}(,\s*\d{1,4})?\))?$/,
  /^(varchar|character varying|char)\(\d{1,5}\)$/,
]

/**
 * Checks a column type of a rollup table against the types a rollup column can have; the type is
 * interpolated into DDL, so anything else is refused.
 *
 * ### Examples
 * ```ts
 * assertColumnType('numeric(14,2)', 'measure total') // 'numeric(14,2)'
 * ```
 */
export function assertColumnType(type: unknown, what: string, options: { sketches?: boolean } = {}): string {
  const normalized = typeof type === 'string' ? type.trim().toLowerCase().replace(/\s+/g, ' ') : ''
  // A measure may also hold a sketch (`approxCountDistinct`, `approxPercentiles`).
  if (options.sketches && (normalized === 'hll' || normalized === 'tdigest')) return normalized
  if (!TYPES.some((re) => re.test(normalized))) {
    throw new InvalidArgumentError(
      `${what}: type ${JSON.stringify(type)} is not supported; use integer, bigint, numeric(p,s), real, double precision, varchar(n), text, date, boolean, uuid or timestamptz`,
    )
  }
  return normalized
}
