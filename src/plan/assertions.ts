import { PlanAssertionError } from '../errors.js'
import { indexesUsed, planNodes, planShape, type Plan, type PlanNode } from './explain.js'

/** The plan as an indented tree, for failure messages. */
export function renderPlan(plan: Plan): string {
  const lines: string[] = []
  const walk = (node: PlanNode, depth: number) => {
    const on = [node['Index Name'] && `using ${node['Index Name']}`, node['Relation Name'] && `on ${node['Relation Name']}`]
      .filter(Boolean)
      .join(' ')
    const rows = node['Actual Rows'] ?? node['Plan Rows']
    lines.push(`${'  '.repeat(depth)}-> ${node['Node Type']}${on ? ` ${on}` : ''}${rows !== undefined ? `  (rows=${rows})` : ''}`)
    for (const child of node.Plans ?? []) walk(child, depth + 1)
  }
  walk(plan.Plan, 0)
  return lines.join('\n')
}

function fail(plan: Plan, what: string): never {
  throw new PlanAssertionError(`${what}\n\nstatement:\n  ${plan.sql.trim().replace(/\s+/g, ' ')}\n\nplan:\n${renderPlan(plan)}`)
}

/**
 * Asserts that the plan reads index `name`; otherwise throws {@link PlanAssertionError} with the
 * statement and the plan printed.
 *
 * ### Examples
 * ```ts
 * usesIndex(await explain(db, deleteSql, ['acme', 'doc-1']), 'rag_chunks_pkey')
 * ```
 */
export function usesIndex(plan: Plan, name: string): void {
  if (!indexesUsed(plan).includes(name))
    fail(plan, `expected the plan to use index ${name}; it uses ${indexesUsed(plan).join(', ') || 'no index'}`)
}

/**
 * Asserts that the plan has no sequential scan of `table`.
 *
 * ### Examples
 * ```ts
 * noSeqScan(plan, 'expenses')
 * ```
 */
export function noSeqScan(plan: Plan, table: string): void {
  const scans = planNodes(plan).filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === table)
  if (scans.length) fail(plan, `expected no Seq Scan on ${table}; the plan has ${scans.length}`)
}

/**
 * Fluent plan assertions for tests: each throws {@link PlanAssertionError} with the plan printed.
 *
 * ### Examples
 * ```ts
 * expectPlan(plan).toUse('rag_chunks_pkey').not.toSeqScan('rag_chunks')
 * expectPlan(plan).toHaveShape('Limit > Index Scan [rag_chunks_pkey on rag_chunks]')
 * ```
 */
export function expectPlan(plan: Plan) {
  const api = {
    /** Asserts the plan uses the index `index` (by name). */
    toUse(index: string) {
      usesIndex(plan, index)
      return api
    },
    /** Asserts the plan's shape ({@link planShape}) is exactly `shape`. */
    toHaveShape(shape: string) {
      const actual = planShape(plan)
      if (actual !== shape) fail(plan, `plan shape changed\n  expected: ${shape}\n  actual:   ${actual}`)
      return api
    },
    /** The negated assertions. */
    not: {
      /** Asserts the plan does not use the index `index`. */
      toUse(index: string) {
        if (indexesUsed(plan).includes(index)) fail(plan, `expected the plan not to use index ${index}`)
        return api
      },
      /** Asserts the plan has no sequential scan of `table` ({@link noSeqScan}). */
      toSeqScan(table: string) {
        noSeqScan(plan, table)
        return api
      },
    },
  }
  return api
}
