import type { ServerInfo } from '../../src/index.js'
import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import type { BudgetMeasurement } from './run-budget.js'

/** What one budget run measured. */
export interface BudgetReport {
  platform: string
  server: ServerInfo
  repeats: number
  blocks: number
  results: Record<string, BudgetMeasurement>
}

/**
 * The budget's table: µs of client CPU per call, pgscale and raw, and their ratio.
 *
 * ### Examples
 * ```ts
 * console.log(renderBudget(report))
 * ```
 */
export function renderBudget(r: BudgetReport): string {
  return [
    `performance budget — ${r.platform}, ${r.server.provider} PostgreSQL ${r.server.serverVersion}; client CPU per call; ${r.repeats} measurements of ${r.blocks} interleaved blocks each, the median ratio kept`,
    renderTable(
      ['path', 'pgscale µs', 'raw pg µs', 'ratio'],
      Object.entries(r.results).map(([k, v]) => [k, fmt(v.pgscaleMicros), fmt(v.rawMicros), `${fmt(v.ratio)}×`]),
    ),
  ].join('\n')
}
