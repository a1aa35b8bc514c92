import type { ServerInfo } from '../../../src/index.js'
import type { MachineInfo } from '../../report/machine.js'
import type { PlanningPoint } from './planning-cost.js'

/** What `rag-bench planning --json` writes. */
export interface PlanningReport {
  machine: MachineInfo
  server: ServerInfo
  method: string
  points: PlanningPoint[]
}

/**
 * The planning-cost curve as a table, one row per layout and index count.
 *
 * ### Examples
 * ```ts
 * console.log(renderPlanningReport(report))
 * ```
 */
export function renderPlanningReport(r: PlanningReport): string {
  const f = (n: number) => n.toFixed(n < 1 ? 3 : n < 10 ? 2 : 1).padStart(8)
  const lines = [
    `rag-bench planning — ${r.machine.cpu}, ${r.machine.cores} cores; PostgreSQL ${r.server.serverVersion}, pgvector ${r.server.pgvectorVersion}`,
    `method: ${r.method}`,
    '',
    'layout            indexes   plan ms warm (own / none)   plan ms fresh (own / none)   search ms (own / none)   own index used',
  ]
  for (const p of r.points) {
    lines.push(
      `${p.layout.padEnd(16)} ${String(p.indexes).padStart(8)}   ${f(p.warmPlanMs.ownIndex)} / ${f(p.warmPlanMs.noIndex)}      ${f(p.freshPlanMs.ownIndex)} / ${f(p.freshPlanMs.noIndex)}       ${f(p.searchMs.ownIndex)} / ${f(p.searchMs.noIndex)}   ${p.usesOwnIndex ? 'yes' : 'no'}`,
    )
  }
  return lines.join('\n')
}
