import { valueRange } from '../report/value-range.js'
import type { RollupBenchReport, TenantResult } from './rollup-run.js'

/** Plain sentences from the numbers. */
export function rollupFindings(
  r: Pick<RollupBenchReport, 'tenants' | 'sizes'> & Partial<Pick<RollupBenchReport, 'covering' | 'seeding'>>,
): string[] {
  const { big, typical } = r.tenants
  const range = (t: TenantResult) => {
    const s = t.dashboard.map((d) => d.speedup)
    return `${valueRange(Math.min(...s), Math.max(...s), (n) => n.toFixed(1))}×`
  }
  const saved = (t: TenantResult) => t.dashboard.reduce((sum, d) => sum + d.sourceMs.p50 - d.rollupMs.p50, 0)
  const mb = (b: number) => `${(b / 1024 ** 2).toFixed(1)} MB`
  return [
    `For the big tenant (${big.rows.toLocaleString('en-US')} rows) the rollup answers the six dashboard aggregates ${range(big)} faster at p50, saving ${saved(big).toFixed(1)} ms per dashboard; ` +
      `for a typical tenant (${typical.rows.toLocaleString('en-US')} rows) ${range(typical)}, saving ${saved(typical).toFixed(2)} ms: with a few thousand rows per tenant the index is enough, the rollup is for the tenant that grew.`,
    `A write pays a bucket refresh of ${big.refresh.refreshMs.p50.toFixed(2)} ms p50 (p95 ${big.refresh.refreshMs.p95.toFixed(2)}) for the big tenant's ${big.bucketRows.toLocaleString('en-US')}-row month, ` +
      `${big.refresh.ratio.toFixed(2)}× the bare aggregate of that bucket; ${typical.refresh.refreshMs.p50.toFixed(2)} ms for a typical tenant (${typical.refresh.ratio.toFixed(2)}×, where the round trips dominate). ` +
      `Against the floor of a write (the bare aggregate plus a one-row INSERT, autocommit): ${big.refresh.floorRatio.toFixed(2)}× (big), ${typical.refresh.floorRatio.toFixed(2)}× (typical).`,
    ...(r.covering
      ? [
          `With the covering index rollup.sourceIndex() recommends (after VACUUM), the big tenant's refresh took ${r.covering.big.refresh.refreshMs.p50.toFixed(2)} ms p50 ` +
            `(${r.covering.big.refresh.floorRatio.toFixed(2)}× its floor) and its rebuild ${r.covering.big.rebuild.medianSeconds.toFixed(2)} s; a typical tenant's refresh ${r.covering.typical.refresh.refreshMs.p50.toFixed(2)} ms.`,
        ]
      : []),
    ...(r.seeding?.raw
      ? [
          `Seeding (COPY + index + VACUUM ANALYZE) took ${(r.seeding.seconds + r.seeding.indexSeconds).toFixed(1)} s, ${r.seeding.raw.ratio.toFixed(2)}× psql \\copy of the same file with the same index (${(r.seeding.raw.seconds + r.seeding.raw.indexSeconds).toFixed(1)} s).`,
        ]
      : []),
    `Rebuilding all ${big.rebuild.months} months takes ${big.rebuild.medianSeconds.toFixed(2)} s for the big tenant, ${big.rebuild.ratio.toFixed(2)}× one aggregate scan of its rows; ${typical.rebuild.medianSeconds.toFixed(3)} s for a typical tenant.`,
    `The rollup table holds ${r.sizes.rollupRows.toLocaleString('en-US')} rows in ${mb(r.sizes.rollupBytes)}, next to ${mb(r.sizes.sourceTableBytes)} of source table and ${mb(r.sizes.sourceIndexesBytes)} of its indexes.`,
  ]
}
