import { CompiledQuery, sql, type Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import { shardIndexSizes } from './shard-index-sizes.js'
import { renderSessionSettings } from '../../../db/local-settings.js'
import { withLease } from '../../../db/lease-lock.js'
import { DatabaseError, IndexBuildError, InvalidArgumentError } from '../../../errors.js'
import type { ResolvedStoreConfig } from '../../config/index.js'
import { quoteQualified } from '../../../sql/quote.js'
import { SQLSTATE } from '../../../sql/sqlstate.js'
import { int32Hash } from '../../../sql/advisory-lock.js'
import { assertIntegerIn } from '../../../util/assert-integer.js'

/** Options of an HNSW index build. */
export interface IndexBuildOptions {
  /** HNSW `m`: links per node, 2..100. Default 16. */
  m?: number
  /** HNSW `ef_construction`, 4..1000 and ≥ 2m. Default 64. */
  efConstruction?: number
  /** `max_parallel_maintenance_workers` for this build only. Default: the server's. */
  parallelWorkers?: number
  /** `maintenance_work_mem` for this build only, e.g. `'1GB'` or a number of MB. Default: the server's. */
  maintenanceWorkMem?: string | number
  /** Called about once a second with progress from `pg_stat_progress_create_index` (server providers). */
  onProgress?: (progress: IndexBuildProgress) => void
  /**
   * `CREATE INDEX CONCURRENTLY`: writes go on during the build (it takes a SHARE UPDATE EXCLUSIVE
   * lock instead of SHARE), at the price of a longer build that first waits for running
   * transactions. A failed concurrent build leaves an INVALID index, which is dropped. Default false.
   */
  concurrently?: boolean
}

/** A progress report of a running build. */
export interface IndexBuildProgress {
  /** `pg_stat_progress_create_index.phase`, e.g. `building index: loading tuples`; `done` at the end. */
  phase: string
  tuplesDone: number
  tuplesTotal: number
  blocksDone: number
  blocksTotal: number
  elapsedMs: number
}

/** What a build did. */
export interface IndexBuildResult {
  index: string
  /** False when the index already existed (nothing was built). */
  built: boolean
  seconds: number
  bytes: number
  /** Plain-language advice, e.g. maintenance_work_mem was too small for the graph. */
  warnings: string[]
}

/** Validated `SET LOCAL` settings and `WITH (...)` parameters of a build. */
export function buildParameters(config: ResolvedStoreConfig, options: IndexBuildOptions) {
  if (config.dimensions > config.vectors.maxIndexDimensions) {
    throw new InvalidArgumentError(
      `HNSW indexes on ${config.quantization === 'none' ? config.vectorType : `${config.quantization}-quantized vectors`} support at most ${config.vectors.maxIndexDimensions} dimensions; this store has ${config.dimensions}`,
    )
  }
  const m = options.m ?? 16
  const efConstruction = options.efConstruction ?? 64
  assertIntegerIn(m, 2, 100, 'm')
  if (!Number.isInteger(efConstruction) || efConstruction < 4 || efConstruction > 1000 || efConstruction < 2 * m) {
    throw new InvalidArgumentError(
      `efConstruction must be an integer from 4 to 1000 and at least 2m (${2 * m}), got ${String(efConstruction)}`,
    )
  }
  const settings: Record<string, string | number> = {}
  if (options.parallelWorkers !== undefined) {
    settings.max_parallel_maintenance_workers = assertIntegerIn(options.parallelWorkers, 0, 64, 'parallelWorkers')
  }
  if (options.maintenanceWorkMem !== undefined) settings.maintenance_work_mem = memorySetting(options.maintenanceWorkMem)
  return { m, efConstruction, settings }
}

function memorySetting(value: string | number): string {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1) return `${value}MB`
  if (typeof value === 'string' && /^\d+(kB|MB|GB|TB)$/.test(value)) return value
  throw new InvalidArgumentError(`maintenanceWorkMem must be like '512MB', '2GB' or a number of MB, got ${JSON.stringify(value)}`)
}

function parseMemory(setting: string): number {
  const match = /^(\d+)(kB|MB|GB|TB)?$/.exec(setting.trim())
  if (!match) return Number.NaN
  const unit = { kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 }[match[2] ?? 'kB'] ?? 1024
  return Number(match[1]) * unit
}

/** Rounds bytes up to a setting PostgreSQL accepts: whole MB, or GB above 4 GB. */
function memoryAtLeast(bytes: number): string {
  const mb = Math.ceil(bytes / 1024 ** 2 / 64) * 64
  return mb >= 4096 ? `${Math.ceil(mb / 1024)}GB` : `${mb}MB`
}

/**
 * Builds an HNSW index with `ddl` (a complete `CREATE INDEX [CONCURRENTLY] IF NOT EXISTS` statement
 * built from validated parts, `CONCURRENTLY` when `options.concurrently`), with this build's
 * settings, progress polled from another connection, and the known failures turned into
 * {@link IndexBuildError}s. An INVALID index of the same name (a concurrent build that failed, here
 * or in a process that died) is dropped first; a concurrent build that fails drops its own.
 */
export async function buildIndex(
  db: Database,
  index: {
    schema?: string
    name: string
    qualifiedTable: string
    ddl: string
    /** The table whose maintenance lock a concurrent build takes (a partition's build: its store's table). Default `qualifiedTable`. */
    lockTable?: string
  },
  settings: Record<string, string | number>,
  options: IndexBuildOptions,
): Promise<IndexBuildResult> {
  const concurrently = options.concurrently === true
  const existing = await indexState(db, index.schema, index.name)
  if (existing?.valid) {
    return {
      index: index.name,
      built: false,
      seconds: 0,
      bytes: (await indexBytes(db, index.schema, index.name)) ?? existing.bytes,
      warnings: [],
    }
  }
  const capped = await capBuildMemory(db, settings)
  settings = capped.settings
  const started = performance.now()
  const stopPolling =
    options.onProgress && db.capabilities.concurrentConnections
      ? pollProgress(db, index.qualifiedTable, started, options.onProgress)
      : undefined
  let built: boolean
  try {
    // Builders of the same index take turns (two optimize() at once would otherwise both create it:
    // a duplicate-key error on pg_class, or two concurrent builds deadlocking); the second then
    // finds the index the first built.
    built = await withIndexLock(
      db,
      { name: index.name, lockTable: index.lockTable ?? index.qualifiedTable },
      concurrently,
      settings,
      async (conn) => {
        const state = await indexState(conn, index.schema, index.name)
        if (state?.valid) return false
        if (state) await dropIndex(conn, index.schema, index.name, concurrently)
        await conn.executeQuery(CompiledQuery.raw(index.ddl))
        return true
      },
    )
  } catch (err) {
    if (concurrently) await dropInvalidIndex(db, index.schema, index.name).catch(() => {})
    throw explainBuildFailure(err, settings)
  } finally {
    await stopPolling?.()
  }
  if (!built) {
    const bytes = (await indexBytes(db, index.schema, index.name)) ?? 0
    return { index: index.name, built: false, seconds: 0, bytes, warnings: [] }
  }
  const seconds = (performance.now() - started) / 1000
  const bytes = (await indexBytes(db, index.schema, index.name)) ?? 0
  const warnings: string[] = capped.warning ? [capped.warning] : []
  const mwm = await buildMemory(db, settings)
  const mwmBytes = parseMemory(mwm)
  if (bytes > mwmBytes) {
    warnings.push(
      `The index (${(bytes / 1024 ** 2).toFixed(0)} MB) is larger than maintenance_work_mem (${mwm}): pgvector's graph ` +
        `no longer fitted in memory and the build continued on disk, which is much slower. ` +
        `Set maintenanceWorkMem to at least ${memoryAtLeast(bytes * 1.1)} for this table.`,
    )
  }
  options.onProgress?.({ phase: 'done', tuplesDone: 0, tuplesTotal: 0, blocksDone: 0, blocksTotal: 0, elapsedMs: seconds * 1000 })
  return { index: index.name, built: true, seconds, bytes, warnings }
}

/** The `maintenance_work_mem` a build runs with: its own setting, else the server's (one query). */
async function buildMemory(db: Database, settings: Record<string, string | number>): Promise<string> {
  if (typeof settings.maintenance_work_mem === 'string') return settings.maintenance_work_mem
  const { rows } = await sql<{ mwm: string }>`select current_setting('maintenance_work_mem') as mwm`.execute(db)
  return rows[0]?.mwm ?? ''
}

/**
 * Lowers this build's `maintenance_work_mem` to the handle's `capabilities.maxBuildMemoryMb` (PGlite:
 * larger builds leak their graph's memory); a warning when the caller asked for more.
 *
 * ### Examples
 * ```ts
 * const { settings } = await capBuildMemory(pgliteDb, { maintenance_work_mem: '1GB' }) // 48MB
 * ```
 */
export async function capBuildMemory(
  db: Database,
  settings: Record<string, string | number>,
): Promise<{ settings: Record<string, string | number>; warning?: string }> {
  const capMb = db.capabilities.maxBuildMemoryMb
  if (capMb === undefined) return { settings }
  const asked = typeof settings.maintenance_work_mem === 'string' ? settings.maintenance_work_mem : undefined
  const current = await buildMemory(db, settings)
  if (!(parseMemory(current) > capMb * 1024 ** 2)) return { settings }
  const warning = asked
    ? `maintenanceWorkMem ${asked} was lowered to ${capMb}MB: this database (PGlite) keeps the memory of larger builds until it closes.`
    : undefined
  return { settings: { ...settings, maintenance_work_mem: `${capMb}MB` }, warning }
}

/**
 * Runs `build` holding a lock on the index's name. A plain build runs in a transaction with the
 * build's `SET LOCAL` settings and a transaction-level advisory lock. `CREATE INDEX CONCURRENTLY`
 * cannot run in a transaction block: its settings are set for the session and reset afterwards
 * (only those; an app's pool keeps its own; none behind a transaction pooler, where the server's
 * apply), and the lock is the table's maintenance lease.
 */
async function withIndexLock<T>(
  db: Database,
  index: { name: string; lockTable: string },
  concurrently: boolean,
  settings: Record<string, string | number>,
  build: (conn: Kysely<any>) => Promise<T>,
): Promise<T> {
  if (!concurrently) {
    // A plain build beside a concurrent one on the same table deadlocks (its ShareLock waits behind the
    // concurrent build's lock, which waits for the plain build's transaction): builds of a table take turns.
    const keys = `${int32Hash('pgscale.index')}, ${int32Hash(index.name)}`
    return withLease(db, `pgscale.maintenance:${index.lockTable}`, () =>
      db.transaction((trx) => build(trx), { settings, prelude: [`SELECT pg_advisory_xact_lock(${keys})`] }),
    )
  }
  // Behind a transaction pooler nothing is set for a session: the SET could land on another server
  // connection than the build, and stay there for another client.
  const { set, reset } = db.capabilities.transactionPooled ? { set: '', reset: '' } : renderSessionSettings(settings)
  return withTableMaintenanceLock(db, index.lockTable, async (conn) => {
    try {
      if (set) await conn.executeQuery(CompiledQuery.raw(set))
      return await build(conn)
    } finally {
      if (reset) await conn.executeQuery(CompiledQuery.raw(reset)).catch(() => {})
    }
  })
}

/**
 * Runs `work` on one connection holding a table's maintenance lock: a lease (`withLease`, a row
 * claimed and polled for, which holds through a transaction pooler as a session lock would not;
 * a waiting lock would hold a snapshot the holder's build waits for). Concurrent
 * index builds, `DROP INDEX CONCURRENTLY` and `ANALYZE` of one table take turns on it: each of them
 * waits for the transactions older than its own, and a partial index is never "safe" to skip, so
 * two at once — two `optimize({ concurrently: true })` building different tenants' indexes — ended
 * in `deadlock detected` (40P01). Not re-entrant across connections: never nest it.
 *
 * ### Examples
 * ```ts
 * await withTableMaintenanceLock(db, config.qualified, (conn) => sql`analyze rag_chunks`.execute(conn))
 * ```
 */
export async function withTableMaintenanceLock<T>(
  db: Database,
  qualifiedTable: string,
  work: (conn: Kysely<any>) => Promise<T>,
): Promise<T> {
  return withLease(db, `pgscale.maintenance:${qualifiedTable}`, () => db.connection().execute(work))
}

/**
 * Drops an index, if it exists, taking turns with the builds and drops of its table: on one
 * connection holding the table's maintenance lock ({@link withTableMaintenanceLock}), concurrently
 * (`DROP INDEX CONCURRENTLY`) or plainly. A plain `DROP INDEX` outside it, beside another process's
 * concurrent build on the same table, deadlocks (40P01): the drop waits for the build's lock, the
 * build for the drop's transaction.
 *
 * ### Examples
 * ```ts
 * await dropIndexInTurn(db, { schema: 'public', name: 'rag_chunks_t_acme_trial', table: '"public"."rag_chunks"' }, true)
 * ```
 */
export async function dropIndexInTurn(
  db: Database,
  index: { schema?: string; name: string; table: string },
  concurrently: boolean,
): Promise<void> {
  await withTableMaintenanceLock(db, index.table, (conn) => dropIndex(conn, index.schema, index.name, concurrently))
}

/** Whether an index exists, its size, and whether it is valid (a failed concurrent build leaves it INVALID). */
export async function indexState(
  db: Kysely<any>,
  schema: string | undefined,
  name: string,
): Promise<{ bytes: number; valid: boolean } | undefined> {
  const qualified = quoteQualified(schema, name)
  const { rows } = await sql<{ bytes: string; valid: boolean }>`
    select pg_relation_size(x.indexrelid)::text as bytes, x.indisvalid as valid
    from pg_index x where x.indexrelid = to_regclass(${qualified})`.execute(db)
  return rows[0] ? { bytes: Number(rows[0].bytes), valid: rows[0].valid } : undefined
}

/** Drops the index if it exists and is INVALID. */
export async function dropInvalidIndex(db: Database, schema: string | undefined, name: string): Promise<void> {
  const state = await indexState(db, schema, name)
  if (state && !state.valid) await dropIndex(db, schema, name, false)
}

async function dropIndex(db: Kysely<any>, schema: string | undefined, name: string, concurrently: boolean): Promise<void> {
  const qualified = quoteQualified(schema, name)
  await db.executeQuery(CompiledQuery.raw(`drop index ${concurrently ? 'concurrently ' : ''}if exists ${qualified}`))
}

/** The size of an index in bytes, or undefined when it does not exist. `schema` defaults to the search path. */
export async function indexBytes(db: Database, schema: string | undefined, name: string): Promise<number | undefined> {
  const qualified = quoteQualified(schema, name)
  const { rows } = await sql<{ bytes: string | null; table: string | null }>`
    select pg_relation_size(to_regclass(${qualified}))::text as bytes,
      (select x.indrelid::regclass::text from pg_index x where x.indexrelid = to_regclass(${qualified})) as table`.execute(db)
  const row = rows[0]
  if (row?.bytes == null) return undefined
  // On Citus the coordinator's index is an empty shell: the shards' indexes, summed.
  if (row.table && (await distributedTableName(db, row.table)) !== undefined) return (await shardIndexSizes(db, row.table))[name] ?? 0
  return Number(row.bytes)
}

/**
 * Polls `pg_stat_progress_create_index` for the table's build once a second. On Citus, where the
 * coordinator's own build is of an empty shell, it polls the workers for the shards' builds
 * (`run_command_on_workers`) and reports them summed, with the phase of the first shard listed.
 */
function pollProgress(db: Database, qualifiedTable: string, started: number, report: (p: IndexBuildProgress) => void): () => Promise<void> {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let inFlight: Promise<void> = Promise.resolve()
  const shards = distributedTableName(db, qualifiedTable)
  const tick = () => {
    inFlight = shards
      .then((name) => (name === undefined ? coordinatorProgress(db, qualifiedTable) : shardProgress(db, name)))
      .then((rows) => {
        const first = rows[0]
        if (first && !stopped) {
          const sum = (key: keyof ProgressRow) => rows.reduce((total, row) => total + Number(row[key]), 0)
          report({
            phase: first.phase,
            tuplesDone: sum('tuples_done'),
            tuplesTotal: sum('tuples_total'),
            blocksDone: sum('blocks_done'),
            blocksTotal: sum('blocks_total'),
            elapsedMs: performance.now() - started,
          })
        }
      })
      .catch(() => {})
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, 1000)
      })
  }
  timer = setTimeout(tick, 250)
  return async () => {
    stopped = true
    clearTimeout(timer)
    await inFlight
  }
}

/** A row of `pg_stat_progress_create_index`, as the poll reads it. */
interface ProgressRow {
  phase: string
  tuples_done: string | number
  tuples_total: string | number
  blocks_done: string | number
  blocks_total: string | number
}

async function coordinatorProgress(db: Database, qualifiedTable: string): Promise<ProgressRow[]> {
  const { rows } = await sql<ProgressRow>`
    select phase, tuples_done::text, tuples_total::text, blocks_done::text, blocks_total::text
    from pg_stat_progress_create_index where relid = to_regclass(${qualifiedTable})`.execute(db)
  return rows
}

/** The shards' builds on every worker: their tables are the table's name + `_<shardid>`. */
async function shardProgress(db: Database, table: string): Promise<ProgressRow[]> {
  const { rows } = await sql<{ result: string }>`
    select result from run_command_on_workers(format(
      $cmd$select coalesce(json_agg(json_build_object('phase', p.phase, 'tuples_done', p.tuples_done,
        'tuples_total', p.tuples_total, 'blocks_done', p.blocks_done, 'blocks_total', p.blocks_total)), '[]')
      from pg_stat_progress_create_index p join pg_class c on c.oid = p.relid where c.relname ~ %L$cmd$,
      ${`^${table}_[0-9]+$`}::text)) where success`.execute(db)
  return rows.flatMap((r) => JSON.parse(r.result) as ProgressRow[])
}

/** The table's own name when it is distributed on Citus (its shards are named after it), else undefined. */
async function distributedTableName(db: Database, qualifiedTable: string): Promise<string | undefined> {
  if (!(await db.hasCitus())) return undefined
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid
    where p.logicalrelid = to_regclass(${qualifiedTable})`.execute(db)
  return rows[0]?.name
}

/** Shared-memory failures of parallel builds: disk full (53100) or out of memory (53200) in DSM. */
export function explainBuildFailure(err: unknown, settings: Record<string, string | number>): unknown {
  if (!(err instanceof DatabaseError)) return err
  if (err.sqlState === SQLSTATE.diskFull || err.sqlState === SQLSTATE.outOfMemory) {
    return new IndexBuildError(
      `The HNSW build ran out of shared memory (SQLSTATE ${err.sqlState}: ${err.message}). A parallel build keeps the ` +
        `graph in dynamic shared memory, which in a container is /dev/shm: raise it (Docker: shm_size: 1gb, as ` +
        `docker-compose.yml does), or build with parallelWorkers: 0, or lower maintenanceWorkMem` +
        `${settings.maintenance_work_mem ? ` (now ${settings.maintenance_work_mem})` : ''}.`,
      { cause: err },
    )
  }
  return err
}
