import { rollupTable } from '../src/index.js'

/**
 * A dashboard rollup's table, `expenses_monthly`: totals and counts per tenant, local month and
 * category, for a `MonthlyRollup` over an `expenses` table. Change the groups and measures to yours.
 */
export const expensesMonthly = rollupTable('expenses_monthly', {
  groupBy: { category: 'varchar(64)' },
  measures: { total: 'numeric(14,2)', count: 'integer' },
  tenantType: 'bigint',
})

export const { up, down } = expensesMonthly.migration()
