import { fmt } from '../report/stats.js'
import { renderTable } from '../report/table.js'
import type { StoreBenchReport } from './run-store-bench.js'

/**
 * The human report of store-bench: machine and server, the ingest table, search beside raw SQL,
 * and the storage comparison.
 *
 * ### Examples
 * ```ts
 * console.log(renderStoreReport(await runStoreBench(provisioned, options, log)))
 * ```
 */
export function renderStoreReport(r: StoreBenchReport): string {
  const { machine: m, server: info } = r
  const method = r.method
  const storeRate = r.ingest['store.bulkIngest (binary COPY)']!.rowsPerSecond
  const s = r.search
  const x = r.exactScanMs
  const bytes = x.bytes
  return [
    `store-bench — ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node}`,
    `${info.provider}: PostgreSQL ${info.serverVersion}, pgvector ${info.pgvectorVersion}; ${Object.entries(info.settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}`,
    `${method.chunks} chunks × ${method.dim} dims, ${method.tenants} tenants, shared topics, seed ${method.seed}; ${method.rounds} rounds, medians\n`,
    renderTable(
      ['ingest path', 'rows/s', 'store ÷ this'],
      Object.entries(r.ingest).map(([k, v]) => [k, fmt(v.rowsPerSecond), `${fmt(storeRate / v.rowsPerSecond)}×`]),
    ),
    `\ntenant indexes: ${r.tenantIndexes.built} built in ${fmt(r.tenantIndexes.seconds)} s`,
    renderTable(
      ['search (k=10, ef_search 100)', 'p50 ms', 'p95 ms', 'p99 ms'],
      [
        ['pgscale store.search', fmt(s.pgscaleMs.p50), fmt(s.pgscaleMs.p95), fmt(s.pgscaleMs.p99)],
        ['same SQL raw through pg', fmt(s.rawPgMs.p50), fmt(s.rawPgMs.p95), fmt(s.rawPgMs.p99)],
        ...(s.sampleOff
          ? [
              [
                'store.search, querySample: false',
                fmt(s.sampleOff.pgscaleMs.p50),
                fmt(s.sampleOff.pgscaleMs.p95),
                fmt(s.sampleOff.pgscaleMs.p99),
              ],
              ['same SQL raw (its blocks)', fmt(s.sampleOff.rawPgMs.p50), fmt(s.sampleOff.rawPgMs.p95), fmt(s.sampleOff.rawPgMs.p99)],
            ]
          : []),
      ],
    ),
    `recall@10 vs exactSearch: ${fmt(s.recallAt10, 4)} over ${method.queries} queries; pgscale overhead: ${fmt(s.overhead * 100, 2)}% (median of ${method.blocks} block ratios)${
      s.sampleOff ? `; with querySample: false ${fmt(s.sampleOff.overhead * 100, 2)}%` : ''
    }${
      s.sameBlocks
        ? `\nthe three in the same blocks: sampled ${fmt(s.sameBlocks.sampleOn, 3)}× raw, unsampled ${fmt(s.sameBlocks.sampleOff, 3)}× raw, unsampled ÷ sampled ${fmt(s.sameBlocks.offVsOn, 3)}×`
        : ''
    }`,
    renderTable(
      [`exact scan, ${x.rows.toLocaleString('en-US')} chunks × ${x.dim} dims`, 'p50 ms', 'p95 ms', 'heap MB', 'TOAST MB'],
      [
        ['embedding STORAGE PLAIN', fmt(x.plain.p50), fmt(x.plain.p95), fmt(bytes.plain.heap / 2 ** 20), fmt(bytes.plain.toast / 2 ** 20)],
        [
          'embedding STORAGE EXTENDED (TOAST)',
          fmt(x.extended.p50),
          fmt(x.extended.p95),
          fmt(bytes.extended.heap / 2 ** 20),
          fmt(bytes.extended.toast / 2 ** 20),
        ],
      ],
    ),
    `PLAIN is ${fmt(x.extended.p50 / x.plain.p50)}× faster for exact scans`,
    `peak RSS of this process: ${r.process.peakRssMB} MB`,
  ].join('\n')
}
