import { sql, type Kysely } from 'kysely'
import { Database } from '../db/database.js'
import { ReplicaSet, tenantKey, type TenantKey } from './replica-set.js'

/**
 * The one place every committed write of a store or a rollup passes through, and what it records
 * for the features that need to know of writes: today the replica sets' read-your-writes (the
 * primary's position after the commit, per tenant; tokens are the maximum over every write).
 * A write through the app's transaction is noted as pending (its transaction id) until the
 * primary says it committed — pgscale never sees that commit, so it asks (`pg_xact_status`) at the
 * tenant's next read or token, and sends that tenant's reads to the primary until then.
 * Without replicas it does nothing and sends nothing.
 *
 * ### Examples
 * ```ts
 * const journal = new WriteJournal([replicas])
 * await journal.committed(['acme'], db) // after a write on db committed (or inside the app's transaction)
 * ```
 */
export class WriteJournal {
  readonly #sets: readonly ReplicaSet[]

  constructor(sets: readonly ReplicaSet[]) {
    this.#sets = sets
  }

  /**
   * The journal of writes made on `handle`: the sets given (a store's, a rollup's `replicas`)
   * and every set made with `handle` as its primary.
   *
   * ### Examples
   * ```ts
   * await WriteJournal.of(db, rollupReplicas).committed([42], db)
   * ```
   */
  static of(handle: unknown, ...given: Array<ReplicaSet | undefined>): WriteJournal {
    const sets = new Set([...given.filter((s): s is ReplicaSet => s !== undefined), ...ReplicaSet.ofPrimary(handle)])
    return sets.size === 0 ? NO_JOURNAL : new WriteJournal([...sets])
  }

  /** Whether any feature listens (else recording sends nothing). */
  get active(): boolean {
    return this.#sets.length > 0
  }

  /**
   * Records that `tenants` were written by a statement on `via` that has committed — or, when
   * `via` is the app's open transaction, that will commit with it.
   *
   * ### Examples
   * ```ts
   * await journal.committed([row.tenantId], db)
   * ```
   */
  async committed(tenants: Iterable<TenantKey>, via: Kysely<any>): Promise<void> {
    if (this.#sets.length === 0) return
    const keys = [...new Set([...tenants].map(tenantKey))]
    if (keys.length === 0) return
    if (inAppTransaction(via)) {
      const { rows } = await sql<{ xid: string }>`select pg_current_xact_id()::text as xid`.execute(via)
      for (const set of this.#sets) set.notePendingWrites(keys, rows[0]!.xid)
      return
    }
    await Promise.all(this.#sets.map((set) => set.noteWrites(keys)))
  }
}

const NO_JOURNAL = new WriteJournal([])

/** Whether statements on `db` run in a transaction pgscale does not commit: a Kysely `Transaction`, or a handle joined to the app's. */
function inAppTransaction(db: Kysely<any>): boolean {
  return db.isTransaction || (db instanceof Database && db.joinsAppTransaction)
}
