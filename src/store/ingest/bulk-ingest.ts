import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely'
import { advisoryXactLock, int32Hash } from '../../sql/advisory-lock.js'
import type { Database, DatabaseTransaction } from '../../db/database.js'
import type { LocalSettings } from '../../db/local-settings.js'
import { assertMayAlter } from '../../db/security/privileges.js'
import { InvalidArgumentError, PgScaleError } from '../../errors.js'
import { BinaryCopyWriter, chunkFull } from './binary-copy.js'
import { assertEmbedding, assertId, assertMetadata, type Embedding } from './embedding.js'
import { toVectorLiteral } from './vector-literal.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import { quoteQualified } from '../../sql/quote.js'
import {
  buildParameters,
  capBuildMemory,
  deferrableIndexes,
  estimatedRows,
  hnswIndexNames,
  type IndexBuildOptions,
} from '../schema/index.js'

/** A row of {@link PgVectorStore.bulkIngest}. */
export interface IngestRow {
  tenantId: string
  documentId: string
  chunkIndex: number
  content: string
  embedding: Embedding
  metadata?: Record<string, unknown>
}

/** A row of {@link TenantStore.bulkIngest}: the handle's tenant is implied. */
export type TenantIngestRow = Omit<IngestRow, 'tenantId'>

/** A row {@link PgVectorStore.bulkIngest} left out under `onInvalidRow: 'skip'`, and why. */
export interface SkippedRow {
  /** Its position in the input, from 0. */
  row: number
  tenantId?: unknown
  documentId?: unknown
  chunkIndex?: unknown
  reason: string
}

/** Options every bulk load takes. */
export interface IngestOptions {
  /** Called every `progressEvery` rows and at the end. */
  onProgress?: (progress: { rows: number; elapsedMs: number }) => void
  /** Default 10,000. */
  progressEvery?: number
  /**
   * A row that fails validation (wrong dimensions, a non-finite or all-zero embedding, a bad id):
   * `throw` (default) rejects the whole load, nothing is written; `skip` leaves the row out, lists
   * it in the result's `skipped`, and commits the rest. Server-side errors (a duplicate key) still
   * reject the whole load.
   */
  onInvalidRow?: 'throw' | 'skip'
}

/** What a bulk load did. */
export interface IngestResult {
  rows: number
  seconds: number
  rowsPerSecond: number
  /** Rows left out under `onInvalidRow: 'skip'` (the first 1,000; `skippedRows` counts all). */
  skipped: SkippedRow[]
  skippedRows: number
}

const SKIPPED_KEPT = 1000
const INSERT_BATCH = 1000
/** PGlite reads a COPY from a buffer: one COPY per this many rows keeps memory bounded. */
const BUFFERED_COPY_ROWS = 5000

/** How one load runs: the table, the tenant if fixed, and what to do around the rows. */
export interface IngestPlan {
  config: ResolvedStoreConfig
  copySql: string
  /** Set for a tenant handle's load: every row gets this tenant. */
  tenantId?: string
  /**
   * Runs first in the load's transaction (index drops); resolves to statements to run after the
   * rows in the same transaction (index rebuilds).
   */
  prepare?: (trx: Transaction<any>) => Promise<readonly string[]>
  settings?: LocalSettings
}

/**
 * Loads rows in one transaction: binary COPY where the handle streams or buffers it, batched
 * `INSERT ... SELECT FROM unnest(...)` where it has no COPY (an app's Kysely). All or nothing,
 * except rows skipped under `onInvalidRow: 'skip'`.
 */
export async function ingestRows(
  db: Database,
  plan: IngestPlan,
  source: AsyncIterable<unknown> | Iterable<unknown>,
  options: IngestOptions,
): Promise<IngestResult> {
  const started = performance.now()
  const every = options.progressEvery ?? 10_000
  const onInvalid = options.onInvalidRow ?? 'throw'
  if (onInvalid !== 'throw' && onInvalid !== 'skip') {
    throw new InvalidArgumentError(`onInvalidRow must be throw or skip, got ${JSON.stringify(onInvalid)}`)
  }
  const iterator = toAsyncIterator(source)
  const skipped: SkippedRow[] = []
  let skippedRows = 0
  let seen = 0
  let written = 0

  /** The next valid row, validated and normalised; undefined at the end. */
  const nextRow = async (): Promise<CheckedRow | undefined> => {
    for (;;) {
      const next = await iterator.next()
      if (next.done) return undefined
      const position = seen++
      try {
        const row = checkRow(next.value, plan, position)
        written++
        if (options.onProgress && written % every === 0) options.onProgress({ rows: written, elapsedMs: performance.now() - started })
        return row
      } catch (err) {
        if (onInvalid === 'throw' || !(err instanceof PgScaleError)) throw err
        skippedRows++
        if (skipped.length < SKIPPED_KEPT) skipped.push(describeSkipped(next.value, position, err.message, plan.tenantId))
      }
    }
  }

  await db.transaction(
    async (trx) => {
      const after = plan.prepare ? await plan.prepare(trx) : []
      const copy = (await copyRefused(trx, plan.config, db.capabilities.copy)) ? 'none' : db.capabilities.copy
      if (copy === 'none') await insertBatches(trx, plan, nextRow)
      else await copyBatches(trx, plan, nextRow, copy === 'stream' ? Number.POSITIVE_INFINITY : BUFFERED_COPY_ROWS)
      for (const text of after) await trx.executeQuery(CompiledQuery.raw(text))
    },
    { settings: plan.settings },
  )

  const seconds = (performance.now() - started) / 1000
  options.onProgress?.({ rows: written, elapsedMs: seconds * 1000 })
  return { rows: written, seconds, rowsPerSecond: written / seconds, skipped, skippedRows }
}

interface CheckedRow {
  tenantId: string
  documentId: string
  chunkIndex: number
  content: string
  metadata: string
  embedding: Embedding
}

function checkRow(value: unknown, plan: IngestPlan, position: number): CheckedRow {
  const where = `bulkIngest row ${position}`
  if (value === null || typeof value !== 'object') throw new InvalidArgumentError(`${where}: expected an object`)
  const row = value as IngestRow
  const tenantId = plan.tenantId ?? assertId(row.tenantId, 'tenant id')
  if (plan.tenantId !== undefined && row.tenantId !== undefined && row.tenantId !== plan.tenantId) {
    throw new InvalidArgumentError(`${where}: tenantId ${JSON.stringify(row.tenantId)} differs from this handle's tenant; leave it out`)
  }
  assertId(row.documentId, 'document id')
  if (!Number.isInteger(row.chunkIndex) || row.chunkIndex < 0 || row.chunkIndex > 2 ** 31 - 1) {
    throw new InvalidArgumentError(`${where}: chunkIndex must be a non-negative integer`)
  }
  if (typeof row.content !== 'string') throw new InvalidArgumentError(`${where}: content must be a string`)
  if (row.content.includes('\u0000')) throw new InvalidArgumentError(`${where}: content holds a NUL character, which text cannot store`)
  const embedding = assertEmbedding(row.embedding, plan.config.dimensions, plan.config.distance, where, plan.config.vectorType)
  const metadata = row.metadata === undefined ? '{}' : JSON.stringify(assertMetadata(row.metadata, where))
  return { tenantId, documentId: row.documentId, chunkIndex: row.chunkIndex, content: row.content, metadata, embedding }
}

function describeSkipped(value: unknown, row: number, reason: string, tenantId: string | undefined): SkippedRow {
  const r = value !== null && typeof value === 'object' ? (value as Partial<IngestRow>) : {}
  return { row, tenantId: tenantId ?? r.tenantId, documentId: r.documentId, chunkIndex: r.chunkIndex, reason }
}

/** One COPY per batch: one on a server (streamed), batches on PGlite. */
async function copyBatches(
  trx: DatabaseTransaction,
  plan: IngestPlan,
  nextRow: () => Promise<CheckedRow | undefined>,
  batchRows: number,
): Promise<void> {
  let more = true
  while (more) {
    const batch = async function* (): AsyncGenerator<Buffer> {
      const writer = new BinaryCopyWriter().header()
      for (let inBatch = 0; inBatch < batchRows; inBatch++) {
        const row = await nextRow()
        if (!row) {
          more = false
          break
        }
        writer.row(6).text(row.tenantId).text(row.documentId).int4(row.chunkIndex).text(row.content).jsonb(row.metadata)
        if (plan.config.vectorType === 'halfvec') writer.halfvec(row.embedding)
        else writer.vector(row.embedding)
        if (chunkFull(writer)) yield writer.take()
      }
      yield writer.trailer().take()
    }
    await trx.copyFrom(plan.copySql, batch())
  }
}

/** Without COPY: `INSERT ... SELECT FROM unnest(...)` of 1,000 rows a statement, values bound. */
async function insertBatches(trx: DatabaseTransaction, plan: IngestPlan, nextRow: () => Promise<CheckedRow | undefined>): Promise<void> {
  const text =
    `insert into ${plan.config.qualified} (tenant_id, document_id, chunk_index, content, metadata, embedding) ` +
    `select t, d, i, c, m::jsonb, e::${plan.config.vectorType} from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[]) as u(t, d, i, c, m, e)`
  for (;;) {
    const columns: [string[], string[], number[], string[], string[], string[]] = [[], [], [], [], [], []]
    let row: CheckedRow | undefined
    while (columns[0].length < INSERT_BATCH && (row = await nextRow())) {
      columns[0].push(row.tenantId)
      columns[1].push(row.documentId)
      columns[2].push(row.chunkIndex)
      columns[3].push(row.content)
      columns[4].push(row.metadata)
      columns[5].push(toVectorLiteral(row.embedding))
    }
    if (columns[0].length === 0) return
    await trx.executeQuery(CompiledQuery.raw(text, columns))
    if (columns[0].length < INSERT_BATCH) return
  }
}

function toAsyncIterator<T>(source: AsyncIterable<T> | Iterable<T>): AsyncIterator<T> {
  if (source !== null && typeof source === 'object' && Symbol.asyncIterator in source) return source[Symbol.asyncIterator]()
  if (source !== null && typeof source === 'object' && Symbol.iterator in source) {
    const it = (source as Iterable<T>)[Symbol.iterator]()
    return { next: async () => it.next() }
  }
  throw new InvalidArgumentError('bulkIngest expects an iterable or async iterable of rows')
}

/** Options of {@link PgVectorStore.bulkIngest}. */
export interface BulkIngestOptions extends IngestOptions {
  /**
   * What to do with HNSW indexes: `keep` loads through them; `rebuild` drops them and the full-text
   * GIN index, loads, and rebuilds them in the same transaction (faster for large loads; blocks the table meanwhile);
   * `auto` (default) rebuilds when `expectedRows` ≥ 50,000 and ≥ 25% of the table, else keeps.
   */
  indexStrategy?: 'keep' | 'rebuild' | 'auto'
  /** How many rows the load will bring, for `indexStrategy: 'auto'`. */
  expectedRows?: number
  /** Build options when indexes are rebuilt. */
  indexBuild?: Omit<IndexBuildOptions, 'm' | 'efConstruction'>
}

/** What {@link PgVectorStore.bulkIngest} did. */
export interface BulkIngestResult extends IngestResult {
  /** Indexes dropped and rebuilt around the load (HNSW and the full-text GIN). */
  rebuiltIndexes: string[]
  /** Advice, e.g. that a load this size would have been faster with `indexStrategy: 'rebuild'`. */
  hints: string[]
}

/**
 * A whole-store load with the index strategy applied: through the HNSW indexes (`keep`), or with
 * them dropped and rebuilt in the load's transaction (`rebuild`; `auto` decides from `expectedRows`).
 * `PgVectorStore.bulkIngest` is this function.
 *
 * ### Examples
 * ```ts
 * await bulkIngestWithIndexes(db, config, statements.copyRows, rows, { indexStrategy: 'rebuild' })
 * ```
 */
export async function bulkIngestWithIndexes(
  db: Database,
  config: ResolvedStoreConfig,
  copySql: string,
  rows: AsyncIterable<IngestRow> | Iterable<IngestRow>,
  options: BulkIngestOptions,
): Promise<BulkIngestResult> {
  const strategy = options.indexStrategy ?? 'auto'
  if (!['keep', 'rebuild', 'auto'].includes(strategy)) {
    throw new InvalidArgumentError(`indexStrategy must be keep, rebuild or auto, got ${JSON.stringify(strategy)}`)
  }
  const hnsw = await hnswIndexNames(db, config)
  let rebuild = strategy === 'rebuild'
  if (strategy === 'auto' && options.expectedRows !== undefined && hnsw.length > 0) {
    const current = (await estimatedRows(db, config)) ?? 0
    rebuild = options.expectedRows >= 50_000 && options.expectedRows >= 0.25 * current
  }
  // Dropping and rebuilding indexes is DDL: a role that does not own the table is refused first.
  if (rebuild) await assertMayAlter(db, config.qualified, 'bulkIngest', "with indexStrategy 'rebuild' drops and rebuilds indexes")
  // Rebuilding defers the full-text GIN too: maintaining it row by row costs more than building it
  // after. Rebuilding loads of one table take turns (an advisory lock first in the transaction), and
  // each reads the indexes to drop after the lock: a load that waited sees the indexes the one before
  // it rebuilt, not the ones it dropped.
  let deferred: string[] = []
  const plan: IngestPlan = {
    config,
    copySql,
    prepare: rebuild
      ? async (trx) => {
          await trx.executeQuery(CompiledQuery.raw(advisoryXactLock(int32Hash(`pgscale.store-rebuild:${config.qualified}`), [0])))
          const indexes = await deferrableIndexes(trx, config)
          deferred = indexes.map((index) => index.name)
          for (const index of indexes) await trx.executeQuery(CompiledQuery.raw(`drop index ${quoteQualified(config.schema, index.name)}`))
          return indexes.map((index) => index.definition)
        }
      : undefined,
    settings: rebuild ? (await capBuildMemory(db, buildParameters(config, options.indexBuild ?? {}).settings)).settings : {},
  }
  const result = await ingestRows(db, plan, rows, options)
  const hints: string[] = []
  const kept = rebuild ? [] : await hnswIndexNames(db, config)
  if (!rebuild && kept.length > 0 && result.rows >= 50_000) {
    hints.push(
      `${result.rows} rows went through ${kept.length} HNSW index(es) at ${Math.round(result.rowsPerSecond)} rows/s; ` +
        `for loads this size pass indexStrategy: 'rebuild' (or build the index after the load).`,
    )
  }
  return { ...result, rebuiltIndexes: deferred, hints }
}

/**
 * Whether this load must use INSERTs instead of the COPY the handle offers: PostgreSQL refuses
 * `COPY FROM` to a role under row-level security (`isolation: 'rls'`, the app's runtime role), and
 * PGlite reads COPY data from a file in its own process, which only members of
 * `pg_read_server_files` may (a superuser is; the runtime role is not). Asked only where it can
 * apply, in the load's transaction.
 */
async function copyRefused(trx: Kysely<any>, config: ResolvedStoreConfig, copy: 'stream' | 'buffered' | 'none'): Promise<boolean> {
  if (copy === 'none' || (copy === 'stream' && config.isolation !== 'rls')) return false
  const { rows } = await sql<{ refused: boolean }>`
    select row_security_active(${config.qualified}::regclass)
      or (${copy} = 'buffered' and not pg_has_role(current_user, 'pg_read_server_files', 'USAGE')) as refused`.execute(trx)
  return rows[0]?.refused === true
}
