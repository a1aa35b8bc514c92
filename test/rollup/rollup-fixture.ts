import { sql, type Kysely } from 'kysely'
import { hasCitusShardNodes, type Database } from '../../src/index.js'
import {
  expensesCopyText,
  expensesDdl,
  expensesRollup as sharedExpensesRollup,
  generateExpenses,
  type ExpensesSpec,
} from '../../bench/synthetic/expenses.js'

/**
 * The example rollup over `expenses`, in a given zone. On a Citus cluster (the opt-in run
 * with PGSCALE_TEST_CITUS_WORKERS), `target.create` also colocates the new table with `expenses`.
 */
export function expensesRollup(zone = 'America/Mexico_City', table = 'expenses_monthly') {
  const { target, rollup } = sharedExpensesRollup({ source: 'expenses', target: table, zone })
  const create = async (db: Kysely<any>): Promise<void> => {
    await target.create(db)
    if (await hasCitusShardNodes(db)) await rollup.distribute(db)
  }
  return { target: { ...target, create }, rollup }
}

/** Creates `expenses` (with its `(tenant_id, paid_at)` index; on Citus distributed by tenant unless `distribute: false`) and loads seeded rows. */
export async function seedExpenses(db: Database, spec: ExpensesSpec, options: { distribute?: boolean } = {}): Promise<void> {
  const ddl = expensesDdl()
  await sql.raw(ddl.table).execute(db)
  await sql.raw(ddl.index).execute(db)
  if (options.distribute !== false && (await hasCitusShardNodes(db))) {
    await sql`select create_distributed_table('expenses', 'tenant_id')
      where not exists (select 1 from pg_dist_partition where logicalrelid = 'expenses'::regclass)`.execute(db)
  }
  await db.copyFrom('copy expenses (tenant_id, paid_at, category, amount, status) from stdin', expensesCopyText(generateExpenses(spec)))
  await sql`analyze expenses`.execute(db)
}

/** The rollup table's rows for a tenant, as stable text. */
export async function rollupSnapshot(db: Database, table = 'expenses_monthly', tenantId = 1): Promise<string> {
  const { rows } = await sql`select to_char(month, 'YYYY-MM') as month, category, total::text, count
    from ${sql.table(table)} where tenant_id = ${tenantId} order by month, category nulls first`.execute(db)
  return JSON.stringify(rows)
}

/** The same aggregate computed from scratch with date_trunc in the zone: the reference. */
export async function fromScratch(db: Database, zone: string, tenantId = 1, first = '0001-01-01', last = '9999-12-01'): Promise<string> {
  const { rows } = await sql`
    select to_char(m, 'YYYY-MM') as month, category, total::text, count from (
      select date_trunc('month', paid_at at time zone ${zone})::date as m, category,
        sum(amount)::numeric(14,2) as total, count(*)::int as count
      from expenses where tenant_id = ${tenantId} and status <> 'cancelled'
      group by 1, 2
    ) x where m >= ${first}::date and m <= ${last}::date
    order by m, category nulls first`.execute(db)
  return JSON.stringify(rows)
}
