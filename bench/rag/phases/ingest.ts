import { sql } from 'kysely'
import { progress } from '../../report/progress.js'
import { BENCH_TABLE, type RagRun } from '../rag-run.js'

/**
 * Phase `ingest`: loads the corpus with no ANN index (binary COPY) and records the rate; without the
 * phase, checks that an earlier `--keep` run left data.
 *
 * ### Examples
 * ```ts
 * await ingestPhase(run)
 * run.report.ingest?.chunksPerSecond
 * ```
 */
export async function ingestPhase(run: RagRun): Promise<void> {
  const { config: c, store, db } = run
  if (c.phases.has('ingest')) {
    const bar = progress('ingest (no index)', c.chunks, { enabled: c.showProgress })
    const result = await store.bulkIngest(run.source.rows(), {
      onProgress: ({ rows }) => bar.update(rows),
      progressEvery: 5000,
      indexStrategy: 'keep',
    })
    bar.done(`${result.rows.toLocaleString('en-US')} chunks in ${result.seconds.toFixed(1)} s`)
    run.report.ingest = { chunks: result.rows, seconds: result.seconds, chunksPerSecond: result.rowsPerSecond }
  } else {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.raw(BENCH_TABLE)}`.execute(db)
    if (rows[0]!.n === 0) throw new Error('no data: include the ingest phase, or keep the data of an earlier run with --keep')
  }
  await sql.raw(`analyze ${BENCH_TABLE}`).execute(db)
}
