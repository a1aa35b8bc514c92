import type { Migration, Kysely, RawBuilder } from 'kysely'

/** Declaration of a rollup table: its group columns and measure columns with their types. */
export interface RollupTableConfig {
  /** Group columns and their types, e.g. `{ category: 'varchar(64)' }`. */
  groupBy: Readonly<Record<string, string>>
  /** Measure columns and their types, e.g. `{ total: 'numeric(14,2)', count: 'integer' }`; `'hll'` / `'tdigest'` hold sketches (`approxCountDistinct`, `approxPercentiles`). */
  measures: Readonly<Record<string, string>>
  /** Type of `tenant_id`; match the source's. Default `text`. */
  tenantType?: string
  /**
   * `'rls'`: row-level security on the rollup table and its dirty-key log, keyed on
   * `pgscale.tenant_id` as the store's (`isolation` of `PgVectorStore.open`): the app's own SQL on
   * its runtime role sees only the tenant it set. The rollup's tenant reads and refreshes set it;
   * drains run fleet-wide. Default `'none'`.
   */
  isolation?: 'none' | 'rls'
}

/** A declared rollup table: one row per `(tenant_id, month, ...groups)`. */
export interface RollupTable {
  /** The name as given (`expenses_monthly` or `schema.expenses_monthly`). */
  readonly name: string
  /** Quoted, safe to interpolate. */
  readonly qualified: string
  readonly groupBy: ReadonlyArray<{ name: string; type: string }>
  readonly measures: ReadonlyArray<{ name: string; type: string }>
  readonly tenantType: string
  readonly isolation: 'none' | 'rls'
  /**
   * Creates the table if missing (idempotent).
   *
   * ### Examples
   * ```ts
   * await expensesMonthly.create(db)
   * ```
   */
  create(db: Kysely<any>): Promise<void>
  /**
   * The statements `create` runs on a server without the table, as SQL text: the sketch
   * extensions its measures need, then the table.
   *
   * ### Examples
   * ```ts
   * console.log(expensesMonthly.ddl().join(';\n'))
   * ```
   */
  ddl(): string[]
  /**
   * The same as a Kysely migration, for apps that use the Migrator.
   *
   * ### Examples
   * ```ts
   * const migrations = { '2025-01-expenses-monthly': expensesMonthly.migration({ runtimeRole: 'app' }) }
   * ```
   */
  migration(options?: RollupMigrationOptions): Migration
}

/** Options of a rollup's migrations (`rollupTable(…).migration`, `rollup.trackingMigration`). */
export interface RollupMigrationOptions {
  /** The app's runtime role: granted `SELECT, INSERT, UPDATE, DELETE` on what the migration creates (and `USAGE` on its schema). */
  runtimeRole?: string
}

/**
 * A rollup's coarser level (`fleetTable`, src/rollup/fleet): one row per local month and kept
 * group, its measures combined over every tenant — or, with `perTenant`, one row per tenant, local
 * month and kept group (the groups it drops combined) — maintained by the rollup's own refreshes
 * from the tenant buckets they change.
 */
export interface FleetTable {
  /** The name as given (`expenses_fleet` or `schema.expenses_fleet`). */
  readonly name: string
  /** Quoted, safe to interpolate. */
  readonly qualified: string
  /** The rollup table it combines. */
  readonly of: RollupTable
  /** The group columns it keeps, in the rollup table's order (a subset of them). */
  readonly groupBy: readonly string[]
  /** Whether it keeps the tenant (`tenant_id` leads its key): a per-tenant level, which drops groups only. */
  readonly perTenant: boolean
  /**
   * Kept by the drain, not by each write (`fleetTable(…, { deferred: true })`): a write only marks
   * its months in the level's pending table (`pending`, quoted), `readAcross` reads the rollup table
   * for those months, and `refreshFleet` (or the drain loop) recomputes them.
   */
  readonly deferred: boolean
  /** The deferred level's table of pending months (per-tenant: buckets) (quoted, beside the level); undefined when not deferred. */
  readonly pending: string | undefined
  /** The hidden count column of each measure that keeps it (`{ total: 'pgscale_nn_total' }`): exact sums kept by deltas. */
  readonly nonNullColumns: Readonly<Record<string, string>>
  /**
   * Creates the table if missing and fills it from the rollup table, in one transaction that holds
   * the rollup table in `SHARE` mode (no refresh writes it meanwhile). Idempotent.
   *
   * ### Examples
   * ```ts
   * await expensesFleet.create(db)
   * ```
   */
  create(db: Kysely<any>): Promise<void>
  /**
   * The statements `create` runs on a server without the table, as SQL text.
   *
   * ### Examples
   * ```ts
   * console.log(expensesFleet.ddl().join(';\n'))
   * ```
   */
  ddl(): string[]
  /**
   * `create` as a Kysely migration (`down` drops the table).
   *
   * ### Examples
   * ```ts
   * const migrations = { '0005-expenses-fleet': expensesFleet.migration({ runtimeRole: 'app' }) }
   * ```
   */
  migration(options?: RollupMigrationOptions): Migration
}

/** How the source's time column is compared with a local month's bounds. */
export type AtKind = 'timestamptz' | 'timestamp' | 'date'

/** The validated parts a rollup's statements are built from. */
export interface RollupParts {
  source: string
  target: RollupTable
  at: string
  tenant: string
  groupBy: readonly string[]
  measures: ReadonlyArray<{ name: string; expression: RawBuilder<unknown> }>
  where?: RawBuilder<unknown>
  zone: string
  /** The `at` column's type: instants (`timestamptz`), wall-clock times or dates in `zone`. */
  atKind: AtKind
  /** The rollup's first declared level (`fleet`, or the first of its array), if it declares one. */
  fleet?: FleetTable
  /** Every level the rollup declares, in declaration order (absent or empty: none). */
  levels?: readonly FleetTable[]
}
