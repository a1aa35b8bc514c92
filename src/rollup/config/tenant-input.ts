import { InvalidArgumentError } from '../../errors.js'

/** The integer tenant types and their ranges. */
const INTEGER_RANGES: Record<string, readonly [bigint, bigint]> = {
  smallint: [-32768n, 32767n],
  integer: [-2147483648n, 2147483647n],
  int: [-2147483648n, 2147483647n],
  bigint: [-9223372036854775808n, 9223372036854775807n],
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Checks a tenant id against the rollup table's declared tenant type, before anything is sent:
 * `smallint`/`integer`/`bigint` take a safe integer or a decimal integer string in the type's range;
 * `uuid` a UUID string (returned in lower case, its canonical form); `text`/`varchar(n)`/`char(n)` a non-empty string (or a safe integer)
 * of at most 256 characters (and `n`), without NUL. Anything else is an `InvalidArgumentError`
 * naming the value — never a server error after other statements ran, never a silent truncation
 * (`'abcdef'::varchar(3)` is `'abc'`).
 *
 * ### Examples
 * ```ts
 * tenantInput(42, 'bigint') // 42
 * tenantInput('abc', 'bigint') // throws InvalidArgumentError: tenantId "abc" is not a bigint …
 * ```
 */
export function tenantInput(value: unknown, tenantType = 'text', what = 'tenantId'): string | number {
  const type = tenantType.toLowerCase()
  const range = INTEGER_RANGES[type]
  if (range) return integerTenant(value, type, range, what)
  if (type === 'uuid') {
    // Canonical (lower case), as PostgreSQL prints a uuid: the bucket locks hash the tenant's text,
    // and a drain or refreshFleet reads tenants back from the server in that form.
    if (typeof value === 'string' && UUID.test(value)) return value.toLowerCase()
    throw new InvalidArgumentError(
      `${what} ${shown(value)} is not a uuid (the rollup's tenant type): use 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'`,
    )
  }
  const length = /\((\d+)\)$/.exec(type)
  const max = Math.min(256, length && /^(varchar|character varying|char)/.test(type) ? Number(length[1]) : 256)
  if (typeof value === 'number' && Number.isSafeInteger(value) && String(value).length <= max) return value
  if (typeof value === 'string' && value.length > 0 && value.length <= max && !value.includes('\u0000')) return value
  throw new InvalidArgumentError(
    `${what} ${shown(value)} is not a tenant id of type ${tenantType}: a non-empty string of at most ${max} characters without NUL, or a safe integer`,
  )
}

function integerTenant(value: unknown, type: string, [lo, hi]: readonly [bigint, bigint], what: string): string | number {
  const big =
    typeof value === 'number' && Number.isSafeInteger(value)
      ? BigInt(value)
      : typeof value === 'string' && /^-?\d{1,19}$/.test(value)
        ? BigInt(value)
        : undefined
  if (big !== undefined && big >= lo && big <= hi) return value as string | number
  throw new InvalidArgumentError(`${what} ${shown(value)} is not a ${type} (the rollup's tenant type): use an integer from ${lo} to ${hi}`)
}

function shown(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
