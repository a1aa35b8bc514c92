/** A returned row the verifier found wrong, and why. */
export interface WrongRow {
  caller: string
  documentId: string
  owner: unknown
  why: 'other tenant' | 'unknown document' | 'deleted document' | 'outside the ACL filter'
}

/** The ACL group of a document (`metadata.acl`): one of {@link ACL_GROUPS}, fixed by its id, so a replace keeps it. */
export function aclGroup(documentId: string): string {
  let h = 0
  for (let i = 0; i < documentId.length; i++) h = (Math.imul(h, 31) + documentId.charCodeAt(i)) | 0
  return `g${(h >>> 0) % ACL_GROUPS}`
}

/** How many ACL groups the load corpus's documents fall into. */
export const ACL_GROUPS = 8

/**
 * The clock every write and search of the load is stamped with: milliseconds since the epoch, the
 * same in every worker thread (`performance.now()` counts from each thread's own start).
 */
export function truthClock(): number {
  return performance.timeOrigin + performance.now()
}

/** What a worker thread needs to check answers against the same truth as every other thread. */
export interface SharedTruth {
  /** Every tenant and its documents, in slot order. */
  tenants: Array<[string, string[]]>
  /** Per document slot: writes started and not finished (Int32). */
  inFlight: SharedArrayBuffer
  /** Per document slot: 1 while it exists (Int32). */
  exists: SharedArrayBuffer
  /** Per document slot: when its last successful write finished, µs since the epoch (BigInt64). */
  changedAt: SharedArrayBuffer
}

interface SlotState {
  inFlight: Int32Array
  exists: Int32Array
  changedAt: BigInt64Array
}

/**
 * What every tenant holds while the load runs: the bench records each document it seeds, and each
 * replace and delete as it starts and ends, so a search answer can be checked row by row. Every
 * row the bench writes carries `metadata.owner` = its tenant. The documents' state lives in shared
 * memory once seeding ends: `share()` hands it to worker threads (`CorpusTruth.attach`), whose
 * writes and checks then see each other's (atomically: a writer finishes a write by decrementing
 * `inFlight` last, a checker reads it first). Times are {@link truthClock} milliseconds.
 *
 * ### Examples
 * ```ts
 * const truth = new CorpusTruth()
 * truth.seed('acme', 'doc-1')
 * truth.check('acme', [{ documentId: 'doc-1', metadata: { owner: 'acme' } }], truthClock()) // []
 * const inWorker = CorpusTruth.attach(truth.share())
 * ```
 */
export class CorpusTruth {
  readonly #slots = new Map<string, Map<string, number>>()
  readonly #ids = new Map<string, string[]>()
  #count = 0
  #state: SlotState | undefined
  #shared: SharedTruth | undefined

  /** The truth of another thread, from its `share()`. */
  static attach(shared: SharedTruth): CorpusTruth {
    const truth = new CorpusTruth()
    for (const [tenantId, ids] of shared.tenants) for (const id of ids) truth.seed(tenantId, id)
    truth.#shared = shared
    truth.#state = {
      inFlight: new Int32Array(shared.inFlight),
      exists: new Int32Array(shared.exists),
      changedAt: new BigInt64Array(shared.changedAt),
    }
    return truth
  }

  /** Records a document the corpus seeded (before the first write or check). */
  seed(tenantId: string, documentId: string): void {
    if (this.#state) throw new Error('the truth is sealed: every document is seeded before the load starts')
    let docs = this.#slots.get(tenantId)
    if (!docs) {
      docs = new Map()
      this.#slots.set(tenantId, docs)
      this.#ids.set(tenantId, [])
    }
    if (!docs.has(documentId)) {
      docs.set(documentId, this.#count++)
      this.#ids.get(tenantId)!.push(documentId)
    }
  }

  /** Seals the truth (no more seeding) and returns its shared state for worker threads. */
  share(): SharedTruth {
    this.#sealed()
    return this.#shared!
  }

  /** Every document id the tenant ever held (existing or deleted), to pick writes from. */
  documentIds(tenantId: string): readonly string[] {
    return this.#ids.get(tenantId) ?? []
  }

  /** Tenants with at least one document. */
  tenants(): string[] {
    return [...this.#slots.keys()]
  }

  /** A write of `documentId` starts. */
  begin(tenantId: string, documentId: string): void {
    Atomics.add(this.#sealed().inFlight, this.#slot(tenantId, documentId), 1)
  }

  /** A write ends; when it succeeded the document now exists (`replace`) or not (`delete`). */
  end(tenantId: string, documentId: string, kind: 'replace' | 'delete', succeeded: boolean): void {
    const state = this.#sealed()
    const slot = this.#slot(tenantId, documentId)
    if (succeeded) {
      Atomics.store(state.changedAt, slot, BigInt(Math.round(truthClock() * 1000)))
      Atomics.store(state.exists, slot, kind === 'replace' ? 1 : 0)
    }
    Atomics.sub(state.inFlight, slot, 1)
  }

  /**
   * The wrong rows of one answer to `caller`, for a search that started at `startedAt`
   * ({@link truthClock}): a row of another tenant, of a document the caller never had, or of a
   * document deleted before the search started (and not being written since); under an ACL
   * filter, a row outside the allowed groups.
   */
  check(
    caller: string,
    rows: ReadonlyArray<{ documentId: string; metadata?: unknown }>,
    startedAt: number,
    aclGroups?: ReadonlySet<string>,
  ): WrongRow[] {
    const state = this.#sealed()
    const wrong: WrongRow[] = []
    const docs = this.#slots.get(caller)
    for (const row of rows) {
      const owner = (row.metadata as { owner?: unknown } | undefined)?.owner
      const slot = docs?.get(row.documentId)
      if (owner !== caller) wrong.push({ caller, documentId: row.documentId, owner, why: 'other tenant' })
      else if (slot === undefined) wrong.push({ caller, documentId: row.documentId, owner, why: 'unknown document' })
      else if (
        Atomics.load(state.inFlight, slot) === 0 &&
        Atomics.load(state.exists, slot) === 0 &&
        Number(Atomics.load(state.changedAt, slot)) / 1000 < startedAt
      ) {
        wrong.push({ caller, documentId: row.documentId, owner, why: 'deleted document' })
      } else if (aclGroups && !aclGroups.has(String((row.metadata as { acl?: unknown } | undefined)?.acl))) {
        wrong.push({ caller, documentId: row.documentId, owner, why: 'outside the ACL filter' })
      }
    }
    return wrong
  }

  #sealed(): SlotState {
    if (!this.#state) {
      const shared: SharedTruth = {
        tenants: [...this.#ids.entries()],
        inFlight: new SharedArrayBuffer(4 * this.#count),
        exists: new SharedArrayBuffer(4 * this.#count),
        changedAt: new SharedArrayBuffer(8 * this.#count),
      }
      const exists = new Int32Array(shared.exists)
      exists.fill(1)
      this.#shared = shared
      this.#state = { inFlight: new Int32Array(shared.inFlight), exists, changedAt: new BigInt64Array(shared.changedAt) }
    }
    return this.#state
  }

  #slot(tenantId: string, documentId: string): number {
    const slot = this.#slots.get(tenantId)?.get(documentId)
    if (slot === undefined) throw new Error(`the bench wrote ${tenantId}/${documentId}, which it never seeded`)
    return slot
  }
}
