import { CompiledQuery } from 'kysely'
import type { Database } from '../../db/database.js'
import { EmbeddingSpaceError, InvalidArgumentError } from '../../errors.js'
import { renderStatements, type ResolvedStoreConfig } from '../config/index.js'
import { assertEmbedding, ingestRows, toVectorLiteral } from '../ingest/index.js'
import type { IndexBuildOptions, IndexBuildResult } from '../schema/index.js'
import { DEFAULT_OWN_INDEX_ABOVE } from '../tuning/index.js'
import { assertIntegerIn } from '../../util/assert-integer.js'
import { advisoryXactLock, int32Hash } from '../../sql/advisory-lock.js'
import type { SpaceTables } from './space-config.js'
import { SPACE_MAINTENANCE_SETTING } from './space-catalog.js'
import { spaceDiff, type SpaceDiff } from './space-diff.js'
import type { ChangeLogDiff } from './space-change-log.js'
import type { MigrateTune, SpaceTenantTuning } from './space-tuning.js'

/** The app's embedding function for a space: one vector per text, in order. */
export type EmbedTexts = (texts: string[]) => Promise<ArrayLike<number>[]>

/** Options of {@link PgVectorStore.migrateTenant}. */
export interface MigrateTenantOptions {
  /** The space to fill (added with `addSpace`; `default` to go back to the store's own). */
  to: string
  /** Embeds a batch of chunk texts with the space's model. Called once per batch, never for a chunk the space holds with its current text. */
  embed: EmbedTexts
  /** Chunks per `embed` call and per write, 1..10,000. Default 256. */
  batchSize?: number
  /** At most this many chunks a second (the backfill sleeps between batches). Default: no limit. */
  maxChunksPerSecond?: number
  /** Stops between batches (what is written stays: the next call resumes from it). */
  signal?: AbortSignal
  /** After each batch: chunks embedded by this call, and how many remained before it. */
  onProgress?: (progress: { embedded: number; batches: number; pendingBefore: number }) => void
  /** Build the tenant's own HNSW index in the space when it holds more than `ownIndexAbove` chunks (the owner's right). Default true. */
  buildIndex?: boolean
  /** The size above which the tenant gets its own index in the space. Default 5,000 (`DEFAULT_OWN_INDEX_ABOVE`). */
  ownIndexAbove?: number
  /**
   * Tune the tenant's index in the space before the switch, with the tuner of
   * `optimize({ targetRecall })`, on the query model's queries (it has sent none in the new model
   * yet): at its recall target in the space it searches (its tuning there), else 0.98; or at
   * `{ targetRecall }`, with `{ tuning }` as `optimize`'s. Only a tenant with its own index there
   * has anything to tune. Re-tuned by a later call when its chunks changed by more than 20%.
   * With `false`, `switch: true` switches it untuned. Default true.
   */
  tune?: MigrateTune
  /** Switch the tenant once the backfill caught up (retried when writes arrived meanwhile). Default false. */
  switch?: boolean
}

/** What {@link PgVectorStore.migrateTenant} did. */
export interface MigrateTenantResult {
  /** Chunks embedded and written by this call (resumed work not counted twice). */
  embedded: number
  /** Calls to `embed`. */
  batches: number
  /** Chunks the target held that the active space no longer has, deleted. */
  deleted: number
  /** Chunks whose metadata changed since they were embedded, brought over without embedding. */
  metadataSynced: number
  /** Whether the tenant's own index was built in the target. */
  indexBuilt: boolean
  /**
   * Its tuning in the target after this call: `tuning.efSearch` / `exact`, `targetRecall` and the
   * stated bound (`tuning.recallBound`); `tunedNow` when this call tuned it; `indexed: false`
   * (nothing to tune) below `ownIndexAbove`. Null with `tune: false`.
   */
  tuning: (SpaceTenantTuning & { tunedNow: boolean }) | null
  /** Whether the tenant was switched (with `switch: true`). */
  switched: boolean
}

interface BackfillContext {
  db: Database
  tables: SpaceTables
  tenantId: string
  from: ResolvedStoreConfig
  to: { readonly config: ResolvedStoreConfig }
  /** The target's name (the tenant's state row must still name it while a batch is written). */
  space: string
  options: MigrateTenantOptions
  createTenantIndex: (options: IndexBuildOptions) => Promise<IndexBuildResult>
  /** Tunes the tenant's index in the target (at its size there), absent with `tune: false`. */
  tune?: () => Promise<SpaceTenantTuning & { tunedNow: boolean }>
}

/** A chunk the target lacks with its current text (`SpaceDiff.pending`). */
export interface PendingRow {
  document_id: string
  chunk_index: number
  content: string
  metadata: Record<string, unknown>
}

/**
 * The backfill: batches of the tenant's chunks that the target lacks with their current text, in
 * key order, each embedded by the app's `embed` and written in one transaction (its older versions
 * deleted first, so a chunk re-written since is replaced whole). There is no checkpoint to lose: the
 * target is the checkpoint — after a crash, a deploy or an abort the next call finds only what is
 * still missing, and a chunk changed while its batch was embedded is found again by the next pass.
 * Deletions and metadata-only changes are brought over without embedding. Ends when nothing is
 * missing.
 *
 * Two batches overlap: the next one is read and embedded while the server writes the one before
 * (on another connection where the handle has one); one write at a time, in key order, and a
 * batch's keys all come after the one in flight. A pass ends only once its last write committed,
 * so the next pass never sees a written batch as missing. Measured in docs/store.md.
 */
export async function runBackfill(ctx: BackfillContext): Promise<MigrateTenantResult> {
  const { db, tenantId, options } = ctx
  const batchSize = assertIntegerIn(options.batchSize ?? 256, 1, 10_000, 'migrateTenant: batchSize')
  const rate = options.maxChunksPerSecond
  if (rate !== undefined && (typeof rate !== 'number' || !(rate > 0)))
    throw new InvalidArgumentError('migrateTenant: maxChunksPerSecond must be a positive number')
  const ownIndexAbove = assertIntegerIn(options.ownIndexAbove ?? DEFAULT_OWN_INDEX_ABOVE, 0, 1_000_000_000, 'migrateTenant: ownIndexAbove')
  const to = ctx.to.config
  const diff = spaceDiff(ctx.from, to)
  const run = <R>(text: string, params: unknown[]) => db.executeQuery<R>(CompiledQuery.raw(text, [tenantId, ...params]))
  const result: MigrateTenantResult = {
    embedded: 0,
    batches: 0,
    deleted: 0,
    metadataSynced: 0,
    indexBuilt: false,
    tuning: null,
    switched: false,
  }
  const started = Date.now()
  const target = { config: to, space: ctx.space, tables: ctx.tables, diff }
  // The write in flight (the batch before the one being read and embedded).
  let writing: Promise<void> | undefined
  const settle = async () => {
    const w = writing
    writing = undefined
    await w
  }
  try {
    // Passes over the tenant in key order, each batch after the last one's key; a pass that ends
    // starts again from the first key, and the backfill ends when a whole pass from there finds nothing.
    let after: PendingRow | undefined
    for (;;) {
      options.signal?.throwIfAborted()
      const { rows } = after
        ? await run<PendingRow>(diff.pendingAfter, [batchSize, after.document_id, after.chunk_index])
        : await run<PendingRow>(diff.pending, [batchSize])
      if (rows.length === 0) {
        await settle()
        if (after === undefined) break
        after = undefined
        continue
      }
      after = rows[rows.length - 1]
      const vectors = await embedRows(rows, options.embed)
      await settle()
      writing = writeBatch(db, target, tenantId, rows, vectors).then(() => {
        result.embedded += rows.length
        result.batches += 1
        options.onProgress?.({ embedded: result.embedded, batches: result.batches, pendingBefore: rows.length })
      })
      // An unobserved rejection until it is awaited: settle() or the finally below awaits it.
      writing.catch(() => {})
      if (rate !== undefined) {
        const due = started + ((result.embedded + rows.length) / rate) * 1000
        if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()))
      }
    }
  } finally {
    // An error or an abort while a batch is written: that batch commits (or fails) before the call ends.
    if (writing) await writing.catch(() => {})
  }
  result.deleted = (await run<{ n: number }>(diff.deleteGone, [])).rows[0]?.n ?? 0
  result.metadataSynced = (await run<{ n: number }>(diff.syncMetadata, [])).rows[0]?.n ?? 0
  const { rows: size } = await run<{ n: number }>(`select count(*)::int as n from ${to.qualified} where tenant_id = $1`, [])
  if (options.buildIndex !== false && (size[0]?.n ?? 0) > ownIndexAbove) {
    await ctx.createTenantIndex({})
    result.indexBuilt = true
  }
  // Before the state says ready: a tuning that fails leaves the migration backfilling, and the next call tunes it.
  if (ctx.tune) result.tuning = await ctx.tune()
  await run(`update ${ctx.tables.tenants} set state = 'ready', updated_at = now() where tenant_id = $1 and state = 'backfilling'`, [])
  return result
}

/** The app's vectors for `rows`: one per text, or a typed error before anything is written. */
async function embedRows(rows: readonly PendingRow[], embed: EmbedTexts): Promise<ArrayLike<number>[]> {
  const texts = rows.map((r) => r.content)
  const vectors = await embed(texts)
  if (!Array.isArray(vectors) || vectors.length !== texts.length) {
    throw new InvalidArgumentError(
      `embed returned ${Array.isArray(vectors) ? vectors.length : typeof vectors} vectors for ${texts.length} texts`,
    )
  }
  return vectors
}

/** Where a batch goes: the space's store, its name, the bookkeeping and the diff statements. */
export interface BatchTarget {
  config: ResolvedStoreConfig
  space: string
  tables: SpaceTables
  diff: SpaceDiff
}

/**
 * Writes an embedded batch into the target through the store's bulk path (binary COPY where the
 * handle has it — no vector is formatted as text; batched inserts where it has not), in one
 * transaction: every row checked first (dimensions, finite values — a typed error, nothing
 * written); two backfills of the tenant take turns (an advisory lock); the tenant's state row read
 * `FOR KEY SHARE` once — the batch is written only while the tenant still migrates to this space
 * (else `EmbeddingSpaceError`), and a switch waits for it — which is what the space guard checks
 * row by row, so the rows go in under the maintenance setting that lets them past the guard; the
 * batch's older versions deleted; the progress counted in the same transaction.
 */
async function writeBatch(
  db: Database,
  target: BatchTarget,
  tenantId: string,
  rows: readonly PendingRow[],
  vectors: readonly ArrayLike<number>[],
): Promise<void> {
  const { config: to, tables, diff, space } = target
  const chunks = rows.map((r, i) => ({
    documentId: r.document_id,
    chunkIndex: r.chunk_index,
    content: r.content,
    metadata: r.metadata,
    embedding: vectors[i]!,
  }))
  await ingestRows(
    db,
    {
      config: to,
      copySql: renderStatements(to).copyRows,
      tenantId,
      settings: { [SPACE_MAINTENANCE_SETTING]: 'on' },
      prepare: async (trx) => {
        // Two backfills of the tenant at once (two workers, a retry beside a slow call) take turns
        // per batch: the second deletes and writes the same keys again, never a duplicate key.
        await trx.executeQuery(
          CompiledQuery.raw(advisoryXactLock(int32Hash(`pgscale.space-backfill:${to.qualified}`), [int32Hash(tenantId)])),
        )
        const { rows: state } = await trx.executeQuery<{ target: string | null }>(
          CompiledQuery.raw(
            `update ${tables.tenants} set embedded = embedded + $2, embed_calls = embed_calls + 1, updated_at = now()
             where tenant_id = $1 returning target`,
            [tenantId, rows.length],
          ),
        )
        if (state[0]?.target !== space) {
          throw new EmbeddingSpaceError(
            `tenant ${tenantId} is no longer migrating to "${space}" (switched or cancelled meanwhile): this batch was not written`,
          )
        }
        await trx.executeQuery(
          CompiledQuery.raw(diff.deleteKeys, [tenantId, rows.map((r) => r.document_id), rows.map((r) => r.chunk_index)]),
        )
        return []
      },
    },
    chunks,
    {},
  )
}

/**
 * Embeds `rows` with `embed` and writes them into the target in one statement (an upsert; for the
 * few chunks the switch embeds under its lock, inside its transaction). `run` sends a statement
 * with the tenant as `$1`.
 */
export async function embedAndWrite(
  run: (text: string, params: unknown[]) => Promise<unknown>,
  upsert: SpaceDiff['upsert'],
  to: ResolvedStoreConfig,
  rows: readonly PendingRow[],
  embed: EmbedTexts,
): Promise<void> {
  const vectors = await embedRows(rows, embed)
  const literals = vectors.map((v, i) =>
    toVectorLiteral(assertEmbedding(v, to.dimensions, to.distance, `embed's vector ${i} for "${to.table}"`, to.vectorType)),
  )
  await run(upsert, [
    rows.map((r) => r.document_id),
    rows.map((r) => r.chunk_index),
    rows.map((r) => r.content),
    rows.map((r) => JSON.stringify(r.metadata)),
    literals.join(';'),
  ])
}

/**
 * The switch's last pass before its lock: the chunks written since the backfill's last pass, when
 * there are 1..`limit` of them, embedded and written as a batch of the backfill while the tenant's
 * writes go on — so the switch embeds under its lock only what arrives during this pass. With the
 * change log (`logged`), only logged keys are looked at, and the keys in line afterwards leave the
 * log (the lock then looks at what is left). Resolves to how many it wrote (0: none pending, or
 * more than `limit`: the switch then refuses them).
 */
export async function lastUnlockedPass(
  db: Database,
  target: BatchTarget,
  tenantId: string,
  embed: EmbedTexts | undefined,
  limit: number,
  logged?: ChangeLogDiff,
): Promise<number> {
  let written = 0
  if (embed && limit > 0) {
    const pending = logged?.pending ?? target.diff.pending
    const { rows } = await db.executeQuery<PendingRow>(CompiledQuery.raw(pending, [tenantId, limit + 1]))
    if (rows.length > 0 && rows.length <= limit) {
      await writeBatch(db, target, tenantId, rows, await embedRows(rows, embed))
      written = rows.length
    }
  }
  if (logged) await db.executeQuery(CompiledQuery.raw(logged.prune, [tenantId]))
  return written
}
