import { renderCitusPlacement } from '../report/citus-placement.js'
import { renderHeader } from '../report/header.js'
import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import type { RollupBenchReport, TenantResult } from './run-rollup-bench.js'
import { renderTrackReport } from './render-track-report.js'
import { renderAcrossReport } from './render-across-report.js'

/** The human report of rollup-bench. */
export function renderRollupReport(r: RollupBenchReport): string {
  const out: string[] = [renderHeader(r), '']
  out.push(
    `seeding: ${r.seeding.rows.toLocaleString('en-US')} rows in ${fmt(r.seeding.seconds)} s (${fmt(r.seeding.rowsPerSecond)} rows/s) — ${r.seeding.how}; index + VACUUM ANALYZE ${fmt(r.seeding.indexSeconds)} s; rollup for every tenant ${fmt(r.seeding.rollupSeconds)} s`,
    r.seeding.raw
      ? `raw reference, same file, just before: psql \\copy ${fmt(r.seeding.raw.seconds)} s + index + VACUUM ANALYZE ${fmt(r.seeding.raw.indexSeconds)} s; pgscale ÷ raw ${fmt(r.seeding.raw.ratio)}×`
      : 'raw reference: not measured (needs a server URL and psql)',
    '',
  )
  renderTenant(out, 'big tenant', r.tenants.big)
  renderTenant(out, 'typical tenant', r.tenants.typical)
  renderCovering(out, r)
  const mb = (b: number) => fmt(b / 1024 ** 2)
  out.push(
    renderTable(
      ['size', 'MB'],
      [
        ['rollup table (with its index)', mb(r.sizes.rollupBytes)],
        ['source table', mb(r.sizes.sourceTableBytes)],
        ['source indexes', mb(r.sizes.sourceIndexesBytes)],
      ],
    ),
    '',
  )
  out.push('anchors (measured elsewhere, for comparison):', ...Object.values(r.anchors).map((a) => `  - ${a}`), '')
  out.push('findings:', ...r.findings.map((f) => `  - ${f}`))
  if (r.track) out.push('', ...renderTrackReport(r.track))
  if (r.across) out.push('', ...renderAcrossReport(r.across))
  if (r.citus) out.push('', ...renderCitusPlacement(r.citus))
  return out.join('\n')
}

/** One tenant's dashboard, refresh and rebuild. */
function renderTenant(out: string[], label: string, t: TenantResult): void {
  out.push(
    `${label}: tenant ${t.tenantId}, ${t.rows.toLocaleString('en-US')} rows (${t.bucketRows.toLocaleString('en-US')} in this month's bucket)`,
  )
  out.push(
    renderTable(
      ['dashboard aggregate', 'source p50', 'source p95', 'rollup p50', 'rollup p95', 'speed-up'],
      t.dashboard.map((d) => [
        d.name,
        fmt(d.sourceMs.p50),
        fmt(d.sourceMs.p95),
        fmt(d.rollupMs.p50),
        fmt(d.rollupMs.p95),
        `${fmt(d.speedup)}×`,
      ]),
    ),
  )
  out.push('')
  out.push(
    renderTable(
      ['what a write pays (ms)', 'p50', 'p95', 'ratio'],
      [
        [
          'refreshAt (lock + replace, own transaction)',
          fmt(t.refresh.refreshMs.p50),
          fmt(t.refresh.refreshMs.p95),
          `${fmt(t.refresh.ratio)}×`,
        ],
        ['bare aggregate SELECT of the same bucket', fmt(t.refresh.bareAggregateMs.p50), fmt(t.refresh.bareAggregateMs.p95), '1×'],
        [
          'floor: bare aggregate + one-row INSERT (autocommit)',
          fmt(t.refresh.bareAggregateMs.p50 + t.refresh.oneRowInsertMs.p50),
          '',
          `refresh ÷ floor ${fmt(t.refresh.floorRatio)}×`,
        ],
      ],
    ),
  )
  out.push(
    `rebuild of all ${t.rebuild.months} months: ${fmt(t.rebuild.medianSeconds)} s (median of ${t.rebuild.seconds.length}), ${fmt(t.rebuild.ratio)}× one aggregate scan of the tenant's rows`,
    '',
  )
}

/** Refresh and rebuild again with the covering index. */
function renderCovering(out: string[], r: RollupBenchReport): void {
  const c = r.covering
  out.push(
    `with the covering index ${c.index} (rollup.sourceIndex(), after VACUUM) in place of the plain (tenant, at) index:`,
    renderTable(
      ['tenant', 'refresh p50', 'refresh p95', 'bare aggregate p50', '÷ floor', 'rebuild s'],
      [coveringRow('big', c.big), coveringRow('typical', c.typical)],
    ),
    '',
  )
}

function coveringRow(label: string, t: RollupBenchReport['covering']['big']): string[] {
  return [
    label,
    fmt(t.refresh.refreshMs.p50),
    fmt(t.refresh.refreshMs.p95),
    fmt(t.refresh.bareAggregateMs.p50),
    `${fmt(t.refresh.floorRatio)}×`,
    fmt(t.rebuild.medianSeconds),
  ]
}
