import { ErrorCategory, ErrorDomain, MastraError } from '@mastra/core/error'
import {
  DimensionMismatchError,
  InvalidArgumentError,
  InvalidIdentifierError,
  MigrationRequiredError,
  PgScaleError,
  SchemaMismatchError,
} from '../../errors.js'
import { FilterTranslationError } from './filter-error.js'

/** The store name in the adapter's error ids (`MASTRA_VECTOR_PGSCALE_<OPERATION>_<STATUS>`), as Mastra's validation helpers take it. */
export const STORE_NAME = 'PGSCALE'

/** The operations of `MastraVector`, as they appear in error ids. */
export type VectorOperation =
  | 'INITIALIZATION'
  | 'CREATE_INDEX'
  | 'LIST_INDEXES'
  | 'DESCRIBE_INDEX'
  | 'DELETE_INDEX'
  | 'UPSERT'
  | 'QUERY'
  | 'UPDATE_VECTOR'
  | 'DELETE_VECTOR'
  | 'DELETE_VECTORS'

type Details = Record<string, string | number | boolean | null>

/** pgscale's errors that mean the caller's input was wrong (nothing was sent, or the store refused it as given). */
const USER_ERRORS: ReadonlyArray<abstract new (...args: any[]) => PgScaleError> = [
  InvalidArgumentError,
  InvalidIdentifierError,
  DimensionMismatchError,
  SchemaMismatchError,
  MigrationRequiredError,
]

/**
 * A `MastraError` of the caller's making (category `USER`), with the id Mastra's stores use:
 * `MASTRA_VECTOR_PGSCALE_<OPERATION>_<STATUS>`.
 *
 * ### Examples
 * ```ts
 * throw userError('DELETE_VECTORS', 'EMPTY_IDS', 'Cannot delete with empty ids array', { indexName })
 * ```
 */
export function userError(operation: VectorOperation, status: string, text: string, details: Details = {}, cause?: unknown): MastraError {
  return new MastraError(
    { id: errorId(operation, status), text, domain: ErrorDomain.MASTRA_VECTOR, category: ErrorCategory.USER, details },
    cause ?? new InvalidArgumentError(text),
  )
}

/**
 * Any failure of an operation as a `MastraError`: a `MastraError` as it is; a refused filter
 * (`INVALID_FILTER`) or input pgscale refused (`INVALID_INPUT`: bad arguments, dimensions, a
 * configuration that differs from the table's) as `USER` errors with pgscale's message; anything
 * else (the database) as `THIRD_PARTY` `FAILED`, the original error as its cause.
 *
 * ### Examples
 * ```ts
 * try { ... } catch (err) { throw asMastraError('QUERY', err, { indexName }) }
 * ```
 */
export function asMastraError(operation: VectorOperation, err: unknown, details: Details = {}): MastraError {
  if (err instanceof MastraError) return withTypedCause(err)
  if (err instanceof FilterTranslationError) {
    return userError(operation, 'INVALID_FILTER', err.message, err.operator ? { ...details, operator: err.operator } : details, err)
  }
  if (USER_ERRORS.some((type) => err instanceof type)) {
    return userError(operation, 'INVALID_INPUT', (err as Error).message, { ...details, code: (err as PgScaleError).code }, err)
  }
  return new MastraError(
    { id: errorId(operation, 'FAILED'), domain: ErrorDomain.MASTRA_VECTOR, category: ErrorCategory.THIRD_PARTY, details },
    err,
  )
}

/**
 * A `USER` `MastraError` thrown by Mastra's own code (its validation helpers, `validateExistingIndex`)
 * made again with a pgscale {@link InvalidArgumentError} as its cause, same id, text and details:
 * every refusal the adapter throws carries a typed `PgScaleError` in `cause`.
 */
function withTypedCause(err: MastraError): MastraError {
  if (err.category !== ErrorCategory.USER || err.cause instanceof PgScaleError) return err
  const cause = new InvalidArgumentError(err.message, err.cause === undefined ? undefined : { cause: err.cause })
  return new MastraError({ id: err.id, text: err.message, domain: err.domain, category: err.category, details: err.details ?? {} }, cause)
}

function errorId(operation: VectorOperation, status: string): Uppercase<string> {
  return `MASTRA_VECTOR_${STORE_NAME}_${operation}_${status}`.toUpperCase() as Uppercase<string>
}
