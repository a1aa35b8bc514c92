import { sql, type Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import { InvalidArgumentError, toPgScaleError } from '../../errors.js'
import { assertIdentifier, assertQualifiedName, fitIdentifier } from '../../sql/identifier.js'
import { quoteQualified } from '../../sql/quote.js'
import { rowSecurityDdl, rowSecurityOn } from '../../db/security/row-security.js'
import { assertColumnType, sketchKind, type RollupMigrationOptions, type RollupTable } from '../config/index.js'
import { ensureSketchExtensions } from './sketch-extensions.js'
import type { ColumnTypes, RollupTableConfigOf, RollupTableOf } from './rollup-types.js'

/**
 * Declares a rollup table: `tenant_id`, `month` (a `date`, the first day of the local month), the
 * group columns and the measure columns, unique on `(tenant_id, month, ...groups)` — led by the
 * tenant, so it can be distributed by tenant (Citus) later. Null groups are one group
 * (`NULLS NOT DISTINCT`, PostgreSQL 15+).
 *
 * The columns are in the returned table's type ({@link RollupTableOf}): a column type the
 * declaration does not accept (`'numerci(14,2)'`) does not compile, a `MonthlyRollup` on the table
 * has its `groupBy` and `measures` checked against it, and its `read`/`readAcross` rows are typed
 * ({@link RollupRowOf}: `numeric` as `string`, `integer` as `number`, `bigint` as `string | number`
 * — what the drivers return). Declared from a `Record<string, string>` it is the loose `RollupTable`.
 *
 * ### Examples
 * ```ts
 * const expensesMonthly = rollupTable('expenses_monthly', {
 *   groupBy: { category: 'varchar(64)' },
 *   measures: { total: 'numeric(14,2)', count: 'integer' },
 * })
 * await expensesMonthly.create(db)
 * ```
 */
export function rollupTable<const G extends ColumnTypes, const M extends ColumnTypes, const TT extends string = 'text'>(
  name: string,
  config: RollupTableConfigOf<G, M, TT>,
): RollupTableOf<G, M, TT> {
  const { schema, name: table } = assertQualifiedName(name, 'rollup table name')
  if (config === null || typeof config !== 'object') throw new InvalidArgumentError('rollupTable needs { groupBy, measures }')
  const columns = (record: unknown, kind: string, allowSketches = false) => {
    if (record === null || typeof record !== 'object' || Array.isArray(record))
      throw new InvalidArgumentError(`rollupTable: ${kind} must be an object of column types`)
    return Object.entries(record as Record<string, unknown>).map(([column, type]) => ({
      name: assertIdentifier(column, `${kind} column`),
      type: assertColumnType(type, `${kind} column ${column}`, { sketches: allowSketches }),
    }))
  }
  const groupBy = columns(config.groupBy, 'groupBy')
  const measures = columns(config.measures, 'measures', true)
  if (measures.length === 0) throw new InvalidArgumentError('rollupTable: declare at least one measure')
  const all = ['tenant_id', 'month', ...groupBy.map((g) => g.name), ...measures.map((m) => m.name)]
  const duplicate = all.find((c, i) => all.indexOf(c) !== i)
  if (duplicate) throw new InvalidArgumentError(`rollupTable: column ${duplicate} is declared twice (tenant_id and month are implicit)`)
  const tenantType = assertColumnType(config.tenantType ?? 'text', 'tenantType')
  if (config.isolation !== undefined && config.isolation !== 'none' && config.isolation !== 'rls')
    throw new InvalidArgumentError(`rollupTable: isolation must be 'none' or 'rls', got ${JSON.stringify(config.isolation)}`)
  const isolation = config.isolation ?? 'none'
  const security = () =>
    isolation === 'rls' ? rowSecurityDdl(qualified, { textTenant: /^(text|varchar|character varying)/i.test(tenantType) }) : []
  const qualified = quoteQualified(schema, table)

  const sketches = measures.flatMap((m) => sketchKind(m.type) ?? [])
  const tableDdl = () => {
    const definitions = [
      `tenant_id ${tenantType} not null`,
      'month date not null',
      ...groupBy.map((g) => `"${g.name}" ${g.type}`),
      ...measures.map((m) => `"${m.name}" ${m.type}`),
      `constraint "${fitIdentifier(table, 'key')}" unique nulls not distinct (tenant_id, month${groupBy.map((g) => `, "${g.name}"`).join('')})`,
      `constraint "${fitIdentifier(table, 'month_is_first_day')}" check (extract(day from month) = 1)`,
    ]
    return `create table if not exists ${qualified} (\n  ${definitions.join(',\n  ')}\n)`
  }
  // Month-led: what readAcross scans (the key serves one tenant's reads); the tenant second, so a plan that picks
  // it for one bucket (a refresh's delete of `tenant_id = $1 and month = $2`) still finds the bucket, not the month.
  const monthIndex = `create index if not exists "${fitIdentifier(table, 'month')}" on ${qualified} (month, tenant_id)`
  const create = async (db: Kysely<any>) => {
    // There already (the usual case once deployed): nothing to create, so any role may call it.
    const { rows } = await sql<{ present: boolean }>`select to_regclass(${qualified}) is not null as present`.execute(db)
    if (rows[0]?.present) {
      // A table made before its isolation was asked for gets its policies (the owner's migration).
      if (isolation === 'rls' && !(await rowSecurityOn(db, [qualified])))
        for (const statement of security()) await sql.raw(statement).execute(db)
      return
    }
    if (sketches.length) await ensureSketchExtensions(db, sketches)
    await sql.raw(tableDdl()).execute(db)
    await sql.raw(monthIndex).execute(db)
    for (const statement of security()) await sql.raw(statement).execute(db)
  }
  return {
    name,
    qualified,
    groupBy,
    measures,
    tenantType,
    isolation,
    create: (db: Kysely<any>) => serverErrorsTyped(create(db)),
    ddl: () => [...new Set(sketches)].map((kind) => `create extension if not exists ${kind}`).concat(tableDdl(), monthIndex, security()),
    migration: (options: RollupMigrationOptions = {}) => {
      const grants = tableGrants(schema, qualified, options?.runtimeRole) // the role checked before anything runs
      const up = async (db: Kysely<any>) => {
        await create(db)
        await sql.raw(monthIndex).execute(db) // a table made before readAcross gets its index here
        for (const grant of grants) await sql.raw(grant).execute(db)
      }
      return {
        up: (db: Kysely<any>) => serverErrorsTyped(up(db)),
        down: (db: Kysely<any>) => serverErrorsTyped(sql.raw(`drop table if exists ${qualified}`).execute(db)).then(() => undefined),
      }
    },
  } satisfies RollupTable as unknown as RollupTableOf<G, M, TT> // the types are the compiler's; the values were checked above
}

/** `work`, a server error it fails with as a `DatabaseError` (SQLSTATE, the driver's error as `cause`), whatever the handle. */
async function serverErrorsTyped<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    throw toPgScaleError(err)
  }
}

/** A table's columns as the database has them, to check a declaration against an existing table. */
export async function existingColumns(db: Database, qualified: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select attname as name from pg_attribute
    where attrelid = to_regclass(${qualified}) and attnum > 0 and not attisdropped order by attnum`.execute(db)
  return rows.map((r) => r.name)
}

/**
 * What a runtime role needs on a table pgscale created: `USAGE` on its schema and `SELECT,
 * INSERT, UPDATE, DELETE` on it; nothing without a role.
 *
 * ### Examples
 * ```ts
 * tableGrants(undefined, '"expenses_monthly"', 'app') // ['grant usage on schema "public" to "app"', …]
 * ```
 */
export function tableGrants(schema: string | undefined, qualified: string, role: string | undefined): string[] {
  if (role === undefined) return []
  const grantee = `"${assertIdentifier(role, 'runtime role')}"`
  return [
    `grant usage on schema "${schema ?? 'public'}" to ${grantee}`,
    `grant select, insert, update, delete on ${qualified} to ${grantee}`,
  ]
}
