import type { MetadataFilter, OrderedOperand } from './filter-tree.js'

/**
 * The filter language as types, for apps that want the compiler to check their filters: an unknown
 * operator (`$inn`), an operator at the wrong place or an operand of the wrong kind does not
 * compile; every documented operator does (docs/store.md "Filters"). {@link Filter} is any filter;
 * {@link FilterOf} a filter over a declared metadata shape, which also checks field names and
 * operand types. Both are accepted wherever a `MetadataFilter` is (`search`, `find`, `count`, ...).
 * The parser checks the same rules at run time, whatever the types said.
 */

/** A scalar an equality compares with; a `Date` is an instant (compared with ISO-8601 strings). */
export type FilterScalar = string | number | boolean | null | Date

/** A JSON value inside an equality operand: an object's keys never start with `$` (those are operators). */
export type FilterJson = string | number | boolean | null | readonly FilterJson[] | FilterJsonObject

/** An object compared by deep equality; a `$` key is an operator, so it is not one of its keys. */
export type FilterJsonObject = { readonly [key: string]: FilterJson } & { readonly [key: `$${string}`]: never }

/** The operand of `$eq`/`$ne` and of a plain `{ field: value }`: a JSON value, or a `Date`. */
export type FilterValue = FilterJson | Date

/** The element type of an array type, or the type itself. */
type ElementOf<V> = V extends readonly (infer E)[] ? E : V

/** What `$eq` compares a field of type `V` with: the value, one of its elements, or null (missing). */
type EqualsOperand<V> = unknown extends V ? FilterValue : V | ElementOf<V> | null

/** The operand of `$gt $gte $lt $lte` on a field of type `V`. */
type OrderOperand<V> = unknown extends V
  ? OrderedOperand
  : ElementOf<V> extends number
    ? number
    : ElementOf<V> extends string
      ? string | Date
      : OrderedOperand

/**
 * The operators of one field; `V` is its declared type in a {@link FilterOf}, `unknown` otherwise.
 *
 * ### Examples
 * ```ts
 * const price: FieldOperators = { $gte: 10, $lt: 20 }
 * const tags: FieldOperators<string[]> = { $all: ['red', 'blue'], $size: 2 }
 * ```
 */
export interface FieldOperators<V = unknown> {
  /** Some value at the field (or an element of an array there) equals the operand: deep, type-strict equality. */
  $eq?: EqualsOperand<V>
  /** The negation of `$eq`: also matches where the field is missing. */
  $ne?: EqualsOperand<V>
  /** Some value greater than the operand, of the operand's type (numbers, strings in code-point order, a `Date` as an instant). */
  $gt?: OrderOperand<V>
  /** Some value greater than or equal to the operand, of its type. */
  $gte?: OrderOperand<V>
  /** Some value less than the operand, of its type. */
  $lt?: OrderOperand<V>
  /** Some value less than or equal to the operand, of its type. */
  $lte?: OrderOperand<V>
  /** `$eq` of any of them; `[]` matches nothing. */
  $in?: readonly EqualsOperand<V>[]
  /** The negation of `$in` (also where the field is missing); `[]` matches everything. */
  $nin?: readonly EqualsOperand<V>[]
  /** `$eq` of every one of them; `[]` matches nothing. */
  $all?: readonly EqualsOperand<ElementOf<V>>[]
  /** An array of this many elements (a non-negative integer). */
  $size?: number
  /** The key is there (`true`; a JSON null is) or not (`false`). */
  $exists?: boolean
  /** One element satisfies all of it: operators for scalar elements, a filter of fields for object elements. */
  $elemMatch?: FieldOperators<ElementOf<V>> | ElementFilter<V>
  /** The negation of its operators (matches where the field is missing). */
  $not?: FieldOperators<V>
}

/** `$elemMatch`'s fields form: a filter of the elements' fields. */
type ElementFilter<V> = unknown extends V ? Filter : ElementOf<V> extends object ? FilterOfFields<ElementOf<V>> : never

/**
 * The condition on one field: a value it must equal, or its operators.
 *
 * ### Examples
 * ```ts
 * const kind: FieldCondition = { $in: ['faq', 'blog'] }
 * const year: FieldCondition<number> = 2024
 * ```
 */
export type FieldCondition<V = unknown> = EqualsOperand<V> | FieldOperators<V>

/** `$and`, `$or`, `$nor` over sub-filters (non-empty arrays: an empty one is refused at run time). */
export type LogicalOperators<F> = {
  /** Every sub-filter matches. */
  readonly $and?: readonly F[]
  /** At least one sub-filter matches. */
  readonly $or?: readonly F[]
  /** No sub-filter matches. */
  readonly $nor?: readonly F[]
}

/**
 * Any metadata filter, checked by the compiler: fields (or dotted paths) take a value or
 * {@link FieldOperators}, and `$and $or $nor` sub-filters. `{ a: { $inn: [1] } }` does not compile.
 *
 * ### Examples
 * ```ts
 * const filter: Filter = { kind: 'invoice', year: { $gte: 2024 }, $or: [{ owner: 'ana' }, { shared: true }] }
 * await acme.search(embedding, { k: 10, filter })
 * ```
 */
export interface Filter extends LogicalOperators<Filter> {
  readonly [field: string]: FieldCondition | readonly Filter[] | undefined
}

/**
 * A filter over metadata of the declared shape `M`: a field of `M` takes a value of its type (or
 * one of its elements, for an array) or operators with operands of its type, a misspelt field or
 * operator does not compile; dotted paths (`'owner.team'`) take any condition. With an index
 * signature (`Record<string, unknown>`) it is {@link Filter}.
 *
 * ### Examples
 * ```ts
 * type Doc = { source: string; year: number; tags: string[] }
 * const filter: FilterOf<Doc> = { source: { $in: ['refunds', 'faq'] }, year: { $gte: 2024 }, tags: 'billing' }
 * await acme.search(embedding, { k: 10, filter })
 * ```
 */
export type FilterOf<M> = string extends keyof M ? Filter : FilterOfFields<M>

/** {@link FilterOf} a shape without an index signature: its fields, dotted paths, logical operators. */
export type FilterOfFields<M> = { readonly [K in keyof M & string]?: FieldCondition<M[K]> } & {
  readonly [path: `${string}.${string}`]: FieldCondition
} & LogicalOperatorsOf<M>

/** `$and`, `$or`, `$nor` over sub-filters of the same shape. */
export type LogicalOperatorsOf<M> = {
  readonly $and?: readonly FilterOfFields<M>[]
  readonly $or?: readonly FilterOfFields<M>[]
  readonly $nor?: readonly FilterOfFields<M>[]
}

/**
 * The filter a store's methods would take for chunks whose metadata is declared as `M`:
 * {@link FilterOf} for a declared shape (fields, operators and operands checked), and the untyped
 * `MetadataFilter` (checked at run time only) when `M` has an index signature — the default
 * `Record<string, unknown>` — so a store declared without a shape keeps taking every filter it
 * took before. `search`, `find`, `count` and `deleteWhere` take `MetadataFilter` today: declare a
 * filter as `FilterOf<M>` to have it checked, and pass it.
 *
 * ### Examples
 * ```ts
 * type Doc = { source: string; year: number }
 * const typed: StoreFilter<Doc> = { year: { $gte: 2024 } } // FilterOf<Doc>
 * const untyped: StoreFilter = { anything: { $in: [1] } } // MetadataFilter
 * ```
 */
export type StoreFilter<M = Record<string, unknown>> = string extends keyof M ? MetadataFilter : FilterOf<M>
