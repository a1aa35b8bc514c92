import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import { EmbeddingSpaceError, PgVectorStore, type Database, type SearchResult, type TenantStore } from '../../../src/index.js'
import { generateCorpus, queryTexts, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { progress } from '../../report/progress.js'
import { summarize, type Percentiles } from '../../report/stats.js'

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

/**
 * Every tenant of a seeded corpus moved from a `dim`-wide space to a `toDim`-wide one while
 * `searchers` clients search and one client writes: searches timed before, during and after; each
 * answer checked (the tenant's documents only, vectors of the space the tenant searched, never
 * empty); the writer's completed writes checked at the end (in the space its tenant searches); one
 * migration killed mid-way and resumed (no chunk embedded twice); one tenant rolled back (its old
 * answers exactly); table and index sizes before, after, and after the old rows are released.
 */
export async function measureModelMigration(
  db: Database,
  o: ModelMigrationOptions,
  log: (line: string) => void,
): Promise<ModelMigrationReport> {
  const perTenant = Math.floor(o.chunks / o.tenants)
  const spec: CorpusSpec = {
    seed: 'migrate-bench',
    dim: o.dim,
    tenants: Array.from({ length: o.tenants }, (_, i) => ({ id: `t${i}`, chunks: perTenant })),
  }
  const ids = spec.tenants.map((t) => t.id)
  await dropAll(db)
  const store = await PgVectorStore.open(db, { table: TABLE, dimensions: o.dim, querySample: false, fullText: false })
  const bar = progress('load', perTenant * o.tenants, { enabled: process.stderr.isTTY, piped: !process.stderr.isTTY })
  await store.bulkIngest(generateCorpus(spec), { onProgress: ({ rows }) => bar.update(rows) })
  bar.done(`${(perTenant * o.tenants).toLocaleString('en-US')} chunks of ${o.tenants} tenants`)
  await store.optimize({ targetRecall: null })
  await store.addSpace({ name: 'next', dimensions: o.toDim, model: `hash-${o.toDim}` })
  await sql.raw(`analyze ${TABLE}`).execute(db)
  const diskBefore = await sizes(db)
  const embedNew = (texts: string[]) => Promise.resolve(texts.map((t) => hashEmbedding(t, o.toDim)))
  const queries = new Map(ids.map((t) => [t, { old: queryVectors(spec, t, 20), text: queryTexts(spec, t, 20) }]))
  const checks = { failedSearches: 0, emptySearches: 0, wrongTenant: 0, wrongSpace: 0, checkedHits: 0 }

  // The search clients: a random tenant, its active space, a query of that space's model.
  let phase: 'before' | 'during' | 'after' = 'before'
  const times = { before: [] as number[], during: [] as number[], after: [] as number[] }
  const stateTimes = { before: [] as number[], during: [] as number[], after: [] as number[] }
  let running = true
  let n = 0
  const searcher = async (seed: number) => {
    let i = seed
    while (running) {
      i = (i * 1103515245 + 12345) % 2147483648
      const tenantId = ids[i % ids.length]!
      const q = queries.get(tenantId)!
      try {
        const t0 = performance.now()
        const { space, tenant } = await store.activeTenant(tenantId)
        const t1 = performance.now()
        const vector = space === 'next' ? hashEmbedding(q.text[i % 20]!, o.toDim) : q.old[i % 20]!
        const hits = await tenant.search(vector, { k: 10, includeEmbedding: n++ % 10 === 0 })
        const t2 = performance.now()
        stateTimes[phase].push(t1 - t0)
        times[phase].push(t2 - t1)
        check(hits, tenantId, space, o)
      } catch {
        checks.failedSearches++
      }
    }
  }
  const check = (hits: SearchResult[], tenantId: string, space: string, opts: ModelMigrationOptions) => {
    if (hits.length === 0) checks.emptySearches++
    for (const h of hits) {
      if (!h.documentId.startsWith(`${tenantId}/`)) checks.wrongTenant++
      if (h.embedding) {
        checks.checkedHits++
        const want = space === 'next' ? opts.toDim : opts.dim
        if (h.embedding.length !== want) checks.wrongSpace++
        else if (space === 'next' && Math.abs(h.embedding[3]! - Math.fround(hashEmbedding(h.content, opts.toDim)[3]!)) > 1e-6)
          checks.wrongSpace++
      }
    }
  }
  const clients = Array.from({ length: o.searchers }, (_, s) => searcher(s + 1))
  log(`before: ${o.searchers} search clients for ${o.phaseSeconds} s`)
  await sleep(o.phaseSeconds * 1000)

  // During: a writer on the tenants (and its checks), the migration of every tenant.
  phase = 'during'
  const written = new Map<string, string>() // document id → content of its latest completed write
  const writes = { completed: 0, refusedThenRewritten: 0, lost: 0 }
  let writing = true
  const writable = ids.filter((t) => t !== ids[2])
  const writer = (async () => {
    for (let w = 0; writing; w++) {
      const tenantId = writable[(w * 7) % writable.length]!
      const doc = `${tenantId}/written-${w % 50}`
      const content = `written ${w} for ${tenantId}`
      for (let attempt = 0; attempt < 3; attempt++) {
        const { space, tenant } = await store.activeTenant(tenantId)
        try {
          await writeOne(tenant, doc, content, space === 'next' ? hashEmbedding(content, o.toDim) : queries.get(tenantId)!.old[w % 20]!)
          written.set(doc, content)
          writes.completed++
          break
        } catch (err) {
          if (!(err instanceof EmbeddingSpaceError)) throw err
          writes.refusedThenRewritten++ // the tenant switched between the lookup and the write: told, written again in its space
        }
      }
      await sleep(5)
    }
  })()
  const resumeTenant = ids[1]!
  const rollbackTenant = ids[2]!
  const rollbackAnswers = await answers(store.forTenant(rollbackTenant), queries.get(rollbackTenant)!.old)
  let embedSeconds = 0
  let embedCalls = 0
  const embeddedTexts = new Map<string, number>()
  const timedEmbed = async (texts: string[]) => {
    const t0 = performance.now()
    const out = await embedNew(texts)
    embedSeconds += (performance.now() - t0) / 1000
    embedCalls++
    return out
  }
  // One migration stopped after its first batch (as a deploy would stop it), then resumed by a new call.
  let calls = 0
  const crash = new AbortController()
  const counting = (into: Map<string, number>) => async (texts: string[]) => {
    for (const t of texts) into.set(t, (into.get(t) ?? 0) + 1)
    if (++calls === 1) crash.abort()
    return timedEmbed(texts)
  }
  const beforeCrash = new Map<string, number>()
  await store
    .migrateTenant(resumeTenant, { to: 'next', embed: counting(beforeCrash), batchSize: o.batch, signal: crash.signal })
    .catch(() => {})
  const afterResume = new Map<string, number>()
  const switchMs: number[] = []
  const migrated = ids.filter((t) => t !== rollbackTenant)
  const started = performance.now()
  const mbar = progress('migrate tenants', migrated.length, { enabled: process.stderr.isTTY, piped: !process.stderr.isTTY })
  let backfilled = 0
  for (const [k, tenantId] of [resumeTenant, ...migrated.filter((t) => t !== resumeTenant), rollbackTenant].entries()) {
    const r = await store.migrateTenant(tenantId, {
      to: 'next',
      embed: tenantId === resumeTenant ? counting(afterResume) : timedEmbed,
      batchSize: o.batch,
    })
    backfilled += r.embedded
    const t0 = performance.now()
    await store.switchTenant(tenantId, 'next', { embed: timedEmbed })
    switchMs.push(performance.now() - t0)
    mbar.update(k + 1)
  }
  const backfillSeconds = (performance.now() - started) / 1000
  mbar.done(`${backfilled.toLocaleString('en-US')} chunks embedded in ${backfillSeconds.toFixed(1)} s`)
  writing = false
  await writer

  // After: searches in the new space; the rollback tenant back to its old answers.
  phase = 'after'
  log(`after: ${o.searchers} search clients for ${o.phaseSeconds} s`)
  await sleep(o.phaseSeconds * 1000)
  running = false
  await Promise.all(clients)
  await store.rollbackTenant(rollbackTenant).catch(async (err: unknown) => {
    // Writes since the switch: the old model embeds them (the way back is a migration too).
    if (!(err instanceof EmbeddingSpaceError)) throw err
    await store.migrateTenant(rollbackTenant, {
      to: 'default',
      embed: async (texts) => texts.map((_, j) => queries.get(rollbackTenant)!.old[j % 20]!),
    })
    await store.switchTenant(rollbackTenant, 'default')
  })
  const back = await answers(store.forTenant(rollbackTenant), queries.get(rollbackTenant)!.old)
  const identical = back.filter((a, i) => a === rollbackAnswers[i]).length

  // Every completed write is in the space its tenant searches now.
  for (const [doc, content] of written) {
    const tenantId = doc.split('/')[0]!
    const { tenant } = await store.activeTenant(tenantId)
    const [chunk] = await tenant.getChunks([doc])
    if (chunk?.content !== content) writes.lost++
  }
  await sql.raw(`analyze ${TABLE}, ${TABLE}__next`).execute(db)
  const diskAfter = await sizes(db)
  for (const t of migrated) await store.releaseTenantSpace(t, 'default')
  await sql.raw(`vacuum ${TABLE}`).execute(db)
  const diskReleased = await sizes(db)
  await store.close()
  await dropAll(db)

  const before = figures(times.before, stateTimes.before)
  const during = figures(times.during, stateTimes.during)
  const after = figures(times.after, stateTimes.after)
  const twice = [...afterResume.keys()].filter((t) => beforeCrash.has(t)).length
  return {
    phases: { before, during, after },
    p95DuringOverBefore: during.search.p95 / before.search.p95,
    backfill: { chunks: backfilled, seconds: backfillSeconds, chunksPerSecond: backfilled / backfillSeconds, embedSeconds, embedCalls },
    switches: { count: switchMs.length, ms: summarize(switchMs) },
    writes,
    checks,
    resume: {
      tenant: resumeTenant,
      chunks: perTenant,
      embeddedBeforeCrash: [...beforeCrash.values()].reduce((a, b) => a + b, 0),
      embeddedAfterResume: [...afterResume.values()].reduce((a, b) => a + b, 0),
      embeddedTwice: twice,
    },
    rollback: { tenant: rollbackTenant, queries: rollbackAnswers.length, identical },
    disk: { before: diskBefore, after: diskAfter, afterRelease: diskReleased },
    method:
      `${o.tenants} tenants × ${perTenant} chunks (${o.dim} dims, seeded clusters, fullText off, no query sample), a space of ${o.toDim} dims added; ` +
      `${o.searchers} search clients (activeTenant then search k 10, a query of the space's model; 1 in 10 with the hits' vectors checked) ` +
      `for ${o.phaseSeconds} s before, through the whole migration, ${o.phaseSeconds} s after; one writer (replaceDocument every 5 ms, ` +
      `re-written in the new space when refused at a switch); every tenant migrated one after another (migrateTenant, batches of ${o.batch}, ` +
      `then switchTenant with embed, timed alone); the embed is a hash of the text (free), its time counted apart`,
  }
}

async function writeOne(tenant: TenantStore, doc: string, content: string, embedding: ArrayLike<number>): Promise<void> {
  await tenant.replaceDocument(doc, [{ content, embedding: Array.from(embedding) }])
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

async function dropAll(db: Database): Promise<void> {
  const { rows } = await sql<{
    name: string
  }>`select relname as name from pg_class where relkind in ('r', 'p') and relname like ${`${TABLE}%`}`.execute(db)
  if (rows.length) await sql.raw(`drop table if exists ${rows.map((r) => `"${r.name}"`).join(', ')} cascade`).execute(db)
  await sql`delete from pgscale_object_version where object like ${`store:%${TABLE}%`}`.execute(db).catch(() => {})
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
