import type { RawBuilder } from 'kysely'
import type {
  MonthlyRollupConfig,
  ReadAcrossOptions,
  ReadOptions,
  RollupAcrossRow,
  RollupRow,
  RollupTable,
  RollupTableConfig,
} from '../config/index.js'

/**
 * The types that carry a rollup table's columns from {@link rollupTable} to the rows
 * `MonthlyRollup.read` and `readAcross` return, and check a `MonthlyRollup`'s `groupBy` and
 * `measures` against its target at compile time. Types only: nothing here runs.
 *
 * A column's value in a row is what the drivers return for its declared type with their default
 * type parsers (node-postgres, and PGlite for the embedded provider), measured on both:
 * `smallint`, `integer`, `real` and `double precision` are `number`; `numeric` is `string` (exact
 * decimals, never rounded through a float); `bigint` is `string | number` (node-postgres returns a
 * string, PGlite a number); `text`, `varchar(n)`, `char(n)` and `uuid` are `string`; `boolean` is
 * `boolean`; `date` and `timestamptz` are `Date`; an `'hll'` measure is its estimate, a `bigint`
 * (`string | number`); a `'tdigest'` measure is the `number[]` of the percentiles asked for, and
 * absent when none were.
 */

/** Every column type a rollup table accepts, lower case (`rollupTable` also takes any letter case and extra spaces). */
export type RollupColumnType =
  | 'smallint'
  | 'integer'
  | 'int'
  | 'bigint'
  | 'real'
  | 'double precision'
  | 'boolean'
  | 'date'
  | 'text'
  | 'uuid'
  | 'timestamptz'
  | 'timestamp with time zone'
  | 'numeric'
  | `numeric(${string})`
  | `varchar(${string})`
  | `character varying(${string})`
  | `char(${string})`

/** Columns and their declared types, as `rollupTable` takes them: `{ category: 'varchar(64)' }`. */
export type ColumnTypes = Readonly<Record<string, string>>

/** The column types a measure may have besides {@link RollupColumnType}: the sketches. */
export type RollupSketchType = 'hll' | 'tdigest'

/** Words of `S` split on single spaces, empty ones dropped. */
type Words<S extends string> = S extends `${infer W} ${infer R}` ? (W extends '' ? Words<R> : [W, ...Words<R>]) : S extends '' ? [] : [S]

/** Words joined by single spaces. */
type JoinWords<T extends readonly string[]> = T extends [infer A extends string]
  ? A
  : T extends [infer A extends string, ...infer R extends string[]]
    ? `${A} ${JoinWords<R>}`
    : ''

/**
 * A declared column type as `rollupTable` normalizes it: lower case, single spaces, trimmed
 * (`'NUMERIC(14, 2)'` is `'numeric(14, 2)'`). `string` stays `string`, and so does a type written
 * with tabs or newlines (left to the run-time check).
 */
export type NormalizedColumnType<S extends string> = string extends S
  ? string
  : S extends `${string}${'\t' | '\n' | '\r'}${string}`
    ? string
    : JoinWords<Words<Lowercase<S>>>

/**
 * The value a read returns for a column of the (normalized) type `Type`; `unknown` when the type
 * is not known at compile time (a table declared from a `Record<string, string>`). See the table
 * in this module's comment and docs/rollup.md "Typed rows".
 */
export type RollupColumnValue<Type extends string> = string extends Type
  ? unknown
  : Type extends 'smallint' | 'integer' | 'int' | 'real' | 'double precision'
    ? number
    : Type extends 'bigint' | 'hll'
      ? string | number
      : Type extends 'numeric' | `numeric(${string}`
        ? string
        : Type extends 'boolean'
          ? boolean
          : Type extends 'date' | 'timestamptz' | 'timestamp with time zone'
            ? Date
            : Type extends 'text' | 'uuid' | `varchar(${string}` | `character varying(${string}` | `char(${string}`
              ? string
              : Type extends 'tdigest'
                ? number[]
                : unknown

/** Whether `T` is a column type the declaration accepts (`true` for a plain `string`: checked at run time). */
type ColumnTypeOk<T, Sketches extends boolean> = T extends string
  ? string extends NormalizedColumnType<T>
    ? true
    : NormalizedColumnType<T> extends RollupColumnType | (Sketches extends true ? RollupSketchType : never)
      ? true
      : false
  : false

/** `R` with each column whose type is not accepted replaced by the accepted types (what the compiler then names). */
type ColumnTypesExpected<R, Sketches extends boolean> = {
  readonly [K in keyof R]: ColumnTypeOk<R[K], Sketches> extends true
    ? R[K]
    : Sketches extends true
      ? RollupColumnType | RollupSketchType
      : RollupColumnType
}

/**
 * `R` itself when every column type in it is accepted; otherwise the columns with the accepted
 * types, so that `{ total: 'numerci(14,2)' }` does not compile and the error names what would.
 */
export type CheckedColumns<R, Sketches extends boolean = false> = false extends { [K in keyof R]-?: ColumnTypeOk<R[K], Sketches> }[keyof R]
  ? ColumnTypesExpected<R, Sketches>
  : R

/**
 * {@link RollupTableConfig} with its columns in its type: `G` the group columns, `M` the measure
 * columns, `TT` the tenant type, each checked against the accepted column types at compile time.
 */
export interface RollupTableConfigOf<G, M, TT extends string> extends Omit<RollupTableConfig, 'groupBy' | 'measures' | 'tenantType'> {
  /** Group columns and their types, e.g. `{ category: 'varchar(64)' }`. */
  groupBy: CheckedColumns<G>
  /** Measure columns and their types, e.g. `{ total: 'numeric(14,2)', count: 'integer' }`; `'hll'` / `'tdigest'` hold sketches. */
  measures: CheckedColumns<M, true>
  /** Type of `tenant_id`; match the source's. Default `text`. */
  tenantType?: ColumnTypeOk<TT, false> extends true ? TT : RollupColumnType
}

/** The `{ name, type }` entries of a record of column types, one per column, the type normalized. */
export type ColumnsOf<R> = {
  [K in keyof R & string]: {
    /** The column's name. */
    readonly name: K
    /** Its declared type, normalized. */
    readonly type: R[K] extends string ? NormalizedColumnType<R[K]> : string
  }
}[keyof R & string]

/**
 * A {@link RollupTable} whose group and measure columns are in its type: what {@link rollupTable}
 * returns. `MonthlyRollup` reads them to type its rows and check its configuration. Declared from
 * a `Record<string, string>` (names not known at compile time) it is the loose `RollupTable`.
 *
 * ### Examples
 * ```ts
 * const expensesMonthly: RollupTableOf<{ category: 'varchar(64)' }, { total: 'numeric(14,2)'; count: 'integer' }> =
 *   rollupTable('expenses_monthly', { groupBy: { category: 'varchar(64)' }, measures: { total: 'numeric(14,2)', count: 'integer' } })
 * ```
 */
export interface RollupTableOf<
  G = Readonly<Record<string, string>>,
  M = Readonly<Record<string, string>>,
  TT extends string = string,
> extends RollupTable {
  /** The group columns, in declaration order. */
  readonly groupBy: ReadonlyArray<ColumnsOf<G>>
  /** The measure columns, in declaration order. */
  readonly measures: ReadonlyArray<ColumnsOf<M>>
  /** The type of `tenant_id`, normalized. */
  readonly tenantType: NormalizedColumnType<TT>
}

/** The group columns of a rollup table, as `{ name, type }` entries. */
export type GroupColumnOf<T extends RollupTable> = T['groupBy'][number]
/** The measure columns of a rollup table, as `{ name, type }` entries. */
export type MeasureColumnOf<T extends RollupTable> = T['measures'][number]
/** The names of a rollup table's group columns (`string` when not declared precisely). */
export type GroupNameOf<T extends RollupTable> = GroupColumnOf<T>['name']
/** The names of a rollup table's measure columns (`string` when not declared precisely). */
export type MeasureNameOf<T extends RollupTable> = MeasureColumnOf<T>['name']
/** The names of a rollup table's `'tdigest'` measures. */
export type TdigestMeasureOf<T extends RollupTable> = Extract<
  MeasureColumnOf<T>,
  {
    /** A sketch of percentiles. */
    type: 'tdigest'
  }
>['name']

/** Whether the table's column names are known at compile time (else rows and configs are the loose types). */
type Precise<T extends RollupTable> = string extends GroupNameOf<T> ? false : string extends MeasureNameOf<T> ? false : true

/** The measures of a row: every measure typed by its column type, a `'tdigest'` one optional (present when its percentiles were asked for). */
type MeasureValues<T extends RollupTable> = {
  readonly [C in MeasureColumnOf<T> as C['type'] extends 'tdigest' ? never : C['name']]: RollupColumnValue<C['type']>
} & {
  readonly [C in MeasureColumnOf<T> as C['type'] extends 'tdigest' ? C['name'] : never]?: number[]
}

/**
 * The kept groups `K` of a row: each typed by its column type, or `null` (null groups are one
 * group); every group optional when `K` is any `string` (a `groupBy` typed `string[]`).
 */
type GroupValues<T extends RollupTable, K extends string> = string extends K
  ? { readonly [C in GroupColumnOf<T> as C['name']]?: RollupColumnValue<C['type']> | null }
  : { readonly [C in GroupColumnOf<T> as C['name'] extends K ? C['name'] : never]: RollupColumnValue<C['type']> | null }

/**
 * What a read's `groupBy` may name when it names `K`: `K` itself when every name is a group column
 * of `T` (or `K` is any `string`: a `groupBy` typed `string[]` is checked at run time), the
 * table's group columns otherwise (so that the compiler names them).
 */
export type GroupInputOf<T extends RollupTable, K extends string> = string extends K
  ? string
  : K extends GroupNameOf<T>
    ? K
    : GroupNameOf<T>

/** The month of a row. */
type MonthPart = {
  /** The local month, `'YYYY-MM'` (`'YYYY-MM..YYYY-MM'` with `combineMonths`). */
  readonly month: string
}

/** A type's properties listed flat (how editors and the docs show a row). */
type Flat<T> = { [K in keyof T]: T[K] } & {}

/**
 * A row of `MonthlyRollup.read` on the table `T` keeping the groups `K` (every group unless the
 * read's `groupBy` says otherwise): `month` (`'YYYY-MM'`, or `'YYYY-MM..YYYY-MM'` with
 * `combineMonths`), the kept groups (their type or `null`), and the measures typed by their
 * column types — e.g. `{ month: string; category: string | null; total: string; count: number }`
 * for `category varchar(64)`, `total numeric(14,2)`, `count integer`. A measure is typed
 * non-null: a bucket holds only groups that have source rows, so `count(…)` never is; a
 * `sum`/`min`/`max` whose every input is null is (`coalesce` it in the measure if the source column
 * can be null). On a table not declared precisely it is {@link RollupRow}.
 *
 * ### Examples
 * ```ts
 * const rows = await rollup.read(db, { tenantId: 42, from: '2025-01', to: '2025-12' })
 * const total: string = rows[0]!.total // numeric: an exact decimal string
 * ```
 */
export type RollupRowOf<T extends RollupTable, K extends string = GroupNameOf<T>> =
  Precise<T> extends true ? Flat<MonthPart & GroupValues<T, K> & MeasureValues<T>> : RollupRow

/** The `tenant_id` of a row across tenants, typed by the table's tenant type. */
type TenantValue<T extends RollupTable> = T['tenantType'] extends string
  ? unknown extends RollupColumnValue<T['tenantType']>
    ? string | number
    : RollupColumnValue<T['tenantType']>
  : string | number

/**
 * `tenant_id` and `rank` in a row across tenants: with a `top` (`R`) both; with `perTenant: true`
 * (`P`) `tenant_id`; optional where the options' type leaves it open (a `boolean`, an optional
 * `top`, a `top` typed `RollupTop`); neither otherwise.
 */
type TenantPart<T extends RollupTable, P extends boolean, R> = [R] extends [undefined]
  ? [P] extends [true]
    ? { readonly tenant_id: TenantValue<T> }
    : [P] extends [false]
      ? unknown
      : { readonly tenant_id?: TenantValue<T> }
  : undefined extends R
    ? { readonly tenant_id?: TenantValue<T>; readonly rank?: number }
    : R extends { by: infer B }
      ? string extends B
        ? { readonly tenant_id?: TenantValue<T>; readonly rank?: number } // a top typed RollupTop: maybe none at run time
        : { readonly tenant_id: TenantValue<T>; readonly rank: number }
      : { readonly tenant_id: TenantValue<T>; readonly rank: number }

/**
 * A row of `MonthlyRollup.readAcross` on the table `T`: as {@link RollupRowOf}, with `tenant_id`
 * when the read is per tenant (`P`) and `rank` (1 = first) with `tenant_id` when it asks for a top
 * (`R`). On a table not declared precisely it is {@link RollupAcrossRow}.
 *
 * ### Examples
 * ```ts
 * const top = await rollup.readAcross(db, { from: '2025-10', to: '2025-12', combineMonths: true, groupBy: [], top: { by: 'total', n: 20 } })
 * for (const { tenant_id, rank, total } of top) console.log(rank, tenant_id, total)
 * ```
 */
export type RollupAcrossRowOf<T extends RollupTable, K extends string = GroupNameOf<T>, P extends boolean = false, R = undefined> =
  Precise<T> extends true ? Flat<MonthPart & TenantPart<T, P, R> & GroupValues<T, K> & MeasureValues<T>> : RollupAcrossRow

/** The names a read's `percentiles` takes: the table's `'tdigest'` measures (any name on a table not declared precisely). */
export type PercentileNameOf<T extends RollupTable> = string extends MeasureNameOf<T> ? string : TdigestMeasureOf<T>

/** The names `top.by` takes: the table's measures other than `'tdigest'` ones. */
export type RankableMeasureOf<T extends RollupTable> = Exclude<MeasureNameOf<T>, TdigestMeasureOf<T>>

/** `percentiles` of a read: the `'tdigest'` measures named `D` to lists of percentiles. */
export type PercentilesFor<D extends string> = { readonly [N in D]?: readonly number[] }

/**
 * {@link ReadOptions} whose `groupBy` names the group columns `K` (the ones the rows keep) and whose
 * `percentiles` name the `'tdigest'` measures `D`: what {@link ReadOptionsOf} resolves to.
 */
export interface ReadOptionsWith<K extends string = string, D extends string = string> extends Omit<
  ReadOptions,
  'groupBy' | 'percentiles'
> {
  /** Keep only these group columns, re-aggregating the measures over the others (`[]`: one row per month). */
  groupBy?: readonly K[]
  /** The percentiles to return for each `'tdigest'` measure (`approxPercentiles`): `{ latency: [0.5, 0.95] }`. */
  percentiles?: PercentilesFor<D>
}

/**
 * {@link ReadOptions} of a read on the table `T`: `groupBy` names its group columns (`K`, the ones
 * the rows keep) and `percentiles` its `'tdigest'` measures, checked at compile time.
 *
 * ### Examples
 * ```ts
 * const options: ReadOptionsOf<typeof expensesMonthly> = { tenantId: 42, from: '2025-01', to: '2025-12', groupBy: ['category'] }
 * ```
 */
export type ReadOptionsOf<T extends RollupTable = RollupTable, K extends string = GroupNameOf<T>> = ReadOptionsWith<
  GroupInputOf<T, K>,
  PercentileNameOf<T>
>

/** `top` of a read across tenants: `by` one of the measures `M`. */
export interface RollupTop<M extends string = string> {
  /** The measure ranked by. */
  by: M
  /** How many tenants per month (or range) and kept group. */
  n: number
  /** `'desc'` (default): the largest first. */
  order?: 'desc' | 'asc'
}

/** `top` of a read across tenants on the table `T`: `by` one of its measures that is not a `'tdigest'`. */
export type TopOf<T extends RollupTable = RollupTable> = RollupTop<RankableMeasureOf<T>>

/**
 * What a read's `top` may be when it is `R`: `R` itself when `by` names a measure of `T` that is
 * not a `'tdigest'` (or is any `string`, checked at run time), {@link TopOf} otherwise (so that
 * the compiler names the measures).
 */
export type TopInputOf<T extends RollupTable, R extends RollupTop | undefined> = false extends TopOk<T, R> ? TopOf<T> : R

/** Whether `top.by` names a measure of `T` that is not a `'tdigest'` (`true` for any `string`, or no `top`). */
type TopOk<T extends RollupTable, R> = R extends { by: infer B extends string }
  ? string extends B
    ? true
    : B extends RankableMeasureOf<T>
      ? true
      : false
  : true

/**
 * {@link ReadAcrossOptions} whose `groupBy` names the group columns `K`, `percentiles` the
 * `'tdigest'` measures `D` and `top.by` the measures `M`; `perTenant` (`P`) and `top` (`R`) decide
 * whether the rows carry `tenant_id` and `rank`: what {@link ReadAcrossOptionsOf} resolves to.
 */
export interface ReadAcrossOptionsWith<
  K extends string = string,
  D extends string = string,
  M extends string = string,
  P extends boolean = boolean,
  R extends RollupTop | undefined = RollupTop<M> | undefined,
> extends Omit<ReadAcrossOptions, 'groupBy' | 'percentiles' | 'perTenant' | 'top'> {
  /** Keep only these group columns (`[]`: none); the measures combine over the rest. Default: every group. */
  groupBy?: readonly K[]
  /** One row per tenant (its `tenant_id` in the row) instead of the fleet combined. Implied by `top`. */
  perTenant?: P
  /** The `n` tenants with the largest (or smallest) `by` in each month (or the range, with `combineMonths`) and kept group. */
  top?: R
  /** Percentiles of `'tdigest'` measures: `{ latency: [0.5, 0.95] }`. */
  percentiles?: PercentilesFor<D>
}

/**
 * {@link ReadAcrossOptions} of a read across tenants on the table `T`: `groupBy` names its group
 * columns (`K`), `top.by` one of its measures, `percentiles` its `'tdigest'` measures; `perTenant`
 * (`P`) and `top` (`R`) decide whether the rows carry `tenant_id` and `rank`.
 *
 * ### Examples
 * ```ts
 * const options: ReadAcrossOptionsOf<typeof expensesMonthly> = { from: '2025-01', to: '2025-12', top: { by: 'total', n: 20 } }
 * ```
 */
export type ReadAcrossOptionsOf<
  T extends RollupTable = RollupTable,
  K extends string = GroupNameOf<T>,
  P extends boolean = boolean,
  R extends RollupTop | undefined = TopOf<T> | undefined,
> = ReadAcrossOptionsWith<GroupInputOf<T, K>, PercentileNameOf<T>, RankableMeasureOf<T>, P, TopInputOf<T, R>>

/**
 * {@link MonthlyRollupConfig} checked against its target `T` at compile time: `groupBy` lists the
 * target's group columns (each once, none missing; their order — the declaration's — is checked
 * at run time) and `measures` has one fragment per measure column of the target, no other. On a
 * target not declared precisely it is `MonthlyRollupConfig`.
 *
 * ### Examples
 * ```ts
 * new MonthlyRollup({ source: 'expenses', target: expensesMonthly, at: 'paid_at', tenant: 'tenant_id', zone: 'UTC',
 *   groupBy: ['category'], measures: { total: sql`sum(amount)`, count: sql`count(*)` } })
 * ```
 */
export interface MonthlyRollupConfigOf<T extends RollupTable = RollupTable> extends Omit<
  MonthlyRollupConfig,
  'target' | 'groupBy' | 'measures'
> {
  /** The rollup table from {@link rollupTable}. */
  target: T
  /** Source columns to group by: the target's group columns, same names, in the target's order. */
  groupBy: GroupByOf<T>
  /** Aggregate expressions per target measure, as Kysely `sql` fragments: `{ total: sql\`sum(amount)\` }`. */
  measures: MeasuresOf<T>
}

/**
 * Every ordering of the union `U` as a tuple: exact for up to 3 names; beyond, the first 3 are
 * distinct names and the rest any of the others (a union of n!/(n-3)! tuples, not n!).
 */
type Orderings<U, All = U, Depth extends unknown[] = []> = [U] extends [never]
  ? readonly []
  : Depth['length'] extends 3
    ? readonly U[]
    : U extends unknown
      ? readonly [U, ...Orderings<Exclude<All, U>, Exclude<All, U>, [...Depth, unknown]>]
      : never

/** `groupBy` of a rollup on the table `T`: its group columns, each once (any order at compile time). */
export type GroupByOf<T extends RollupTable> = string extends GroupNameOf<T> ? readonly string[] : Orderings<GroupNameOf<T>>

/** `measures` of a rollup on the table `T`: one Kysely `sql` fragment per measure column. */
export type MeasuresOf<T extends RollupTable> =
  string extends MeasureNameOf<T>
    ? Readonly<Record<string, RawBuilder<unknown>>>
    : { readonly [N in MeasureNameOf<T>]: RawBuilder<unknown> }
