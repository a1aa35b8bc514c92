import { sql, type Kysely } from 'kysely'
import { fitIdentifier } from '../../sql/identifier.js'
import type { RollupParts } from '../config/index.js'

/** The covering index a rollup's refreshes read a bucket through (see `MonthlyRollup.sourceIndex`). */
export interface SourceIndex {
  /** The index's name (in the source table's schema). */
  name: string
  /** Its key: the tenant column, then the time column. */
  key: string[]
  /** The other source columns a bucket aggregate reads: groups, measured columns, `where` columns. */
  include: string[]
  /** `CREATE INDEX [CONCURRENTLY] IF NOT EXISTS … (tenant, at) INCLUDE (…)`. */
  sql: string
}

const ROLLBACK = Symbol('rollback')

/**
 * The covering index for a rollup's source: `(tenant, at) INCLUDE (every other column the bucket
 * aggregate reads)`, so a refresh can aggregate a bucket by an index-only scan once the table is
 * vacuumed. The columns are read on the server, from what a view of the aggregate depends on (a
 * temporary view in a transaction that is rolled back), so measure and `where` expressions of any
 * shape are covered.
 *
 * ### Examples
 * ```ts
 * const index = await sourceIndexFor(db, rollup.parts, { concurrently: true })
 * await sql.raw(index.sql).execute(db)
 * ```
 */
export async function sourceIndexFor(db: Kysely<any>, p: RollupParts, options: { concurrently?: boolean } = {}): Promise<SourceIndex> {
  const columns = await columnsRead(db, p)
  const include = columns.filter((c) => c !== p.tenant && c !== p.at)
  const table = p.source.split('.').at(-1)!.replace(/"/g, '')
  const name = fitIdentifier(`${table}_${p.tenant}_${p.at}`, 'rollup')
  const quoted = (c: string) => `"${c}"`
  const text =
    `create index ${options.concurrently ? 'concurrently ' : ''}if not exists ${quoted(name)} on ${p.source} ` +
    `(${[p.tenant, p.at].map(quoted).join(', ')})${include.length ? ` include (${include.map(quoted).join(', ')})` : ''}`
  return { name, key: [p.tenant, p.at], include, sql: text }
}

/** The source columns the bucket aggregate (groups, measures, where) reads, in table order. */
async function columnsRead(db: Kysely<any>, p: RollupParts): Promise<string[]> {
  const groups = p.groupBy.map((g) => sql.raw(`"${g}"`))
  const measures = p.measures.map((m, i) => sql`${m.expression} as ${sql.raw(`m${i}`)}`)
  const where = p.where ? [sql`bool_and(${p.where}) as w`] : []
  const viewName = `pgscale_source_columns_${process.pid}`
  const view = sql.raw(viewName)
  let columns: string[] = []
  try {
    await db.transaction().execute(async (trx) => {
      await sql`create temporary view ${view} as select ${sql.join([...groups, ...measures, ...where])} from ${sql.raw(p.source)}
        ${groups.length ? sql`group by ${sql.join(groups)}` : sql``}`.execute(trx)
      const { rows } = await sql<{ column: string }>`
        select a.attname as column from pg_depend d
        join pg_rewrite r on r.oid = d.objid
        join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
        where r.ev_class = ${`pg_temp.${viewName}`}::regclass and d.refobjid = ${p.source}::regclass
        order by a.attnum`.execute(trx)
      columns = rows.map((r) => r.column)
      throw ROLLBACK
    })
  } catch (err) {
    if (err !== ROLLBACK) throw err
  }
  return [...new Set([p.tenant, p.at, ...columns])]
}
