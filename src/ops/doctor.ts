import { sql, type Kysely } from 'kysely'
import type { Database } from '../db/database.js'
import type { MonthlyRollup } from '../rollup/index.js'
import { dirtyLogStats, trackingState } from '../rollup/index.js'
import {
  DEFAULT_OWN_INDEX_ABOVE,
  storeIndexNames,
  storeRelations,
  tenantIndexName,
  tenantSizes,
  type PgVectorStore,
} from '../store/index.js'
import type { Finding } from './findings.js'
import { deliveredRecallFindings } from './recall-check.js'

/** Options of {@link doctorStore} and {@link doctorRollup}. */
export interface DoctorOptions {
  /** The tier threshold `optimize()` uses (`ownIndexAbove`). Default 5,000. */
  ownIndexAbove?: number
  /** A tuning whose tenant grew or shrank by more than this share is stale. Default 0.2. */
  retuneAbove?: number
  /** Reads of a store's tables (scans since the statistics were reset) before an index never scanned counts as unused. Default 1,000. */
  minReadsForUnused?: number
  /** A dirty-log backlog older than this warns (fails at 10×). Default 600 s. */
  maxBacklogSeconds?: number
}

/**
 * A store's health, from the catalog and its own records: indexes left INVALID by a failed build
 * (`fail`), HNSW indexes never scanned since the statistics were reset (the shared one serving
 * nobody among them), tenants past the tier boundary without their own index, and tunings made
 * when the tenant was a different size or missing for an indexed tenant (`warn`), and the recall
 * monitor's verdict on delivered recall (`fail` below what tuning stated, `warn` on too few real
 * queries: `deliveredRecallFindings`). Reads only; it counts each tenant's rows (one scan of the table).
 *
 * ### Examples
 * ```ts
 * for (const f of await doctorStore(db, store)) console.log(f.level, f.object, f.detail)
 * ```
 */
export async function doctorStore(db: Database, store: PgVectorStore, options: DoctorOptions = {}): Promise<Finding[]> {
  const { config } = store
  const object = config.qualified
  const findings: Finding[] = []
  const { rows: indexes } = await sql<{ name: string; valid: boolean; am: string; scans: number | null; bytes: number }>`
    select i.relname as name, x.indisvalid as valid, am.amname as am, s.idx_scan::float8 as scans, pg_relation_size(i.oid)::float8 as bytes
    from pg_index x join pg_class i on i.oid = x.indexrelid join pg_am am on am.oid = i.relam
    left join pg_stat_user_indexes s on s.indexrelid = i.oid
    where x.indrelid in ${storeRelations(config)} and i.relkind = 'i' order by 1`.execute(db)
  for (const index of indexes.filter((i) => !i.valid))
    findings.push({
      level: 'fail',
      object,
      check: 'invalid-index',
      detail: `${index.name} is INVALID (a failed build): run pgscale optimize, which drops and rebuilds it`,
    })
  // An index never scanned says something only once the table has served many reads since the
  // statistics were reset: a fresh one has simply not been asked yet.
  const { rows: use } = await sql<{ reads: number }>`
    select coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0)::float8 as reads from pg_stat_user_tables
    where relid in ${storeRelations(config)}`.execute(db)
  const shared = storeIndexNames(config.table).sharedHnsw
  const used = (use[0]?.reads ?? 0) >= (options.minReadsForUnused ?? 1000)
  for (const index of indexes.filter((i) => used && i.valid && i.am === 'hnsw' && i.scans === 0)) {
    const mb = `${(index.bytes / 2 ** 20).toFixed(1)} MB`
    findings.push({
      level: 'warn',
      object,
      check: index.name === shared ? 'shared-index-unused' : 'unused-index',
      detail:
        index.name === shared
          ? `the shared HNSW index ${index.name} (${mb}) served none of the table's ${use[0]!.reads} reads since the statistics were reset: optimize({ dropUnusedSharedIndex: true }) drops it`
          : `${index.name} (${mb}) served none of the table's ${use[0]!.reads} reads since the statistics were reset`,
    })
  }
  findings.push(...(await tierFindings(db, store, new Set(indexes.map((i) => i.name)), options)))
  // Delivered recall below what tuning stated (or too few real queries to tell): the recall monitor's verdict.
  findings.push(...(await deliveredRecallFindings(store)))
  if (!findings.some((f) => f.level !== 'ok'))
    findings.push({ level: 'ok', object, check: 'store', detail: `${indexes.length} indexes valid, tiers and tuning current` })
  return findings
}

async function tierFindings(db: Database, store: PgVectorStore, indexNames: Set<string>, options: DoctorOptions): Promise<Finding[]> {
  const threshold = options.ownIndexAbove ?? DEFAULT_OWN_INDEX_ABOVE
  const retuneAbove = options.retuneAbove ?? 0.2
  const tuning = new Map((await store.tenantTuning()).map((t) => [t.tenantId, t]))
  const findings: Finding[] = []
  for (const { tenantId, rows } of await tenantSizes(db, store.config)) {
    const object = `${store.config.qualified} tenant ${tenantId}`
    const own = indexNames.has(tenantIndexName(store.config.table, tenantId))
    if (!own && rows > threshold) {
      findings.push({
        level: 'warn',
        object,
        check: 'tier',
        detail: `${rows} chunks (> ${threshold}) and no index of its own: run pgscale optimize`,
      })
      continue
    }
    const tuned = tuning.get(tenantId)
    if (own && !tuned)
      findings.push({ level: 'warn', object, check: 'untuned', detail: 'has its own index but was never tuned: run pgscale optimize' })
    else if (tuned && Math.abs(rows - tuned.rowsAtTuning) > retuneAbove * Math.max(1, tuned.rowsAtTuning))
      findings.push({
        level: 'warn',
        object,
        check: 'stale-tuning',
        detail: `tuned at ${tuned.rowsAtTuning} chunks, has ${rows}: run pgscale optimize`,
      })
  }
  return findings
}

/**
 * A tracked rollup's health: its triggers current (`fail` when another definition or only some of
 * them are there), and its dirty-key backlog — rows waiting (counted up to 100,000) and the oldest
 * key's age, a `warn` past `maxBacklogSeconds` and a `fail` past ten times that.
 *
 * ### Examples
 * ```ts
 * const findings = await doctorRollup(db, rollup, { maxBacklogSeconds: 300 })
 * ```
 */
export async function doctorRollup(db: Kysely<any>, rollup: MonthlyRollup, options: DoctorOptions = {}): Promise<Finding[]> {
  const parts = rollup.parts
  const object = parts.target.qualified
  const limit = (options.maxBacklogSeconds ?? 600) * 1000
  const state = await trackingState(db, parts).catch(() => 'stale' as const)
  if (state === 'none') return [{ level: 'ok', object, check: 'untracked', detail: 'not tracked: refreshed by the app' }]
  const findings: Finding[] = []
  if (state === 'stale')
    findings.push({
      level: 'fail',
      object,
      check: 'tracking',
      detail: 'its triggers are missing or of another definition: run pgscale migrate (or rollup.track) as the owner',
    })
  const backlog = await dirtyLogStats(db, parts)
  const age = backlog.oldestMarkedAt ? Date.now() - backlog.oldestMarkedAt.getTime() : 0
  const waiting = `${backlog.capped ? 'over ' : ''}${backlog.rows} dirty key(s), the oldest ${(age / 1000).toFixed(0)} s old`
  if (age > 10 * limit)
    findings.push({ level: 'fail', object, check: 'backlog', detail: `${waiting}: is a drainer running? (pgscale drain)` })
  else if (age > limit) findings.push({ level: 'warn', object, check: 'backlog', detail: `${waiting}: the drainers fall behind` })
  else if (!findings.length) findings.push({ level: 'ok', object, check: 'backlog', detail: waiting })
  return findings
}
