import { CompiledQuery } from 'kysely'
import type { Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import { tenantIndexName, type ResolvedStoreConfig } from '../config/index.js'
import type { TenantTuning } from '../schema/index.js'
import { quoteQualified } from '../../sql/quote.js'
import {
  DEFAULT_RETUNE_ABOVE,
  DEFAULT_TARGET_RECALL,
  stillTuned,
  type RecallTuningOptions,
  type TuneOneTenantOptions,
} from '../tuning/index.js'

/**
 * `migrateTenant({ tune })`: tune the tenant's index in the new space before the switch (`true`,
 * the default: at its recall target in the space it searches), not at all (`false`), or at this
 * target with these tuning options.
 */
export type MigrateTune = boolean | { targetRecall?: number; tuning?: RecallTuningOptions }

/** A tenant's tuning in a space, as `migrationStatus` and `migrateTenant` report it. */
export interface SpaceTenantTuning {
  /** The space it is for. */
  space: string
  /** The tenant's chunks there: the size its tuning is judged at. */
  chunks: number
  /** Whether the tenant has its own HNSW index there (only then is there anything to tune). */
  indexed: boolean
  /** Its tuning there (`efSearch`, `exact`, `targetRecall`, `recallBound`: the stated bound), if any. */
  tuning: TenantTuning | null
  /**
   * It has its own index there and no tuning that still holds for its size (none, or tuned at a
   * size more than 20% away): `switchTenant` refuses to switch it there until `migrateTenant` tunes it.
   */
  untuned: boolean
}

/** What tuning a tenant in a space needs: the space's store, and the tuner of one tenant. */
export interface SpaceTuner {
  config: ResolvedStoreConfig
  db: Database
  tenantTuning(): Promise<TenantTuning[]>
  tune(tenantId: string, options: TuneOneTenantOptions): Promise<unknown>
}

/** The checked `tune` option: undefined when tuning is off. */
export function tuneOption(value: MigrateTune | undefined): { targetRecall?: number; tuning?: RecallTuningOptions } | undefined {
  if (value === undefined || value === true) return {}
  if (value === false) return undefined
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InvalidArgumentError('migrateTenant: tune must be true, false or { targetRecall, tuning }')
  const target = value.targetRecall
  if (target !== undefined && (typeof target !== 'number' || !(target > 0 && target <= 1)))
    throw new InvalidArgumentError(`migrateTenant: tune.targetRecall must be a number in (0, 1], got ${String(target)}`)
  return value
}

/**
 * The tenant's tuning in `space`: its chunks there and its own index (one round trip), and — only
 * when it has one — its tuning and whether that still holds at that size.
 */
export async function spaceTenantTuning(store: SpaceTuner, space: string, tenantId: string): Promise<SpaceTenantTuning> {
  const index = quoteQualified(store.config.schema, tenantIndexName(store.config.table, tenantId))
  const { rows } = await store.db.executeQuery<{ n: number; indexed: boolean }>(
    CompiledQuery.raw(
      `select count(*)::int as n, to_regclass($2) is not null as indexed from ${store.config.qualified} where tenant_id = $1`,
      [tenantId, index],
    ),
  )
  const chunks = rows[0]?.n ?? 0
  const indexed = rows[0]?.indexed === true
  if (!indexed) return { space, chunks, indexed, tuning: null, untuned: false }
  const tuning = (await store.tenantTuning()).find((t) => t.tenantId === tenantId) ?? null
  const holds = tuning !== null && stillTuned(tuning, chunks, tuning.targetRecall, DEFAULT_RETUNE_ABOVE)
  return { space, chunks, indexed, tuning, untuned: !holds }
}

/**
 * The tuning check a switch runs before its lock, without counting the tenant's rows when it need
 * not (a count is O(tenant): 100,000 rows of a freshly written table): where the store has the
 * change log (`changes`), a tuning holds when the tenant's own index's row estimate (`reltuples`,
 * exact at its build) and the keys logged since the migration began together stay within half the
 * re-tune margin of the size it was tuned at; otherwise — no log, no estimate, no tuning, or a drift
 * that may be near the margin — the exact check ({@link spaceTenantTuning}). `chunks` is then the
 * estimate. Run it before the last unlocked pass, which deletes log rows.
 *
 * ### Examples
 * ```ts
 * const check = await switchTenantTuning(tuner, 'v2', 'acme', spaceTables(config).changes)
 * if (check.untuned) throw new EmbeddingSpaceError('…', { untuned: true })
 * ```
 */
export async function switchTenantTuning(
  store: SpaceTuner,
  space: string,
  tenantId: string,
  changes: string | undefined,
): Promise<SpaceTenantTuning> {
  if (changes === undefined) return spaceTenantTuning(store, space, tenantId)
  const index = quoteQualified(store.config.schema, tenantIndexName(store.config.table, tenantId))
  const { rows } = await store.db.executeQuery<{ indexed: boolean; estimate: number | null; logged: number }>(
    CompiledQuery.raw(
      `select to_regclass($2) is not null as indexed,
        (select c.reltuples from pg_class c where c.oid = to_regclass($2))::float8 as estimate,
        (select count(*)::int from ${changes} where tenant_id = $1) as logged`,
      [tenantId, index],
    ),
  )
  const row = rows[0]
  if (row?.indexed && row.estimate !== null && row.estimate >= 0) {
    const tuning = (await store.tenantTuning()).find((t) => t.tenantId === tenantId) ?? null
    if (tuning) {
      const drift = Math.abs(row.estimate - tuning.rowsAtTuning) + row.logged
      const holds = stillTuned(tuning, tuning.rowsAtTuning, tuning.targetRecall, DEFAULT_RETUNE_ABOVE)
      if (holds && drift <= (DEFAULT_RETUNE_ABOVE / 2) * Math.max(1, tuning.rowsAtTuning))
        return { space, chunks: Math.round(row.estimate), indexed: true, tuning, untuned: false }
    }
  }
  return spaceTenantTuning(store, space, tenantId)
}

/**
 * Tunes the tenant's index in the target space before the switch, when it has one there and no
 * tuning that holds at its size there for the target: at `option.targetRecall`, else the target
 * its tuning in the space it searches states, else {@link DEFAULT_TARGET_RECALL}; on the query
 * model's queries (the tenant has sent none in this space's model yet — its query sample holds
 * the old model's vectors). Resolves to its tuning there, and whether this call tuned it.
 */
export async function tuneInSpace(
  target: SpaceTuner & { space: string },
  source: Pick<SpaceTuner, 'tenantTuning'>,
  tenantId: string,
  option: { targetRecall?: number; tuning?: RecallTuningOptions },
): Promise<SpaceTenantTuning & { tunedNow: boolean }> {
  const before = await spaceTenantTuning(target, target.space, tenantId)
  if (!before.indexed) return { ...before, tunedNow: false }
  const recall =
    option.targetRecall ?? (await source.tenantTuning()).find((t) => t.tenantId === tenantId)?.targetRecall ?? DEFAULT_TARGET_RECALL
  if (!before.untuned && before.tuning?.targetRecall === recall) return { ...before, tunedNow: false }
  await target.tune(tenantId, { targetRecall: recall, tuning: option.tuning, preTraffic: true })
  return { ...(await spaceTenantTuning(target, target.space, tenantId)), tunedNow: true }
}
