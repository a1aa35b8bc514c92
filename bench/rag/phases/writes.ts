import { explain, indexesUsed } from '../../../src/index.js'
import { renderStatements } from '../../../src/bench-kit.js'
import { summarize } from '../../report/stats.js'
import { hnswIndexNames, type RagRun } from '../rag-run.js'

/**
 * Phase `writes`: `replaceDocument`, then `deleteDocument`, each from `--writers` concurrent writers
 * (a delete measured while replaces saturate the server would report their HNSW inserts, not its own
 * cost), and the delete's plan.
 *
 * ### Examples
 * ```ts
 * await writesPhase(run)
 * run.report.writes?.replaceDocumentMs.p50
 * ```
 */
export async function writesPhase(run: RagRun): Promise<void> {
  const { config: c, store } = run
  const replaceMs: number[] = []
  const deleteMs: number[] = []
  const operations = Math.min(400, Math.max(40, c.writers * 10))
  const docs = c.tenants.flatMap((t) =>
    Array.from({ length: Math.max(1, Math.floor(t.chunks / c.chunksPerDoc)) }, (_, d) => ({ tenant: t.id, doc: `${t.id}/doc-${d}` })),
  )
  const picks = Array.from({ length: operations }, (_, i) => docs[(i * 7919) % docs.length]!)
  const replacement = async (tenant: string, i: number) =>
    (await run.source.queryVectors(tenant, c.chunksPerDoc)).map((embedding, j) => ({
      content: `rewritten ${i}.${j} invoice`,
      embedding: Array.from(embedding),
      metadata: { rewritten: true },
    }))
  const half = Math.floor(operations / 2)
  const replacesPerSecond = await runWriters(c.writers, half, async (i) => {
    const { tenant, doc } = picks[i]!
    const chunks = await replacement(tenant, i)
    const t0 = performance.now()
    await store.forTenant(tenant).replaceDocument(doc, chunks)
    replaceMs.push(performance.now() - t0)
  })
  const deletesPerSecond = await runWriters(c.writers, operations - half, async (i) => {
    const { tenant, doc } = picks[half + i]!
    const t0 = performance.now()
    await store.forTenant(tenant).deleteDocument(doc)
    deleteMs.push(performance.now() - t0)
  })
  const first = c.tenants[0]!.id
  const plan = await explain(run.db, renderStatements(store.config).deleteDocument, [first, `${first}/doc-0`])
  run.report.writes = {
    writers: c.writers,
    replaceDocumentMs: summarize(replaceMs),
    deleteDocumentMs: summarize(deleteMs),
    replacesPerSecond,
    deletesPerSecond,
    deletePlan: indexesUsed(plan),
    hnswIndexes: await hnswIndexNames(run),
    operations,
  }
}

/** Runs operations 0…count-1 from `writers` concurrent loops; resolves to operations per second. */
async function runWriters(writers: number, count: number, operation: (i: number) => Promise<void>): Promise<number> {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < count) await operation(next++)
    }),
  )
  return count / ((performance.now() - started) / 1000)
}
