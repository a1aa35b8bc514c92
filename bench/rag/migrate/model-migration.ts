import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { EmbeddingSpaceError, PgVectorStore, type Database, type SearchResult, type TenantStore } from '../../../src/index.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { heartbeat, progress } from '../../report/progress.js'
import { summarize, type Percentiles } from '../../report/stats.js'
import { dropBenchTables, sleep } from './bench-tables.js'

/** What `rag-bench migrate` is asked to measure. */
export interface ModelMigrationOptions {
  chunks: number
  tenants: number
  dim: number
  /** The new space's dimensions. */
  toDim: number
  /** Concurrent search clients through every phase. */
  searchers: number
  /** Chunks per `embed` call. */
  batch: number
  /** Seconds of searches before and after the migration. */
  phaseSeconds: number
  /** The backfill's rate limit (`migrateTenant`'s `maxChunksPerSecond`), when given. */
  maxChunksPerSecond?: number
}

/** Latency of one phase's searches, and what was checked. */
export interface PhaseFigures {
  searches: number
  search: Percentiles
  /** `store.activeTenant(t)`: the one read of the tenant's state before a search. */
  activeTenant: Percentiles
}

/** The report of `rag-bench migrate`. */
export interface ModelMigrationReport {
  phases: { before: PhaseFigures; during: PhaseFigures; after: PhaseFigures }
  /** p95 during ÷ p95 before. */
  p95DuringOverBefore: number
  backfill: { chunks: number; seconds: number; chunksPerSecond: number; embedSeconds: number; embedCalls: number }
  switches: { count: number; ms: Percentiles }
  writes: { completed: number; refusedThenRewritten: number; lost: number }
  checks: { failedSearches: number; emptySearches: number; wrongTenant: number; wrongSpace: number; checkedHits: number }
  resume: { tenant: string; chunks: number; embeddedBeforeCrash: number; embeddedAfterResume: number; embeddedTwice: number }
  rollback: { tenant: string; queries: number; identical: number }
  disk: { before: Record<string, number>; after: Record<string, number>; afterRelease: Record<string, number> }
  method: string
}

/** The bench's "new model": a deterministic embedding of the text (sha-256 seeded values), free to compute — the backfill's cost is pgscale's. */
export function hashEmbedding(text: string, dims: number): number[] {
  const out = new Array<number>(dims)
  let block = createHash('sha256').update(text).digest()
  for (let i = 0; i < dims; i++) {
    if (i > 0 && i % 32 === 0) block = createHash('sha256').update(block).digest()
    out[i] = (block[i % 32]! - 127.5) / 128
  }
  out[0]! += 0.01
  return out
}

const TABLE = 'rag_migrate'

type Phase = 'before' | 'during' | 'after'
type Queries = Map<string, { old: Float32Array[]; text: string[] }>
type Checks = ModelMigrationReport['checks']

/** What the phases share: the store, the tenants, their queries, and the embed of the new space. */
interface Bench {
  db: Database
  store: PgVectorStore
  o: ModelMigrationOptions
  ids: string[]
  perTenant: number
  queries: Queries
  embed: (texts: string[]) => Promise<number[][]>
  embedStats: { seconds: number; calls: number }
  log: (line: string) => void
}

/**
 * Every tenant of a seeded corpus moved from a `dim`-wide space to a `toDim`-wide one while
 * `searchers` clients search and one client writes: searches timed before, during and after; each
 * answer checked (the tenant's documents only, vectors of the space the tenant searched, never
 * empty); the writer's completed writes checked at the end (in the space its tenant searches); one
 * migration stopped after its first batch and resumed (no chunk embedded twice); one tenant rolled
 * back (its old answers exactly); table and index sizes before, after, and after the old rows are released.
 */
export async function measureModelMigration(
  db: Database,
  o: ModelMigrationOptions,
  log: (line: string) => void,
): Promise<ModelMigrationReport> {
  const bench = await prepare(db, o, log)
  const diskBefore = await sizes(db)
  const searches = startSearchers(bench)
  log(`before: ${o.searchers} search clients for ${o.phaseSeconds} s`)
  await sleep(o.phaseSeconds * 1000)
  searches.phase = 'during'
  const rollbackTenant = bench.ids[2]!
  const stepped = <T>(what: string, work: () => Promise<T>) => step(log, what, work)
  const rollbackAnswers = await stepped(`during: ${rollbackTenant}'s answers before the migration (for the rollback)`, () =>
    answers(bench.store.forTenant(rollbackTenant), bench.queries.get(rollbackTenant)!.old),
  )
  const writer = startWriter(bench, rollbackTenant)
  const resume = await stepped(`during: ${bench.ids[1]}'s backfill stopped after its first batch, then resumed and switched`, () =>
    stopAndResume(bench, bench.ids[1]!),
  )
  const migrated = await migrateAll(bench, [...bench.ids.filter((t) => t !== bench.ids[1] && t !== rollbackTenant), rollbackTenant])
  const writes = await writer.stop()
  searches.phase = 'after'
  log(`after: ${o.searchers} search clients for ${o.phaseSeconds} s`)
  await sleep(o.phaseSeconds * 1000)
  const { times, stateTimes, checks } = await searches.stop()
  const rollback = await stepped(`${rollbackTenant} rolled back; every completed write looked for`, () =>
    rollBack(bench, rollbackTenant, rollbackAnswers),
  )
  writes.lost = await lostWrites(bench, writer.written)
  const { diskAfter, diskReleased } = await stepped('disk sizes, the old rows released, VACUUM', async () => {
    await sql.raw(`analyze ${TABLE}, ${TABLE}__next`).execute(db)
    const diskAfter = await sizes(db)
    for (const t of bench.ids) if (t !== rollbackTenant) await bench.store.releaseTenantSpace(t, 'default')
    await sql.raw(`vacuum ${TABLE}`).execute(db)
    return { diskAfter, diskReleased: await sizes(db) }
  })
  await bench.store.close()
  await dropBenchTables(db, TABLE)
  const [before, during, after] = (['before', 'during', 'after'] as const).map((p) => figures(times[p], stateTimes[p])) as [
    PhaseFigures,
    PhaseFigures,
    PhaseFigures,
  ]
  return {
    phases: { before, during, after },
    p95DuringOverBefore: during.search.p95 / before.search.p95,
    backfill: {
      chunks: migrated.chunks + resume.embeddedBeforeCrash + resume.embeddedAfterResume,
      seconds: migrated.seconds,
      chunksPerSecond: migrated.chunks / migrated.seconds,
      embedSeconds: bench.embedStats.seconds,
      embedCalls: bench.embedStats.calls,
    },
    switches: { count: migrated.switchMs.length, ms: summarize(migrated.switchMs) },
    writes,
    checks,
    resume,
    rollback: { tenant: rollbackTenant, queries: rollbackAnswers.length, identical: rollback },
    disk: { before: diskBefore, after: diskAfter, afterRelease: diskReleased },
    method: methodOf(o, bench.perTenant),
  }
}

/** The seeded tenants loaded, tiers applied, the new space added. */
async function prepare(db: Database, o: ModelMigrationOptions, log: (line: string) => void): Promise<Bench> {
  const perTenant = Math.floor(o.chunks / o.tenants)
  const spec: CorpusSpec = {
    seed: 'migrate-bench',
    dim: o.dim,
    tenants: Array.from({ length: o.tenants }, (_, i) => ({ id: `t${i}`, chunks: perTenant })),
  }
  const ids = spec.tenants.map((t) => t.id)
  await dropBenchTables(db, TABLE)
  const store = await PgVectorStore.open(db, { table: TABLE, dimensions: o.dim, querySample: false, fullText: false })
  const bar = progress('load', perTenant * o.tenants, { enabled: process.stderr.isTTY, piped: !process.stderr.isTTY })
  await store.bulkIngest(generateCorpus(spec), { onProgress: ({ rows }) => bar.update(rows) })
  bar.done(`${(perTenant * o.tenants).toLocaleString('en-US')} chunks of ${o.tenants} tenants`)
  await store.optimize({ targetRecall: null })
  await store.addSpace({ name: 'next', dimensions: o.toDim, model: `hash-${o.toDim}` })
  await sql.raw(`analyze ${TABLE}`).execute(db)
  const queries: Queries = new Map(ids.map((t) => [t, { old: queryVectors(spec, t, 20), text: queryTexts(spec, t, 20) }]))
  const embedStats = { seconds: 0, calls: 0 }
  const embed = (texts: string[]) => {
    const t0 = performance.now()
    const out = texts.map((t) => hashEmbedding(t, o.toDim))
    embedStats.seconds += (performance.now() - t0) / 1000
    embedStats.calls++
    return Promise.resolve(out)
  }
  return { db, store, o, ids, perTenant, queries, embed, embedStats, log }
}

/** The search clients: a random tenant, its active space, a query of that space's model; each answer checked. */
function startSearchers(b: Bench) {
  const control = { phase: 'before' as Phase, running: true }
  const times: Record<Phase, number[]> = { before: [], during: [], after: [] }
  const stateTimes: Record<Phase, number[]> = { before: [], during: [], after: [] }
  const checks: Checks = { failedSearches: 0, emptySearches: 0, wrongTenant: 0, wrongSpace: 0, checkedHits: 0 }
  let n = 0
  const searcher = async (seed: number) => {
    for (let i = seed; control.running;) {
      i = (i * 1103515245 + 12345) % 2147483648
      const tenantId = b.ids[i % b.ids.length]!
      const q = b.queries.get(tenantId)!
      try {
        const t0 = performance.now()
        const { space, tenant } = await b.store.activeTenant(tenantId)
        const t1 = performance.now()
        const vector = space === 'next' ? hashEmbedding(q.text[i % 20]!, b.o.toDim) : q.old[i % 20]!
        const hits = await tenant.search(vector, { k: 10, includeEmbedding: n++ % 10 === 0 })
        times[control.phase].push(performance.now() - t1)
        stateTimes[control.phase].push(t1 - t0)
        checkHits(checks, hits, tenantId, space, b.o)
      } catch {
        checks.failedSearches++
      }
    }
  }
  const clients = Array.from({ length: b.o.searchers }, (_, s) => searcher(s + 1))
  return Object.assign(control, {
    stop: async () => {
      control.running = false
      await Promise.all(clients)
      return { times, stateTimes, checks }
    },
  })
}

function checkHits(checks: Checks, hits: SearchResult[], tenantId: string, space: string, o: ModelMigrationOptions): void {
  if (hits.length === 0) checks.emptySearches++
  for (const h of hits) {
    if (!h.documentId.startsWith(`${tenantId}/`)) checks.wrongTenant++
    if (!h.embedding) continue
    checks.checkedHits++
    if (h.embedding.length !== (space === 'next' ? o.toDim : o.dim)) checks.wrongSpace++
    else if (space === 'next' && Math.abs(h.embedding[3]! - Math.fround(hashEmbedding(h.content, o.toDim)[3]!)) > 1e-6) checks.wrongSpace++
  }
}

/** One writer: a document of a tenant replaced every 5 ms in the space the tenant searches; refused at a switch, written again there. */
function startWriter(b: Bench, skip: string) {
  const written = new Map<string, string>()
  const writes = { completed: 0, refusedThenRewritten: 0, lost: 0 }
  const tenants = b.ids.filter((t) => t !== skip)
  let writing = true
  const done = (async () => {
    for (let w = 0; writing; w++) {
      const tenantId = tenants[(w * 7) % tenants.length]!
      const doc = `${tenantId}/written-${w % 50}`
      const content = `written ${w} for ${tenantId}`
      for (let attempt = 0; attempt < 3; attempt++) {
        const { space, tenant } = await b.store.activeTenant(tenantId)
        const embedding = space === 'next' ? hashEmbedding(content, b.o.toDim) : Array.from(b.queries.get(tenantId)!.old[w % 20]!)
        try {
          await tenant.replaceDocument(doc, [{ content, embedding }])
          written.set(doc, content)
          writes.completed++
          break
        } catch (err) {
          if (!(err instanceof EmbeddingSpaceError)) throw err
          writes.refusedThenRewritten++
        }
      }
      await sleep(5)
    }
  })()
  return {
    written,
    stop: async () => {
      writing = false
      await done
      return writes
    },
  }
}

/** Says what a step of the run does, then (piped) that it is still running at least every 8 s. */
async function step<T>(log: (line: string) => void, what: string, work: () => Promise<T>): Promise<T> {
  log(what)
  const stop = heartbeat(`rag-bench migrate: ${what}`, { enabled: !process.stderr.isTTY })
  try {
    return await work()
  } finally {
    stop()
  }
}

/** A migration stopped after its first batch (as a deploy stops it), resumed by a new call: what each embedded. */
async function stopAndResume(b: Bench, tenantId: string): Promise<ModelMigrationReport['resume']> {
  const batchSize = Math.max(10, Math.floor(b.perTenant / 10))
  const stop = new AbortController()
  const first = new Set<string>()
  let firstCount = 0
  await b.store
    .migrateTenant(tenantId, {
      to: 'next',
      batchSize,
      signal: stop.signal,
      embed: (texts) => {
        texts.forEach((t) => first.add(t))
        firstCount += texts.length
        stop.abort()
        return b.embed(texts)
      },
    })
    .catch(() => {})
  let again = 0
  let twice = 0
  await b.store.migrateTenant(tenantId, {
    to: 'next',
    batchSize,
    embed: (texts) => {
      again += texts.length
      twice += texts.filter((t) => first.has(t)).length
      return b.embed(texts)
    },
  })
  await b.store.switchTenant(tenantId, 'next', { embed: b.embed })
  return { tenant: tenantId, chunks: b.perTenant, embeddedBeforeCrash: firstCount, embeddedAfterResume: again, embeddedTwice: twice }
}

/** Every tenant migrated, one after another, then switched (the switch timed alone). */
async function migrateAll(b: Bench, tenants: string[]): Promise<{ chunks: number; seconds: number; switchMs: number[] }> {
  const switchMs: number[] = []
  let backfillMs = 0
  const bar = progress('migrate tenants', tenants.length, { enabled: process.stderr.isTTY, piped: !process.stderr.isTTY })
  let chunks = 0
  for (const [k, tenantId] of tenants.entries()) {
    const m0 = performance.now()
    const limit = b.o.maxChunksPerSecond ? { maxChunksPerSecond: b.o.maxChunksPerSecond } : {}
    chunks += (await b.store.migrateTenant(tenantId, { to: 'next', embed: b.embed, batchSize: b.o.batch, ...limit })).embedded
    backfillMs += performance.now() - m0
    const t0 = performance.now()
    await b.store.switchTenant(tenantId, 'next', { embed: b.embed })
    switchMs.push(performance.now() - t0)
    bar.update(k + 1)
  }
  const seconds = backfillMs / 1000
  bar.done(`${chunks.toLocaleString('en-US')} chunks embedded in ${seconds.toFixed(1)} s of backfill (switches timed apart)`)
  return { chunks, seconds, switchMs }
}

/** The tenant switched back: how many of its queries answer exactly as before the migration. */
async function rollBack(b: Bench, tenantId: string, before: string[]): Promise<number> {
  await b.store.rollbackTenant(tenantId)
  const back = await answers(b.store.forTenant(tenantId), b.queries.get(tenantId)!.old)
  return back.filter((a, i) => a === before[i]).length
}

/** Completed writes missing from the space their tenant searches now. */
async function lostWrites(b: Bench, written: Map<string, string>): Promise<number> {
  let lost = 0
  for (const [doc, content] of written) {
    const { tenant } = await b.store.activeTenant(doc.split('/')[0]!)
    const [chunk] = await tenant.getChunks([doc])
    if (chunk?.content !== content) lost++
  }
  return lost
}

function methodOf(o: ModelMigrationOptions, perTenant: number): string {
  return (
    `${o.tenants} tenants × ${perTenant} chunks (${o.dim} dims, seeded clusters, fullText off, no query sample), a space of ${o.toDim} dims added; ` +
    `${o.searchers} search clients (activeTenant then search k 10, a query of the space's model; 1 in 10 with the hits' vectors checked) ` +
    `for ${o.phaseSeconds} s before, through the whole migration, ${o.phaseSeconds} s after; one writer (replaceDocument every 5 ms, ` +
    `written again in the new space when refused at a switch); every tenant migrated one after another (migrateTenant, batches of ${o.batch}` +
    `${o.maxChunksPerSecond ? `, at most ${o.maxChunksPerSecond} chunks/s` : ''}, ` +
    `then switchTenant with embed, timed alone; the backfill's seconds are migrateTenant's alone); the embed is a hash of the text (free), its time counted apart`
  )
}

async function answers(tenant: TenantStore, queries: readonly Float32Array[]): Promise<string[]> {
  const out: string[] = []
  for (const q of queries)
    out.push(JSON.stringify((await tenant.search(q, { k: 10 })).map((h) => [h.documentId, h.chunkIndex, h.distance])))
  return out
}

function figures(search: number[], state: number[]): PhaseFigures {
  return { searches: search.length, search: summarize(search), activeTenant: summarize(state) }
}

async function sizes(db: Database): Promise<Record<string, number>> {
  const { rows } = await sql<{ name: string; heap: string; indexes: string }>`
    select relname as name, pg_table_size(oid)::text as heap, pg_indexes_size(oid)::text as indexes
    from pg_class where relname in (${TABLE}, ${`${TABLE}__next`}) and relkind in ('r', 'p')`.execute(db)
  const out: Record<string, number> = {}
  for (const r of rows) {
    out[`${r.name} heap`] = Number(r.heap)
    out[`${r.name} indexes`] = Number(r.indexes)
  }
  return out
}
