import type { ServerInfo } from '../../src/index.js'
import { machineInfo, type MachineInfo } from './machine.js'

/** What every bench report starts with, in JSON. */
export interface ReportHeader {
  bench: string
  startedAt: string
  machine: MachineInfo
  server: ServerInfo & { skipped?: Array<{ provider: string; reason: string }> }
  parameters: Record<string, unknown>
  method: string
}

/**
 * The header of a report: machine, provider, versions, settings, parameters and method.
 *
 * ### Examples
 * ```ts
 * const header = reportHeader('rollup-bench', info, { rows: 3_000_000 }, '30 reps, medians')
 * console.log(renderHeader(header))
 * ```
 */
export function reportHeader(
  bench: string,
  server: ReportHeader['server'],
  parameters: Record<string, unknown>,
  method: string,
): ReportHeader {
  return { bench, startedAt: new Date().toISOString(), machine: machineInfo(), server, parameters, method }
}

/** The header as the lines a person reads first. */
export function renderHeader(h: ReportHeader): string {
  const m = h.machine
  const settings = Object.entries(h.server.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')
  const lines = [
    `${h.bench} — ${h.startedAt}`,
    `machine:    ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}`,
    `database:   ${h.server.provider}: PostgreSQL ${h.server.serverVersion}, pgvector ${h.server.pgvectorVersion}` +
      (h.server.citus
        ? `, Citus ${h.server.citus.version} (${h.server.citus.workers} workers; the bench's tables distributed by tenant)`
        : ''),
    `settings:   ${settings}`,
    `parameters: ${Object.entries(h.parameters)
      .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join(', ')}`,
    `method:     ${h.method}`,
  ]
  if (h.server.provider === 'embedded')
    lines.push(
      'note:       PGlite (WASM, one connection) is about 3-4× slower than native PostgreSQL: use these numbers for shape, not sizing',
    )
  return lines.join('\n')
}
