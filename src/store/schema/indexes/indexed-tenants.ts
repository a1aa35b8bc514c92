import type { Database } from '../../../db/database.js'
import { type ResolvedStoreConfig, storeIndexNames, tenantIndexName } from '../../config/index.js'
import { hnswIndexNames } from '../store-catalog.js'

/**
 * Which tenants an HNSW index can serve, cached for a few seconds: under quantization the search
 * statement orders its candidates by the quantized distance (halfvec, or Hamming on bits), which is
 * only worth it through an index — a tenant no index serves (no index of its own, no shared one) is
 * answered by the exact statement instead, or it would re-rank the quantized-nearest rows, not the
 * nearest. Refreshed after
 * this store builds or drops indexes, and every `ttlMs` for indexes other processes build.
 *
 * ### Examples
 * ```ts
 * if (!(await indexed.servesByIndex('acme'))) return exactSearch(...)
 * ```
 */
export class IndexedTenants {
  readonly #db: Database
  readonly #config: ResolvedStoreConfig
  readonly #ttlMs: number
  #names: Promise<Set<string>> | undefined
  #at = 0

  constructor(db: Database, config: ResolvedStoreConfig, ttlMs = 10_000) {
    this.#db = db
    this.#config = config
    this.#ttlMs = ttlMs
  }

  /** Whether the tenant's own index or the shared index exists; read again through `via` when stale (a tenant handle in the app's transaction passes its own, as `DeclaredFields.get`). */
  async servesByIndex(tenantId: string, via: Database = this.#db): Promise<boolean> {
    if (!this.#names || performance.now() - this.#at > this.#ttlMs) {
      this.#at = performance.now()
      this.#names = hnswIndexNames(via, this.#config).then((names) => new Set(names))
      this.#names.catch(() => (this.#names = undefined))
    }
    const names = await this.#names
    return names.has(tenantIndexName(this.#config.table, tenantId)) || names.has(storeIndexNames(this.#config.table).sharedHnsw)
  }

  /** Forgets what it knew (after this store built or dropped an index). */
  invalidate(): void {
    this.#names = undefined
  }
}
