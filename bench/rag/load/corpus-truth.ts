/** A returned row the verifier found wrong, and why. */
export interface WrongRow {
  caller: string
  documentId: string
  owner: unknown
  why: 'other tenant' | 'unknown document' | 'deleted document' | 'stale version' | 'outside the ACL filter'
  /** For a row older than a finished write: its version and the write's (`v0 < v3`). */
  versions?: string
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
  /** Per document slot: writes begun (high bits, from bit 16) and writes in flight (low 16 bits), one word (BigInt64). */
  writes: SharedArrayBuffer
  /** Per document slot: 1 while it exists (Int32). */
  exists: SharedArrayBuffer
  /** Per document slot: when its last successful write finished, µs stamp (BigInt64). */
  changedAt: SharedArrayBuffer
  /** Per document slot: when its last write that ran alone finished, µs stamp (BigInt64). */
  floorAt: SharedArrayBuffer
  /** Per document slot: that write's version, negative for a delete, 0 for none (Int32). */
  floorVersion: SharedArrayBuffer
  /** The last stamp handed out (µs, BigInt64 × 1): stamps only grow, across threads. */
  lastStamp: SharedArrayBuffer
}

interface SlotState {
  writes: BigInt64Array
  exists: Int32Array
  changedAt: BigInt64Array
  floorAt: BigInt64Array
  floorVersion: Int32Array
  lastStamp: BigInt64Array
}

/** A write as {@link CorpusTruth.begin} started it: its version of the document, and whether no other write of it was in flight. */
export interface WriteTicket {
  /** 1, 2, … per document, in the order writes began; the rows it writes carry it as `metadata.v`. */
  version: number
  /** No other write of the document was in flight when it began. */
  alone: boolean
}

const IN_FLIGHT = 0xffffn
const BEGUN = 1n << 16n

/**
 * What every tenant holds while the load runs: the bench records each document it seeds, and each
 * replace and delete as it starts and ends, so a search answer can be checked row by row. Every
 * row the bench writes carries `metadata.owner` = its tenant, and the version of the write that
 * made it (`metadata.v`: 0 when seeded, then the write's {@link WriteTicket.version}). The
 * documents' state lives in shared memory once seeding ends: `share()` hands it to worker threads
 * (`CorpusTruth.attach`), whose writes and checks then see each other's (atomically: a writer
 * finishes a write by decrementing its in-flight count last, a checker reads it first).
 *
 * Times are {@link truthClock} milliseconds, made into stamps that only grow across threads (a
 * Lamport clock over it: a read's start, `now()`, and a write's end each take a stamp at least
 * the last one). So "this write ended before that read started" is an order between two atomic
 * operations, not two threads' clocks: whatever a writer published before its end — a replica
 * consistency token — a reader that started after it sees.
 *
 * ### Examples
 * ```ts
 * const truth = new CorpusTruth()
 * truth.seed('acme', 'doc-1')
 * truth.check('acme', [{ documentId: 'doc-1', metadata: { owner: 'acme' } }], truth.now()) // []
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
    truth.#state = viewsOf(shared)
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

  /**
   * A read starts: its stamp ({@link truthClock} ms, at least every stamp handed out before).
   * Take it before anything the read depends on (its consistency token), and check its rows with it.
   */
  now(): number {
    const last = this.#sealed().lastStamp
    for (;;) {
      const seen = Atomics.load(last, 0)
      const clock = BigInt(Math.round(truthClock() * 1000))
      if (clock <= seen) return Number(seen) / 1000
      if (Atomics.compareExchange(last, 0, seen, clock) === seen) return Number(clock) / 1000
    }
  }

  /** A write of `documentId` starts: its version, and whether it is the only write of the document in flight. */
  begin(tenantId: string, documentId: string): WriteTicket {
    const before = Atomics.add(this.#sealed().writes, this.#slot(tenantId, documentId), BEGUN + 1n)
    return { version: Number(before >> 16n) + 1, alone: (before & IN_FLIGHT) === 0n }
  }

  /**
   * A write ends; when it succeeded the document now exists (`replace`) or not (`delete`). With its
   * `ticket`, a write that ran alone (none of the document's began before it ended, none was in
   * flight when it began) becomes the document's floor: it committed after every earlier write of
   * the document and before every later one, so a read that starts after it must not see an older
   * version.
   */
  end(tenantId: string, documentId: string, kind: 'replace' | 'delete', succeeded: boolean, ticket?: WriteTicket): void {
    const state = this.#sealed()
    const slot = this.#slot(tenantId, documentId)
    if (succeeded) {
      const stamp = this.#stamp()
      Atomics.store(state.changedAt, slot, stamp)
      Atomics.store(state.exists, slot, kind === 'replace' ? 1 : 0)
      if (ticket?.alone && Number(Atomics.load(state.writes, slot) >> 16n) === ticket.version) {
        Atomics.store(state.floorAt, slot, stamp)
        Atomics.store(state.floorVersion, slot, kind === 'delete' ? -ticket.version : ticket.version)
      }
    }
    Atomics.sub(state.writes, slot, 1n)
  }

  /**
   * The wrong rows of one answer to `caller`, for a read that started at `startedAt` (`now()`,
   * or any {@link truthClock} time): a row of another tenant, of a document the caller never had;
   * a row older than a write of its document that ended before the read started (`metadata.v`
   * below that write's version: a stale read, or a deleted document's row); for a row without a
   * version, a document deleted before the read started (and not being written since); under an
   * ACL filter, a row outside the allowed groups.
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
      const meta = row.metadata as { owner?: unknown; acl?: unknown; v?: unknown } | undefined
      const owner = meta?.owner
      const slot = docs?.get(row.documentId)
      const at = (why: WrongRow['why'], versions?: string) =>
        wrong.push({ caller, documentId: row.documentId, owner, why, ...(versions ? { versions } : {}) })
      if (owner !== caller) at('other tenant')
      else if (slot === undefined) at('unknown document')
      else {
        const stale = typeof meta?.v === 'number' ? staleness(state, slot, meta.v, startedAt) : deletedBefore(state, slot, startedAt)
        if (stale) at(stale.why, stale.versions)
        else if (aclGroups && !aclGroups.has(String(meta?.acl))) at('outside the ACL filter')
      }
    }
    return wrong
  }

  /** A write's end stamp: its clock, and more than every stamp handed out before. */
  #stamp(): bigint {
    const last = this.#sealed().lastStamp
    for (;;) {
      const seen = Atomics.load(last, 0)
      const clock = BigInt(Math.round(truthClock() * 1000))
      const stamp = clock > seen ? clock : seen + 1n
      if (Atomics.compareExchange(last, 0, seen, stamp) === seen) return stamp
    }
  }

  #sealed(): SlotState {
    if (!this.#state) {
      const n = this.#count
      const shared: SharedTruth = {
        tenants: [...this.#ids.entries()],
        writes: new SharedArrayBuffer(8 * n),
        exists: new SharedArrayBuffer(4 * n),
        changedAt: new SharedArrayBuffer(8 * n),
        floorAt: new SharedArrayBuffer(8 * n),
        floorVersion: new SharedArrayBuffer(4 * n),
        lastStamp: new SharedArrayBuffer(8),
      }
      this.#shared = shared
      this.#state = viewsOf(shared)
      this.#state.exists.fill(1)
    }
    return this.#state
  }

  #slot(tenantId: string, documentId: string): number {
    const slot = this.#slots.get(tenantId)?.get(documentId)
    if (slot === undefined) throw new Error(`the bench wrote ${tenantId}/${documentId}, which it never seeded`)
    return slot
  }
}

function viewsOf(shared: SharedTruth): SlotState {
  return {
    writes: new BigInt64Array(shared.writes),
    exists: new Int32Array(shared.exists),
    changedAt: new BigInt64Array(shared.changedAt),
    floorAt: new BigInt64Array(shared.floorAt),
    floorVersion: new Int32Array(shared.floorVersion),
    lastStamp: new BigInt64Array(shared.lastStamp),
  }
}

/** A row without a version: wrong when its document was deleted before the read started and nothing writes it now. */
function deletedBefore(state: SlotState, slot: number, startedAt: number): { why: WrongRow['why']; versions?: string } | undefined {
  const idle = (Atomics.load(state.writes, slot) & IN_FLIGHT) === 0n
  return idle && Atomics.load(state.exists, slot) === 0 && Number(Atomics.load(state.changedAt, slot)) / 1000 < startedAt
    ? { why: 'deleted document' }
    : undefined
}

/**
 * A row of version `v`: wrong when a write of its document that ran alone ended before the read
 * started with a later version (the version is read before the stamp: a writer stores the stamp
 * first, so a version never pairs with an older write's stamp).
 */
function staleness(state: SlotState, slot: number, v: number, startedAt: number): { why: WrongRow['why']; versions: string } | undefined {
  const floor = Atomics.load(state.floorVersion, slot)
  if (floor === 0 || Number(Atomics.load(state.floorAt, slot)) / 1000 >= startedAt) return undefined
  if (v >= Math.abs(floor)) return undefined
  return floor < 0
    ? { why: 'deleted document', versions: `v${v}, deleted by write v${-floor}` }
    : { why: 'stale version', versions: `v${v} < v${floor}` }
}
