import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import { InvalidArgumentError } from '../errors.js'
import type { MonthlyRollup } from '../rollup/index.js'
import type { EmbedTexts, OptimizeOptions, PgVectorStoreConfig } from '../store/index.js'

/** A rollup the ops CLI keeps: tracked (the default) or refreshed by the app itself. */
export type OpsRollup = MonthlyRollup | { rollup: MonthlyRollup; track?: boolean }

/**
 * What `pgscale` works on, declared in the app's code: a module whose default export is this
 * (`pgscale.config.mjs`, or `.ts` run through tsx). Without one, `optimize`, `recall`, `doctor` and
 * `drain` find the stores and tracked rollups the database has recorded.
 *
 * ### Examples
 * ```ts
 * export default defineConfig({ runtimeRole: 'app', stores: [{ table: 'rag_chunks', dimensions: 384 }], rollups: [expensesRollup] })
 * ```
 */
export interface PgscaleConfig {
  /** The app's runtime role: `migrate` grants it DML on what it creates. */
  runtimeRole?: string
  /** The stores, as `PgVectorStore.open` takes them. */
  stores?: PgVectorStoreConfig[]
  /** The rollups; `migrate` creates their tables and tracks them (unless `track: false`). */
  rollups?: OpsRollup[]
  /** Options of `pgscale optimize` (tiers, tuning target). */
  optimize?: OptimizeOptions
  /**
   * The embedding function of each embedding space (by space name), for `pgscale migrate-model`:
   * the backfill calls it for the space it fills (`(texts) => Promise<number[][]>`).
   */
  embed?: Record<string, EmbedTexts>
}

/**
 * Identity, typed: what a config module exports.
 *
 * ### Examples
 * ```ts
 * export default defineConfig({ stores: [{ dimensions: 384 }] })
 * ```
 */
export function defineConfig(config: PgscaleConfig): PgscaleConfig {
  return config
}

/** The rollups of a config with whether each is tracked. */
export function configRollups(config: PgscaleConfig): Array<{ rollup: MonthlyRollup; track: boolean }> {
  return (config.rollups ?? []).map((r) => ('rollup' in r ? { rollup: r.rollup, track: r.track !== false } : { rollup: r, track: true }))
}

/**
 * Loads a config module: `.js`/`.mjs` directly, `.ts`/`.mts` through tsx when it is installed
 * (`npm install -D tsx`). A module without a default export of the right shape is a typed error.
 *
 * ### Examples
 * ```ts
 * const config = await loadConfig('pgscale.config.mjs')
 * ```
 */
export async function loadConfig(path: string): Promise<PgscaleConfig> {
  const file = resolve(path)
  if (/\.m?ts$/.test(file)) {
    // A variable specifier: tsx is the app's optional tool, not a dependency of pgscale.
    const tsxApi = 'tsx/esm/api'
    const tsx = (await import(tsxApi).catch(() => undefined)) as { register?: () => unknown } | undefined
    if (!tsx?.register)
      throw new InvalidArgumentError(`${path}: a TypeScript config module needs tsx (npm install -D tsx), or write it as .mjs`)
    tsx.register()
  }
  const loaded = (await import(pathToFileURL(file).href)) as { default?: unknown }
  const config = loaded.default
  if (config === null || typeof config !== 'object' || Array.isArray(config))
    throw new InvalidArgumentError(`${path}: the default export must be a pgscale config ({ stores, rollups, runtimeRole })`)
  const c = config as PgscaleConfig
  if (c.stores !== undefined && !Array.isArray(c.stores)) throw new InvalidArgumentError(`${path}: stores must be an array`)
  if (c.rollups !== undefined && !Array.isArray(c.rollups)) throw new InvalidArgumentError(`${path}: rollups must be an array`)
  return c
}
