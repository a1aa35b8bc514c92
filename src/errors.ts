/**
 * Typed errors. Every error pgscale throws is a {@link PgScaleError}; branch on `code` (or on
 * `instanceof`), never on message text. Errors from the server keep their SQLSTATE in
 * {@link DatabaseError.sqlState} and the driver's error as `cause`.
 *
 * ### Examples
 * ```ts
 * try {
 *   await provision({ provider: 'local' })
 * } catch (err) {
 *   if (err instanceof ProviderUnavailableError) console.error(err.message) // says how to fix it
 * }
 * ```
 */
export type PgScaleErrorCode =
  | 'INVALID_ARGUMENT'
  | 'INVALID_IDENTIFIER'
  | 'DIMENSION_MISMATCH'
  | 'PROVIDER_UNAVAILABLE'
  | 'DATABASE_NOT_CONFIGURED'
  | 'CONNECTION_FAILED'
  | 'EXTENSION_MISSING'
  | 'SCHEMA_MISMATCH'
  | 'INDEX_BUILD_FAILED'
  | 'PLAN_ASSERTION'
  | 'PLAN_REGRESSION'
  | 'MIGRATION_FAILED'
  | 'MIGRATION_REQUIRED'
  | 'INSUFFICIENT_PRIVILEGE'
  | 'DATABASE_ERROR'
  | 'EMBEDDING_SPACE'

/** Base class of every error pgscale throws. */
export class PgScaleError extends Error {
  /** A stable machine-readable code; see {@link PgScaleErrorCode}. */
  readonly code: PgScaleErrorCode

  constructor(code: PgScaleErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}

/** An argument is malformed or out of range; nothing was sent to the database. */
export class InvalidArgumentError extends PgScaleError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options)
  }
}

/** A time zone that is not an IANA zone name the machine and the server both know. */
export class InvalidTimeZoneError extends InvalidArgumentError {
  constructor(
    /** The rejected zone. */
    readonly zone: string,
    options?: { cause?: unknown },
  ) {
    super(`unknown time zone ${JSON.stringify(zone)}: use an IANA zone name such as "America/Mexico_City" or "UTC"`, options)
  }
}

/** A name that must be a plain SQL identifier is not one; nothing was sent to the database. */
export class InvalidIdentifierError extends PgScaleError {
  /** The rejected name. */
  readonly identifier: string

  constructor(identifier: string, what: string) {
    super(
      'INVALID_IDENTIFIER',
      `${what} ${JSON.stringify(identifier)} is not a valid identifier: use 1-63 characters of ` +
        'lower-case letters, digits and underscores, starting with a letter or underscore',
    )
    this.identifier = identifier
  }
}

/** A vector's length differs from the store's dimensions. */
export class DimensionMismatchError extends PgScaleError {
  constructor(
    /** The dimensions the store was configured with. */
    readonly expected: number,
    /** The length that was given. */
    readonly actual: number,
    where: string,
  ) {
    super('DIMENSION_MISMATCH', `${where}: expected a vector of ${expected} dimensions, got ${actual}`)
  }
}

/** A database provider cannot be used here; the message names the fix. */
export class ProviderUnavailableError extends PgScaleError {
  constructor(
    /** The provider that was asked for. */
    readonly provider: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('PROVIDER_UNAVAILABLE', message, options)
  }
}

/**
 * No database to use: `provision()` in an app with no `DATABASE_URL`, no `url` and no `provider`
 * (pgscale does not start a throwaway database an app did not ask for; the message says to set
 * `DATABASE_URL`, or to pass `{ provider: 'local' | 'embedded' }` for a throwaway one), or
 * `connect(undefined)` (an unset `process.env.DATABASE_URL`). Under a test runner, and with an
 * explicit `provider: 'auto'`, `provision()` falls back as before.
 */
export class DatabaseNotConfiguredError extends PgScaleError {
  constructor(message: string) {
    super('DATABASE_NOT_CONFIGURED', message)
  }
}

/** The server could not be reached (refused, timed out, authentication failed). */
export class ConnectionError extends PgScaleError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CONNECTION_FAILED', message, options)
  }
}

/** The server has no usable pgvector (missing, or older than required); the message says how to install it. */
export class ExtensionMissingError extends PgScaleError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('EXTENSION_MISSING', message, options)
  }
}

/** Existing database objects do not match the configuration (e.g. a table with other dimensions). */
export class SchemaMismatchError extends PgScaleError {
  constructor(message: string) {
    super('SCHEMA_MISMATCH', message)
  }
}

/** An index build failed for a known reason; the message says what to change. */
export class IndexBuildError extends PgScaleError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INDEX_BUILD_FAILED', message, options)
  }
}

/** A plan assertion failed; the message holds the statement and its plan. */
export class PlanAssertionError extends PgScaleError {
  constructor(message: string) {
    super('PLAN_ASSERTION', message)
  }
}

/** One changed plan shape: the statement's name, the recorded shape and the shape now. */
export interface PlanShapeChange {
  name: string
  recorded: string
  now: string
}

/**
 * `checkPlanShapes` found statements whose plan shape changed, statements with no recording, or no
 * shapes file at all; `changes` and `unrecorded` list them, the message shows both shapes of each.
 */
export class PlanRegressionError extends PgScaleError {
  constructor(
    message: string,
    /** The statements whose shape changed. */
    readonly changes: readonly PlanShapeChange[],
    /** The statements the shapes file has no shape for. */
    readonly unrecorded: readonly string[],
    /** The shapes file compared with. */
    readonly file: string,
  ) {
    super('PLAN_REGRESSION', message)
  }
}

/** A migration run failed; `results` says which migrations ran, `cause` holds the server's error. */
export class MigrationError extends PgScaleError {
  constructor(
    /** Kysely's per-migration results of the run. */
    readonly results: ReadonlyArray<{ migrationName: string; direction: string; status: string }>,
    cause: unknown,
  ) {
    super('MIGRATION_FAILED', `migration failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause: toPgScaleError(cause),
    })
  }
}

/**
 * An object pgscale needs (a store's tables, a rollup's tracking) is missing, at an older version,
 * or not readable by this role, and pgscale may not (`migrate: false`) or cannot (a role without
 * DDL rights) bring it up to date: nothing was changed. `object` names it, `command` is what its
 * owner runs (a `pgscale migrate` line, or the migration to add).
 */
export class MigrationRequiredError extends PgScaleError {
  constructor(
    /** The object, as recorded in `pgscale_object_version` (`store:public.rag_chunks`). */
    readonly object: string,
    /** What the object's owner runs to bring it up to date. */
    readonly command: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('MIGRATION_REQUIRED', `${message}: the owner runs ${command}`, options)
  }
}

/**
 * An operation needs a right this role does not have — DDL on a table it does not own (an index
 * build, a trigger) — and was refused before anything changed. `operation` says what, `owner`
 * who may (the table's owner role).
 */
export class PrivilegeError extends PgScaleError {
  constructor(
    /** What was refused, e.g. `optimize` or `createMetadataIndex`. */
    readonly operation: string,
    /** The role that may run it (the relation's owner), when known. */
    readonly owner: string | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super('INSUFFICIENT_PRIVILEGE', message, options)
  }
}

/** Fields a PostgreSQL error carries (node-postgres `DatabaseError`, PGlite's error). */
interface ServerErrorFields {
  message: string
  code?: string
  detail?: string
  hint?: string
  constraint?: string
  table?: string
  column?: string
  schema?: string
}

/** An error reported by PostgreSQL. `sqlState` is its SQLSTATE (`23505`, `42P01`, ...). */
export class DatabaseError extends PgScaleError {
  /** The SQLSTATE code, e.g. `23505` for a unique violation. */
  readonly sqlState: string
  /** The server's DETAIL, if any. */
  readonly detail?: string
  /** The server's HINT, if any. */
  readonly hint?: string
  /** The violated constraint, if any. */
  readonly constraint?: string
  /** The table involved, if any. */
  readonly table?: string

  constructor(source: ServerErrorFields, options?: { cause?: unknown }) {
    super('DATABASE_ERROR', source.message, { cause: options?.cause ?? source })
    this.sqlState = source.code ?? 'XX000'
    this.detail = source.detail
    this.hint = source.hint
    this.constraint = source.constraint
    this.table = source.table
  }
}

/**
 * An embedding space refused an operation: a write to a space its tenant neither searches nor
 * migrates to (the space guard's SQLSTATE `PGS01`, from pgscale or the app's own SQL), a switch
 * while chunks written since the backfill still lack the new model's vector (`pending` of them),
 * or dropping a space a tenant still uses.
 *
 * ### Examples
 * ```ts
 * try { await oldHandle.replaceDocument('doc', chunks) } catch (err) {
 *   if (err instanceof EmbeddingSpaceError) acme = (await store.activeTenant('acme')).tenant
 * }
 * ```
 */
export class EmbeddingSpaceError extends PgScaleError {
  /** Chunks still to embed before a switch may happen (0 when that is not the reason). */
  readonly pending: number
  /** The switch was refused because the tenant's own index in the new space is not tuned (`migrateTenant` tunes it). */
  readonly untuned: boolean

  constructor(message: string, options?: { cause?: unknown; pending?: number; untuned?: boolean }) {
    super('EMBEDDING_SPACE', message, options)
    this.pending = options?.pending ?? 0
    this.untuned = options?.untuned === true
  }
}

/** True for an error that came from the server with a SQLSTATE (a pg or PGlite error). */
function isServerError(err: unknown): err is ServerErrorFields & Error {
  return (
    err instanceof Error &&
    typeof (err as { code?: unknown }).code === 'string' &&
    /^[0-9A-Z]{5}$/.test((err as unknown as { code: string }).code) &&
    'severity' in err
  )
}

/**
 * Wraps a driver error into a {@link DatabaseError}; returns PgScaleErrors and other errors as they are.
 *
 * ### Examples
 * ```ts
 * try { await client.query(text) } catch (err) { throw toPgScaleError(err) }
 * ```
 */
export function toPgScaleError(err: unknown): unknown {
  if (err instanceof PgScaleError) return err
  if (isServerError(err)) {
    // The embedding-space guard (src/store/spaces/space-catalog.ts) says why in its message.
    if (err.code === 'PGS01') return new EmbeddingSpaceError(err.message, { cause: err })
    return new DatabaseError(err, { cause: err })
  }
  return err
}
