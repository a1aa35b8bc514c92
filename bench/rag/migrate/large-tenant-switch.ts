import { sql } from 'kysely'
import { PgVectorStore, type Database } from '../../../src/index.js'
import { generateCorpus, queryVectors, type CorpusSpec } from '../../synthetic/corpus.js'
import { heartbeat } from '../../report/progress.js'
import { summarize, type Percentiles } from '../../report/stats.js'
import { dropBenchTables, sleep } from './bench-tables.js'
import { hashEmbedding } from './model-migration.js'

/** What `rag-bench migrate --large-tenant` measured. */
export interface LargeTenantSwitchReport {
  chunks: number
  /** The backfill of the one tenant (its index in the new space built and tuned), seconds. */
  backfillSeconds: number
  /** `vacuumFirst`: the seconds `VACUUM (ANALYZE)` of the new space's table took after the backfill, before the cycles. */
  vacuumSeconds: number | null
  /** The new space's tuning for the tenant, as the backfill left it. */
  tuning: { efSearch: number | null; exact: boolean } | null
  /** Each switch to the new space and each rollback, timed alone (ms), while `searchers` clients search. */
  switches: { count: number; ms: Percentiles }
  rollbacks: { count: number; ms: Percentiles }
  /** The re-migration before each switch after the first (a rolled-back tenant migrates again): what it embedded. */
  reembedded: number
  /** Searches during the cycles: failed, empty, and answered in a space of the wrong dimension. */
  searches: { count: number; failed: number; empty: number; wrongSpace: number }
  method: string
}

const TABLE = 'rag_migrate_large'

/**
 * One tenant of `chunks` chunks moved to a new space and switched back and forth `cycles` times
 * while `searchers` clients search it: the switch and the rollback timed alone, every search checked
 * (no error, not empty, a vector of the space the tenant searches at that moment's dimension). The
 * tenant's index is built in both spaces first (the default's by `createTenantIndex`, the new one's
 * by the backfill, which tunes it), so the searches are the indexed ones a large tenant sends.
 *
 * ### Examples
 * ```ts
 * const r = await measureLargeTenantSwitch(db, { chunks: 100_000, dim: 384, toDim: 256, searchers: 2, cycles: 10, batch: 512 }, console.error)
 * ```
 */
export async function measureLargeTenantSwitch(
  db: Database,
  o: { chunks: number; dim: number; toDim: number; searchers: number; cycles: number; batch: number; vacuumFirst?: boolean },
  log: (line: string) => void,
): Promise<LargeTenantSwitchReport> {
  await dropBenchTables(db, TABLE)
  const stop = heartbeat('rag-bench migrate --large-tenant: running', { enabled: !process.stderr.isTTY })
  const store = await PgVectorStore.open(db, { table: TABLE, dimensions: o.dim, querySample: false })
  try {
    log(`ingest: 1 tenant × ${o.chunks.toLocaleString('en-US')} chunks × ${o.dim}`)
    const spec = (dim: number) => ({ seed: 'large-switch', dim, tenants: [{ id: 'large', chunks: o.chunks }] })
    const shortened = await ingestLarge(store, spec(o.dim), o.toDim)
    log('its own index in the current space')
    await store.createTenantIndex('large')
    await sql.raw(`analyze ${TABLE}`).execute(db)
    await store.addSpace({ name: 'next', dimensions: o.toDim })
    const embed = async (texts: string[]) =>
      texts.map((t) => Array.from(shortened.get(t) ?? unitPrefix(hashEmbedding(t, o.toDim), o.toDim)))
    log('backfill into the new space (its index built and tuned)')
    const b0 = performance.now()
    const first = await store.migrateTenant('large', { to: 'next', embed, batchSize: o.batch })
    const backfillSeconds = (performance.now() - b0) / 1000
    const vacuumSeconds = o.vacuumFirst ? await vacuumSpaceTable(db, log) : null
    const found = first.tuning?.tuning
    const tuning = found ? { efSearch: found.efSearch, exact: found.exact } : null
    const queries = {
      default: queryVectors(spec(o.dim), 'large', 32),
      next: queryVectors(spec(o.toDim), 'large', 32),
    }
    const searches = { count: 0, failed: 0, empty: 0, wrongSpace: 0 }
    let running = true
    const clients = Array.from({ length: o.searchers }, async (_, c) => {
      for (let i = c; running; i++) {
        try {
          const { space, tenant } = await store.activeTenant('large')
          const vector = queries[space as 'default' | 'next'][i % 32]!
          const hits = await tenant.search(vector, { k: 10 })
          searches.count++
          if (hits.length === 0) searches.empty++
        } catch (err) {
          // A query of the other space's dimension refused (typed) is the only tolerated outcome: counted apart.
          if (err instanceof Error && /dimension/i.test(err.message)) searches.wrongSpace++
          else searches.failed++
        }
      }
    })
    const switchMs: number[] = []
    const rollbackMs: number[] = []
    let reembedded = 0
    for (let cycle = 0; cycle < o.cycles; cycle++) {
      if (cycle > 0) reembedded += (await store.migrateTenant('large', { to: 'next', embed, batchSize: o.batch })).embedded
      await sleep(200)
      const s0 = performance.now()
      await store.switchTenant('large', 'next', { embed })
      switchMs.push(performance.now() - s0)
      await sleep(200)
      const r0 = performance.now()
      await store.rollbackTenant('large')
      rollbackMs.push(performance.now() - r0)
      log(`cycle ${cycle + 1}/${o.cycles}: switch ${switchMs.at(-1)!.toFixed(1)} ms, rollback ${rollbackMs.at(-1)!.toFixed(1)} ms`)
    }
    running = false
    await Promise.all(clients)
    return {
      chunks: o.chunks,
      backfillSeconds,
      vacuumSeconds,
      tuning,
      switches: { count: switchMs.length, ms: summarize(switchMs) },
      rollbacks: { count: rollbackMs.length, ms: summarize(rollbackMs) },
      reembedded,
      searches,
      method: `one tenant of ${o.chunks} chunks (${o.dim}-d, its own HNSW index) backfilled into a ${o.toDim}-d space by a free embed (each chunk's first ${o.toDim} values, renormalised: a Matryoshka-style shorter model), ${o.vacuumFirst ? "then VACUUM (ANALYZE) of the new space's table, " : ''}then ${o.cycles} cycles of switchTenant → 200 ms → rollbackTenant → migrateTenant (a resume) while ${o.searchers} clients search it through activeTenant; each switch and rollback timed alone`,
    }
  } finally {
    stop()
    await store.close()
    await dropBenchTables(db, TABLE)
  }
}

/**
 * `VACUUM (ANALYZE)` of the new space's table (`<table>__<space>`), as an operator might run it after
 * a large backfill, to see whether the first switch then waits less on the server's upkeep
 * (docs/store.md, "Why the first switch is slower"); resolves to its seconds.
 */
async function vacuumSpaceTable(db: Database, log: (line: string) => void): Promise<number> {
  log(`VACUUM (ANALYZE) ${TABLE}__next before the cycles`)
  const v0 = performance.now()
  await sql`vacuum (analyze) ${sql.id(`${TABLE}__next`)}`.execute(db)
  return (performance.now() - v0) / 1000
}

/** The first `dims` values of `v`, scaled to unit length. */
function unitPrefix(v: ArrayLike<number>, dims: number): Float32Array {
  const out = new Float32Array(dims)
  let sum = 0
  for (let i = 0; i < dims; i++) sum += (out[i] = v[i] ?? 0) ** 2
  const norm = Math.sqrt(sum) || 1
  for (let i = 0; i < dims; i++) out[i]! /= norm
  return out
}

/**
 * Ingests the tenant and keeps, by text, the new model's vector of each chunk: the old one shortened
 * (Matryoshka) — each chunk's first `toDim` values, renormalised, a space with the corpus's own
 * structure (a hash of the text would be uniform noise, HNSW's worst case, which no model produces).
 */
async function ingestLarge(store: PgVectorStore, spec: CorpusSpec, toDim: number): Promise<Map<string, Float32Array>> {
  const shortened = new Map<string, Float32Array>()
  await store.bulkIngest(
    (function* () {
      for (const row of generateCorpus(spec)) {
        shortened.set(row.content, unitPrefix(row.embedding, toDim))
        yield row
      }
    })(),
  )
  return shortened
}
