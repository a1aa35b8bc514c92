import { sql } from 'kysely'
import type { Database } from '../../src/index.js'
import {
  expensesCopyText,
  expensesDdl,
  expensesRollup as sharedExpensesRollup,
  generateExpenses,
  type ExpensesSpec,
} from '../../bench/synthetic/expenses.js'

/** The example rollup over `expenses`, in a given zone. */
export function expensesRollup(zone = 'America/Mexico_City', table = 'expenses_monthly') {
  return sharedExpensesRollup({ source: 'expenses', target: table, zone })
}

/** Creates `expenses` (with its `(tenant_id, paid_at)` index) and loads seeded rows. */
export async function seedExpenses(db: Database, spec: ExpensesSpec): Promise<void> {
  const ddl = expensesDdl()
  await sql.raw(ddl.table).execute(db)
  await sql.raw(ddl.index).execute(db)
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
