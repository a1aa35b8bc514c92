import { sql } from 'kysely'
import { MonthlyRollup, rollupTable, type RollupTable } from '../../src/index.js'
import { seededRandom } from './random.js'

/** One expense row as the benches and tests seed it. */
export interface ExpenseRow {
  tenantId: number
  paidAt: Date
  category: string
  amount: string
  status: 'paid' | 'pending' | 'cancelled'
}

/** What a synthetic expenses table looks like. */
export interface ExpensesSpec {
  seed: string | number
  /** Rows in all. */
  rows: number
  /** Tenants; tenant 1 is the big one. */
  tenants: number
  /** Rows of tenant 1 (the rest spread over the others). */
  bigTenantRows: number
  /** Months of history, ending with `end`'s month. */
  months: number
  /** The latest moment. Default 2025-12-31T23:00:00Z. */
  end?: Date
}

export const CATEGORIES = [
  'travel',
  'meals',
  'software',
  'hardware',
  'office',
  'marketing',
  'training',
  'legal',
  'rent',
  'utilities',
  'insurance',
  'other',
]

/**
 * Streams seeded expenses in time order, as an application inserts them: one big tenant (exactly
 * `bigTenantRows`, spread evenly over time) and the others taking turns, uniformly over the last
 * `months` months, 12 categories (skewed), ~5% cancelled. Same spec, same rows.
 *
 * ### Examples
 * ```ts
 * for (const e of generateExpenses({ seed: 42, rows: 10_000, tenants: 10, bigTenantRows: 3_000, months: 12 })) ...
 * ```
 */
export function* generateExpenses(spec: ExpensesSpec): Generator<ExpenseRow> {
  const random = seededRandom(`${spec.seed}:expenses`)
  const end = (spec.end ?? new Date('2025-12-31T23:00:00Z')).getTime()
  const span = spec.months * 30.44 * 24 * 3600 * 1000
  const start = end - span
  const others = Math.max(1, spec.tenants - 1)
  const big = spec.tenants === 1 ? spec.rows : Math.min(spec.bigTenantRows, spec.rows)
  let bigSoFar = 0
  let otherSoFar = 0
  for (let i = 0; i < spec.rows; i++) {
    // Bresenham: the big tenant gets exactly `big` of the rows, evenly spread.
    const isBig = Math.floor(((i + 1) * big) / spec.rows) > bigSoFar
    const tenantId = isBig ? 1 : 2 + (otherSoFar++ % others)
    if (isBig) bigSoFar++
    const status = random.next() < 0.05 ? 'cancelled' : random.next() < 0.1 ? 'pending' : 'paid'
    yield {
      tenantId,
      paidAt: new Date(Math.floor(start + ((i + random.next()) / spec.rows) * span)),
      category: CATEGORIES[Math.floor(random.next() ** 1.5 * CATEGORIES.length)]!,
      amount: (1 + random.next() * 999).toFixed(2),
      status,
    }
  }
}

/**
 * DDL of the expenses table the benches and tests use (`table` may be schema-qualified). The
 * `(tenant_id, paid_at)` index is separate, so a bulk load can build it afterwards.
 */
export function expensesDdl(table = 'expenses'): { table: string; index: string } {
  const indexName = `${table.split('.').pop()}_tenant_paid_at`
  return {
    table: `create table if not exists ${table} (
      id bigserial,
      tenant_id bigint not null,
      paid_at timestamptz not null,
      category varchar(64),
      amount numeric(12,2) not null,
      status text not null,
      primary key (tenant_id, id)
    )`,
    index: `create index if not exists ${indexName} on ${table} (tenant_id, paid_at)`,
  }
}

/** Encodes expenses as COPY text lines: `tenant_id, paid_at, category, amount, status`. */
export function* expensesCopyText(rows: Iterable<ExpenseRow>, linesPerChunk = 5000): Generator<Buffer> {
  let lines: string[] = []
  for (const r of rows) {
    lines.push(`${r.tenantId}\t${r.paidAt.toISOString()}\t${r.category}\t${r.amount}\t${r.status}`)
    if (lines.length >= linesPerChunk) {
      yield Buffer.from(lines.join('\n') + '\n')
      lines = []
    }
  }
  if (lines.length) yield Buffer.from(lines.join('\n') + '\n')
}

/**
 * The expenses dashboard's rollup, as the benches, the budget and the tests declare it: totals and
 * counts by category per local month, cancelled expenses left out.
 *
 * ### Examples
 * ```ts
 * const { target, rollup } = expensesRollup({ source: 'expenses', target: 'expenses_monthly', zone: 'America/Mexico_City' })
 * ```
 */
export function expensesRollup(o: { source: string; target: string; zone: string }): { target: RollupTable; rollup: MonthlyRollup } {
  const target = rollupTable(o.target, {
    groupBy: { category: 'varchar(64)' },
    measures: { total: 'numeric(14,2)', count: 'integer' },
    tenantType: 'bigint',
  })
  const rollup = new MonthlyRollup({
    source: o.source,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)`, count: sql`count(*)` },
    where: sql`status <> 'cancelled'`,
    zone: o.zone,
  })
  return { target, rollup }
}
