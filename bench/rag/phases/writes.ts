import { sql } from 'kysely'
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
  const half = Math.floor(operations / 2)
  // The replacement chunks are made before the clock starts: generating them while other writers
  // wait for the server would put the bench's own CPU into their latency.
  const replacements = await Promise.all(
    picks.slice(0, half).map(async ({ tenant }, i) =>
      (await run.source.queryVectors(tenant, c.chunksPerDoc)).map((embedding, j) => ({
        content: `rewritten ${i}.${j} invoice`,
        embedding: Array.from(embedding),
        metadata: { rewritten: true },
      })),
    ),
  )
  const sampler = sampleWaits(run)
  const replacesPerSecond = await runWriters(c.writers, half, async (i) => {
    const { tenant, doc } = picks[i]!
    const t0 = performance.now()
    await store.forTenant(tenant).replaceDocument(doc, replacements[i]!)
    replaceMs.push(performance.now() - t0)
  })
  const deletesPerSecond = await runWriters(c.writers, operations - half, async (i) => {
    const { tenant, doc } = picks[half + i]!
    const t0 = performance.now()
    await store.forTenant(tenant).deleteDocument(doc)
    deleteMs.push(performance.now() - t0)
  })
  const waits = await sampler.stop()
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
    waits,
  }
}

/**
 * Samples what the other client backends wait on (pg_stat_activity, every 20 ms) while the writes
 * run: the counts of `wait_event_type:wait_event` (`CPU` when active and not waiting).
 */
function sampleWaits(run: RagRun): { stop(): Promise<{ samples: number; events: Record<string, number> }> } {
  const events: Record<string, number> = {}
  let samples = 0
  let running = true
  const loop = (async () => {
    while (running) {
      const { rows } = await sql<{ event: string }>`
        select coalesce(wait_event_type || ':' || wait_event, 'CPU') as event from pg_stat_activity
        where backend_type = 'client backend' and state = 'active' and pid <> pg_backend_pid()`.execute(run.db)
      samples++
      for (const r of rows) events[r.event] = (events[r.event] ?? 0) + 1
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      const top = Object.entries(events)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
      return { samples, events: Object.fromEntries(top) }
    },
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
