import { fromToken, toToken, type PgVectorStore } from '../../../../src/index.js'
import type { LoadConsistency } from '../load-step.js'

/**
 * Per tenant, the WAL position of its latest write anywhere in the load, in shared memory: what
 * an app carries across its processes as a consistency token (a session cookie, a header), here
 * across the load's worker threads. A write raises its tenant's slot (never lowers it: a
 * compare-and-swap loop keeps the largest); a read carries the slot as its `consistencyToken`.
 *
 * ### Examples
 * ```ts
 * const positions = new SharedPositions(tenants.map((t) => t.id))
 * const inWorker = SharedPositions.attach(positions.share())
 * inWorker.publish('acme', 0x16b374d848n)
 * inWorker.token('acme') // 'pgscale:wal:16/B374D848'
 * ```
 */
export class SharedPositions {
  readonly #index: Map<string, number>
  readonly #slots: BigInt64Array
  readonly #shared: SharedWalPositions

  constructor(tenantIds: readonly string[], buffer = new SharedArrayBuffer(8 * tenantIds.length)) {
    this.#index = new Map(tenantIds.map((id, i) => [id, i]))
    this.#slots = new BigInt64Array(buffer)
    this.#shared = { tenants: [...tenantIds], slots: buffer }
  }

  /** The positions of another thread, from its `share()`. */
  static attach(shared: SharedWalPositions): SharedPositions {
    return new SharedPositions(shared.tenants, shared.slots)
  }

  /** What a worker thread attaches to. */
  share(): SharedWalPositions {
    return this.#shared
  }

  /** Raises `tenantId`'s position to `lsn` (unless it is past it already). */
  publish(tenantId: string, lsn: bigint): void {
    const i = this.#slot(tenantId)
    for (;;) {
      const known = Atomics.load(this.#slots, i)
      if (lsn <= known || Atomics.compareExchange(this.#slots, i, known, lsn) === known) return
    }
  }

  /** The tenant's latest position as a consistency token, or `undefined` before its first write. */
  token(tenantId: string): string | undefined {
    const lsn = Atomics.load(this.#slots, this.#slot(tenantId))
    return lsn > 0n ? toToken(lsn) : undefined
  }

  /** Tenants with a published position, and the largest one. */
  summary(): { tenants: number; latest: bigint } {
    let tenants = 0
    let latest = 0n
    for (let i = 0; i < this.#slots.length; i++) {
      const lsn = Atomics.load(this.#slots, i)
      if (lsn > 0n) tenants++
      if (lsn > latest) latest = lsn
    }
    return { tenants, latest }
  }

  #slot(tenantId: string): number {
    const i = this.#index.get(tenantId)
    if (i === undefined) throw new Error(`rag-bench load: ${tenantId} has no WAL position slot`)
    return i
  }
}

/** The shared state of {@link SharedPositions}: tenant ids in slot order and the slots (BigInt64). */
export interface SharedWalPositions {
  tenants: string[]
  slots: SharedArrayBuffer
}

/**
 * A load thread's read-your-writes over `positions`: after a write, the store's token for the
 * tenant (the position its replica set noted after the commit: no round trip) is published; a
 * read carries the tenant's latest published position. With `tokens: false` nothing is carried
 * across threads (each thread's set still knows its own writes): what the verifier then catches
 * is what the tokens prevent.
 *
 * ### Examples
 * ```ts
 * const consistency = sharedTokens(store, positions, true)
 * ```
 */
export function sharedTokens(store: PgVectorStore, positions: SharedPositions, tokens: boolean): LoadConsistency {
  if (!tokens) return { readOptions: () => ({}), wrote: async () => {} }
  return {
    readOptions(tenantId) {
      const token = positions.token(tenantId)
      return token ? { consistencyToken: token } : {}
    },
    async wrote(tenantId) {
      const token = await store.consistencyToken(tenantId)
      if (token) positions.publish(tenantId, fromToken(token))
    },
  }
}
