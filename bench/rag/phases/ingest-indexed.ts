import { sql } from 'kysely'
import { progress } from '../../report/progress.js'
import { BENCH_TABLE, hnswIndexNames, type RagRun } from '../rag-run.js'

/**
 * Phase `ingest-indexed`: loads a further slice (5% of the corpus, 1,000 to 50,000 chunks, spread
 * like the tenants) through the HNSW index(es) and compares the rate with the unindexed load.
 *
 * ### Examples
 * ```ts
 * await ingestIndexedPhase(run)
 * run.report.ingestIndexed?.ratioToUnindexed
 * ```
 */
export async function ingestIndexedPhase(run: RagRun): Promise<void> {
  const { config: c, source } = run
  if (!source.slice) {
    run.log('skipped the ingest-indexed phase: a corpus directory has no further rows to load')
    return
  }
  const sliceTotal = Math.min(50_000, Math.max(1000, Math.round(c.chunks * 0.05)))
  const sliceTenants = c.tenants
    .map((t) => ({ id: t.id, chunks: Math.round((t.chunks / c.chunks) * sliceTotal) }))
    .filter((t) => t.chunks > 0)
  const bar = progress(
    'ingest (with index)',
    sliceTenants.reduce((s, t) => s + t.chunks, 0),
    { enabled: c.showProgress },
  )
  const indexes = await hnswIndexNames(run)
  const result = await run.store.bulkIngest(source.slice(sliceTenants), {
    indexStrategy: 'keep',
    onProgress: ({ rows }) => bar.update(rows),
    progressEvery: 1000,
  })
  bar.done(`${result.rows.toLocaleString('en-US')} chunks in ${result.seconds.toFixed(1)} s through ${indexes.length} HNSW index(es)`)
  run.report.ingestIndexed = {
    chunks: result.rows,
    seconds: result.seconds,
    chunksPerSecond: result.rowsPerSecond,
    ratioToUnindexed: run.report.ingest ? run.report.ingest.chunksPerSecond / result.rowsPerSecond : null,
    indexes,
  }
  await sql.raw(`analyze ${BENCH_TABLE}`).execute(run.db)
}
