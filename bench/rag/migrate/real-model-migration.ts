import { sql } from 'kysely'
import { PgVectorStore, type Database, type SearchResult } from '../../../src/index.js'
import type { TextEncoder } from '../../encoders/use-lite.js'
import { summarize, type Percentiles } from '../../report/stats.js'
import { firstSentence, textChunks, type TextChunk } from './doc-texts.js'
import { hashEmbedding } from './model-migration.js'
import { dropBenchTables, sleep } from './bench-tables.js'

/** What the real-model run of `rag-bench migrate` is asked to do. */
export interface RealModelMigrationOptions {
  tenants: number
  /** Chunks per tenant (fewer if the texts run out). */
  perTenant: number
  /** Dimensions of the current, fast model (a hash of the text). */
  dim: number
  /** Chunks per `embed` call. */
  batch: number
  searchers: number
  /** Seconds of searches before and after the migration. */
  phaseSeconds: number
  /** Files or directories of text (READMEs, `.txt`, `.md`, their `.gz`), in order. */
  sources: string[]
}

/** The report of the real-model run. */
export interface RealModelMigrationReport {
  chunks: number
  tenants: number
  model: string
  phases: Record<'before' | 'during' | 'after', { searches: number; search: Percentiles }>
  /** Backfill wall seconds (every tenant, switches apart), of it the model's, and what it computed (a warm cache computes nothing). */
  backfill: { chunks: number; seconds: number; chunksPerSecond: number; modelSeconds: number; modelCpuSeconds: number; computed: number }
  switches: { count: number; ms: Percentiles; embeddedUnderLock: number }
  checks: { failedSearches: number; emptySearches: number; wrongTenant: number; wrongSpace: number; checkedHits: number }
  /** Each query is a chunk's first sentence: how often that chunk is in the new space's top 10 (the model at work). */
  sourceInTop10: { queries: number; found: number }
  method: string
}

const TABLE = 'rag_migrate_real'
type Phase = 'before' | 'during' | 'after'

/**
 * Every tenant of a small corpus of real text moved from a fast `dim`-wide hash "model" to a real
 * one (the USE-lite encoder, 512 dims): `searchers` clients search through the whole run (a query of
 * the tenant's space: the hash of its text, or the encoder's vector), every answer checked (the
 * tenant's documents, the space's dimensions, and in 1 of 5 searches the hits' vectors against the
 * encoder's vector of their text); each tenant backfilled (embed-bound) and switched with its embed.
 */
export async function measureRealModelMigration(
  db: Database,
  o: RealModelMigrationOptions,
  encoder: TextEncoder,
  log: (line: string) => void,
): Promise<RealModelMigrationReport> {
  const chunks = textChunks(o.sources, { tenants: o.tenants, perTenant: o.perTenant })
  const ids = [...new Set(chunks.map((c) => c.tenantId))]
  await dropBenchTables(db, TABLE)
  const store = await PgVectorStore.open(db, { table: TABLE, dimensions: o.dim, querySample: false, fullText: false })
  await store.bulkIngest(chunks.map((c) => ({ ...c, embedding: hashEmbedding(c.content, o.dim) })))
  await store.addSpace({ name: 'use', dimensions: encoder.dimensions, model: encoder.name })
  await sql.raw(`analyze ${TABLE}`).execute(db)
  log(
    `${chunks.length} chunks of real text in ${ids.length} tenants (${o.dim}-d hash), a space of ${encoder.dimensions} dims (${encoder.name})`,
  )
  const queries = queriesOf(chunks, ids)
  // The queries' vectors first (cached on disk), so the searches time the store, not the encoder.
  await encoder.embed([...queries.values()].flat().map((q) => q.text))
  const embedSpace = async (texts: string[]) => encoder.embed(texts)
  const search = searchers(store, ids, queries, encoder, o)
  await sleep(o.phaseSeconds * 1000)
  search.phase = 'during'
  const before = { ...encoder.stats }
  const switchMs: number[] = []
  let backfillMs = 0
  let embedded = 0
  let underLock = 0
  for (const tenantId of ids) {
    const t0 = performance.now()
    embedded += (await store.migrateTenant(tenantId, { to: 'use', embed: embedSpace, batchSize: o.batch })).embedded
    backfillMs += performance.now() - t0
    const s0 = performance.now()
    await store.switchTenant(tenantId, 'use', {
      embed: (texts) => {
        underLock += texts.length
        return embedSpace(texts)
      },
    })
    switchMs.push(performance.now() - s0)
    log(`${tenantId} switched (${embedded} chunks embedded so far, ${encoder.stats.computed - before.computed} by the model)`)
  }
  search.phase = 'after'
  await sleep(o.phaseSeconds * 1000)
  const { times, checks } = await search.stop()
  const sourceInTop10 = await sourceHits(store, queries, encoder)
  await store.close()
  await dropBenchTables(db, TABLE)
  return {
    chunks: chunks.length,
    tenants: ids.length,
    model: encoder.name,
    phases: {
      before: { searches: times.before.length, search: summarize(times.before) },
      during: { searches: times.during.length, search: summarize(times.during) },
      after: { searches: times.after.length, search: summarize(times.after) },
    },
    backfill: {
      chunks: embedded,
      seconds: backfillMs / 1000,
      chunksPerSecond: embedded / (backfillMs / 1000),
      modelSeconds: encoder.stats.modelSeconds - before.modelSeconds,
      modelCpuSeconds: encoder.stats.modelCpuSeconds - before.modelCpuSeconds,
      computed: encoder.stats.computed - before.computed,
    },
    switches: { count: switchMs.length, ms: summarize(switchMs), embeddedUnderLock: underLock },
    checks,
    sourceInTop10,
    method:
      `${chunks.length} chunks of real text (${o.sources.join(', ')}; paragraphs joined up to 500 characters) in ${ids.length} tenants, ` +
      `stored with a ${o.dim}-d hash of the text, moved to ${encoder.name} (${encoder.dimensions} dims, unit length, cached on disk by text hash); ` +
      `${o.searchers} search clients (activeTenant then search k 10 with a query of the space's model: a chunk's first sentence; 1 in 5 with the hits' vectors checked) ` +
      `for ${o.phaseSeconds} s before, through the migration, ${o.phaseSeconds} s after; each tenant migrateTenant (batches of ${o.batch}) then switchTenant with the embed, timed apart`,
  }
}

type Queries = Map<string, Array<{ text: string; source: string }>>

function queriesOf(chunks: readonly TextChunk[], ids: readonly string[]): Queries {
  const out: Queries = new Map()
  for (const id of ids) {
    const own = chunks.filter((c) => c.tenantId === id)
    const step = Math.max(1, Math.floor(own.length / 10))
    out.set(
      id,
      own
        .filter((_, i) => i % step === 0)
        .slice(0, 10)
        .map((c) => ({ text: firstSentence(c.content), source: `${c.documentId}#${c.chunkIndex}` })),
    )
  }
  return out
}

function searchers(store: PgVectorStore, ids: readonly string[], queries: Queries, encoder: TextEncoder, o: RealModelMigrationOptions) {
  const control = { phase: 'before' as Phase, running: true }
  const times: Record<Phase, number[]> = { before: [], during: [], after: [] }
  const checks = { failedSearches: 0, emptySearches: 0, wrongTenant: 0, wrongSpace: 0, checkedHits: 0 }
  let n = 0
  const client = async (seed: number) => {
    for (let i = seed; control.running; i++) {
      const tenantId = ids[i % ids.length]!
      const list = queries.get(tenantId)!
      const q = list[(i * 7) % list.length]!
      try {
        const { space, tenant } = await store.activeTenant(tenantId)
        const vector = space === 'use' ? (await encoder.embed([q.text]))[0]! : hashEmbedding(q.text, o.dim)
        const withVectors = n++ % 5 === 0
        const t0 = performance.now()
        const hits = await tenant.search(vector, { k: 10, includeEmbedding: withVectors })
        times[control.phase].push(performance.now() - t0)
        await check(checks, hits, tenantId, space, encoder, o)
      } catch {
        checks.failedSearches++
      }
    }
  }
  const clients = Array.from({ length: o.searchers }, (_, s) => client(s * 13))
  return Object.assign(control, {
    stop: async () => {
      control.running = false
      await Promise.all(clients)
      return { times, checks }
    },
  })
}

async function check(
  checks: RealModelMigrationReport['checks'],
  hits: SearchResult[],
  tenantId: string,
  space: string,
  encoder: TextEncoder,
  o: RealModelMigrationOptions,
): Promise<void> {
  if (hits.length === 0) checks.emptySearches++
  for (const h of hits) {
    if (!h.documentId.startsWith(`${tenantId}/`)) checks.wrongTenant++
    if (!h.embedding) continue
    checks.checkedHits++
    const want = space === 'use' ? (await encoder.embed([h.content]))[0]! : hashEmbedding(h.content, o.dim)
    if (h.embedding.length !== want.length || want.some((x, i) => Math.abs(Math.fround(x) - h.embedding![i]!) > 1e-6)) checks.wrongSpace++
  }
}

async function sourceHits(
  store: PgVectorStore,
  queries: Queries,
  encoder: TextEncoder,
): Promise<RealModelMigrationReport['sourceInTop10']> {
  let count = 0
  let found = 0
  for (const [tenantId, list] of queries) {
    const { tenant } = await store.activeTenant(tenantId)
    for (const q of list) {
      const hits = await tenant.search((await encoder.embed([q.text]))[0]!, { k: 10 })
      count++
      if (hits.some((h) => `${h.documentId}#${h.chunkIndex}` === q.source)) found++
    }
  }
  return { queries: count, found }
}
