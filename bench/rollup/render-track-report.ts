import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import type { TrackReport } from './track/track-report.js'
import type { ErrorSummary } from './track/read-costs.js'

/**
 * The human report of `rollup-bench --track`: write overhead per kind and writers, drain rate,
 * staleness, fresh reads, approximate distinct counts.
 *
 * ### Examples
 * ```ts
 * if (report.track) console.log(renderTrackReport(report.track).join('\n'))
 * ```
 */
export function renderTrackReport(t: TrackReport): string[] {
  const ivm = t.pgIvm !== null
  const out: string[] = [
    `tracking (--track): ${t.options.rounds} rounds, bulk writes of ${t.options.rows.toLocaleString('en-US')} rows${ivm ? `, beside pg_ivm ${t.pgIvm}` : ', pg_ivm not on this server'}`,
    renderTable(
      [
        'write',
        'writers',
        'rows',
        'plain ms p50',
        'tracked ms p50',
        'tracked ÷ plain',
        ...(ivm ? ['pg_ivm ms p50', 'pg_ivm ÷ plain'] : []),
      ],
      t.writes.map((w) => [
        w.kind,
        String(w.writers),
        w.rows.toLocaleString('en-US'),
        fmt(w.ms.plain?.p50 ?? NaN),
        fmt(w.ms.tracked?.p50 ?? NaN),
        `${fmt(w.ratio.tracked ?? NaN)}×`,
        ...(ivm ? [fmt(w.ms.pgIvm?.p50 ?? NaN), `${fmt(w.ratio.pgIvm ?? NaN)}×`] : []),
      ]),
    ),
    '',
    renderTable(
      ['drain', 'buckets', 'source rows', 'seconds', 'buckets/s'],
      t.drain.map((d) => [d.label, String(d.buckets), d.rows.toLocaleString('en-US'), fmt(d.seconds), fmt(d.bucketsPerSecond)]),
    ),
    '',
    `staleness: ${t.staleness.writes} writes in ${t.staleness.seconds} s (${fmt(t.staleness.writesPerSecond)}/s), one drainer (${t.staleness.drainPasses} passes, ${t.staleness.bucketsRefreshed} buckets): ` +
      `committed write → clean bucket p50 ${fmt(t.staleness.staleSeconds.p50)} s, p95 ${fmt(t.staleness.staleSeconds.p95)} s, max ${fmt(t.staleness.staleSeconds.max)} s${t.staleness.unresolved ? `; ${t.staleness.unresolved} still dirty at the end` : ''}`,
    '',
    renderTable(
      ['fresh read', 'dirty months', 'plain ms p50', 'fresh ms p50', 'fresh ÷ plain'],
      t.freshReads.map((f) => [
        `tenant ${f.tenantId}, ${f.months} months`,
        String(f.dirtyMonths),
        fmt(f.plainMs.p50),
        fmt(f.freshMs.p50),
        `${fmt(f.ratio)}×`,
      ]),
    ),
  ]
  if (t.distinct) {
    const d = t.distinct
    const row = (label: string, e: ErrorSummary) => [
      label,
      String(e.n),
      String(e.large),
      `${fmt(e.median * 100)}%`,
      `${fmt(e.p95 * 100)}%`,
      `${fmt(e.max * 100)}%`,
    ]
    out.push(
      '',
      `${d.expression} against count(distinct amount):`,
      renderTable(
        ['combined', 'rows', '≥ 1,000 distinct', 'median error', 'p95 error', 'max error'],
        [
          row('big tenant, per bucket', d.perBucket),
          row('big tenant, per month (categories combined)', d.perMonth),
          row('every tenant, whole range', d.perTenantRange),
        ],
      ),
      `big tenant, whole range in one row: ${d.wholeRange.approx.toLocaleString('en-US')} for ${d.wholeRange.exact.toLocaleString('en-US')} exact (${fmt(d.wholeRange.error * 100)}%)`,
    )
  }
  out.push('', `method: ${t.method}`)
  return out
}
