import { CompiledQuery, DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type RawBuilder } from 'kysely'

/** A Kysely that only compiles (PostgreSQL dialect, no connection). */
const compiler = new Kysely<any>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
})

/**
 * Compiles a `sql` fragment with the PostgreSQL dialect and no plugins (an app's
 * `CamelCasePlugin` must not change pgscale's statements).
 *
 * ### Examples
 * ```ts
 * compileSql(sql`sum(${sql.ref('amount')})`).sql // 'sum("amount")'
 * ```
 */
export function compileSql(fragment: RawBuilder<unknown>): CompiledQuery {
  return fragment.compile(compiler)
}

/** A slot for a value supplied at each call. */
class Slot {
  constructor(readonly name: string) {}
}

/**
 * Compiles a statement once and fills in its values per call: building and compiling a Kysely
 * `sql` template costs far more CPU than the round trip it prepares, on hot paths like a
 * refresh after every write. `build` receives placeholders for `names`; the SQL text is fixed.
 *
 * ### Examples
 * ```ts
 * const refresh = statementTemplate(['tenant', 'month'], (p) => sql`select ${p.tenant}, ${p.month}::date`)
 * await db.executeQuery(refresh({ tenant: 42, month: '2025-03-01' }))
 * ```
 */
export function statementTemplate<K extends string>(
  names: readonly K[],
  build: (placeholders: Record<K, unknown>) => RawBuilder<unknown>,
): (values: Record<K, unknown>) => CompiledQuery {
  const placeholders = Object.fromEntries(names.map((n) => [n, new Slot(n)])) as Record<K, unknown>
  const compiled = build(placeholders).compile(compiler)
  const slots = compiled.parameters.map((p) => (p instanceof Slot ? (p.name as K) : undefined))
  const fixed = compiled.parameters
  return (values) =>
    CompiledQuery.raw(
      compiled.sql,
      fixed.map((p, i) => (slots[i] === undefined ? p : values[slots[i]!])),
    )
}
