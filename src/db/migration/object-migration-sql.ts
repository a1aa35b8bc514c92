import { dollarQuote } from '../../sql/literal.js'
import { bookkeepingStatements, objectSchema, objectVersionTable } from './bookkeeping.js'

/** One versioned object's migration, to print as plain SQL. */
export interface ObjectMigrationText {
  /** The object's key in its schema's `pgscale_object_version` (`store:public.rag_chunks`). */
  key: string
  /** The relation the object is (its oid is recorded); default the key's `"schema"."name"`. */
  relation?: string
  /** The configuration recorded with it; another one recorded before stops the script. */
  config: Readonly<Record<string, unknown>>
  /** Values of keys recorded before they existed (compared as these). */
  recordedDefaults?: Readonly<Record<string, unknown>>
  /** The version the statements bring it to. */
  version: number
  /** The object's DDL, idempotent (`if not exists`, `create or replace`). */
  statements: readonly string[]
  /** Statements after the version row: grants, row-level security. */
  after?: readonly string[]
  /** Write the version row. Default true. */
  record?: boolean
  /** Stop when the object was recorded with another configuration. Default true (a rollup's tracking re-creates instead). */
  checkConfig?: boolean
}

/**
 * A versioned object's migration as one transaction of plain SQL, for teams whose migrations are
 * SQL files (Flyway, Sqitch, dbmate, psql in a deploy step): the same locks as `migrateObject`
 * (two runs at once take turns), a check that stops with an error when the object was recorded
 * with another configuration, the object's idempotent DDL, its version row and the grants.
 * Running it twice changes nothing the second time.
 *
 * ### Examples
 * ```ts
 * console.log(objectMigrationSql({ key: 'store:public.rag_chunks', config, version: 4, statements }))
 * ```
 */
export function objectMigrationSql(m: ObjectMigrationText): string {
  const schema = objectSchema(m.key)
  const table = objectVersionTable(schema)
  const key = dollarQuote(m.key)
  const relation = m.relation ?? `"${schema}"."${m.key.slice(m.key.indexOf('.') + 1)}"`
  const checks = Object.entries(m.config).map(([k, v]) => {
    const fallback = m.recordedDefaults && k in m.recordedDefaults ? dollarQuote(JSON.stringify(m.recordedDefaults[k])) : 'null'
    return `coalesce(config -> ${dollarQuote(k)}, ${fallback}::jsonb) is distinct from ${dollarQuote(JSON.stringify(v))}::jsonb`
  })
  return [
    `-- pgscale: ${m.key} at version ${m.version}. One transaction; running it again changes nothing.`,
    'begin;',
    // The schema's bookkeeping first, under its lock (as migrateObject): its version and lease
    // tables, and its records moved out of the old public table.
    ...bookkeepingStatements(schema).map((s) => `${s};`),
    `select pg_advisory_xact_lock(hashtext('pgscale.object'), hashtext(${key}));`,
    ...(m.checkConfig === false
      ? []
      : [
          `do $pgscale$ begin
  if exists (select 1 from ${table} where object = ${key} and (${checks.length ? checks.join(' or ') : 'false'})) then
    raise exception 'pgscale: % exists with a different configuration (recorded: %)', ${key}, (select config from ${table} where object = ${key});
  end if;
end $pgscale$;`,
        ]),
    ...m.statements.map((s) => `${s.trim()};`),
    ...(m.record === false
      ? []
      : [
          `insert into ${table} (object, version, config, relid) values (${key}, ${m.version}, ${dollarQuote(JSON.stringify(m.config))}::jsonb, to_regclass(${dollarQuote(relation)}))
  on conflict (object) do update set version = greatest(${table}.version, excluded.version), config = excluded.config, relid = excluded.relid;`,
        ]),
    ...(m.after ?? []).map((s) => `${s.trim()};`),
    'commit;',
    '',
  ].join('\n')
}
