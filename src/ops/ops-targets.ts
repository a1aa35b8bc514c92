import type { Database } from '../db/database.js'
import { MonthlyRollup } from '../rollup/index.js'
import { PgVectorStore, type PgVectorStoreConfig } from '../store/index.js'
import { InvalidArgumentError } from '../errors.js'
import { configRollups, type PgscaleConfig } from './ops-config.js'
import { recordedStores } from './recorded-stores.js'

/**
 * The stores an ops command works on: the config module's, else every store the database
 * recorded; `only` keeps the one whose table it names (a typed error when there is none).
 *
 * ### Examples
 * ```ts
 * const configs = await opsStores(db, config, 'rag_chunks')
 * ```
 */
export async function opsStores(db: Database, config: PgscaleConfig, only?: string): Promise<PgVectorStoreConfig[]> {
  const all = config.stores ?? (await recordedStores(db))
  const name = (c: PgVectorStoreConfig) => c.table ?? 'rag_chunks'
  if (only === undefined) return all
  const found = all.filter((c) => name(c) === only || name(c) === `public.${only}`)
  if (!found.length) throw new InvalidArgumentError(`no store ${only} (known: ${all.map(name).join(', ') || 'none'})`)
  return found
}

/**
 * The rollups an ops command works on: the config module's tracked ones, else every rollup the
 * database recorded as tracked; `only` keeps the one whose table it names.
 *
 * ### Examples
 * ```ts
 * const rollups = await opsRollups(db, config)
 * ```
 */
export async function opsRollups(db: Database, config: PgscaleConfig, only?: string): Promise<MonthlyRollup[]> {
  const all = config.rollups
    ? configRollups(config)
        .filter((r) => r.track)
        .map((r) => r.rollup)
    : await MonthlyRollup.tracked(db)
  if (only === undefined) return all
  const found = all.filter((r) => r.parts.target.name === only)
  if (!found.length)
    throw new InvalidArgumentError(`no tracked rollup ${only} (known: ${all.map((r) => r.parts.target.name).join(', ') || 'none'})`)
  return found
}

/**
 * Opens each store read-only as to its schema (`migrate: false`: an ops command never creates a
 * store), runs `work`, and closes it.
 *
 * ### Examples
 * ```ts
 * await withStores(db, configs, async (store) => console.log((await store.stats()).rows))
 * ```
 */
export async function withStores(
  db: Database,
  configs: readonly PgVectorStoreConfig[],
  work: (store: PgVectorStore) => Promise<void>,
): Promise<void> {
  for (const config of configs) {
    const store = await PgVectorStore.open(db, { ...config, migrate: false, querySample: false })
    try {
      await work(store)
    } finally {
      await store.close()
    }
  }
}
