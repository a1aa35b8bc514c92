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

interface DocumentState {
  exists: boolean
  /** Writes of this document started and not yet finished. */
  inFlight: number
  /** When the last successful write of it finished (performance.now()). */
  changedAt: number
}

/**
 * What every tenant holds while the load runs: the bench records each document it seeds, and each
 * replace and delete as it starts and ends, so a search answer can be checked row by row. Every
 * row the bench writes carries `metadata.owner` = its tenant.
 *
 * ### Examples
 * ```ts
 * const truth = new CorpusTruth()
 * truth.seed('acme', 'doc-1')
 * truth.check('acme', [{ documentId: 'doc-1', metadata: { owner: 'acme' } }], performance.now()) // []
 * ```
 */
export class CorpusTruth {
  readonly #tenants = new Map<string, Map<string, DocumentState>>()
  readonly #ids = new Map<string, string[]>()

  /** Records a document the corpus seeded. */
  seed(tenantId: string, documentId: string): void {
    let docs = this.#tenants.get(tenantId)
    if (!docs) {
      docs = new Map()
      this.#tenants.set(tenantId, docs)
      this.#ids.set(tenantId, [])
    }
    if (!docs.has(documentId)) {
      docs.set(documentId, { exists: true, inFlight: 0, changedAt: 0 })
      this.#ids.get(tenantId)!.push(documentId)
    }
  }

  /** Every document id the tenant ever held (existing or deleted), to pick writes from. */
  documentIds(tenantId: string): readonly string[] {
    return this.#ids.get(tenantId) ?? []
  }

  /** Tenants with at least one document. */
  tenants(): string[] {
    return [...this.#tenants.keys()]
  }

  /** A write of `documentId` starts. */
  begin(tenantId: string, documentId: string): void {
    this.#state(tenantId, documentId).inFlight++
  }

  /** A write ends; when it succeeded the document now exists (`replace`) or not (`delete`). */
  end(tenantId: string, documentId: string, kind: 'replace' | 'delete', succeeded: boolean): void {
    const state = this.#state(tenantId, documentId)
    state.inFlight--
    if (succeeded) {
      state.exists = kind === 'replace'
      state.changedAt = performance.now()
    }
  }

  /**
   * The wrong rows of one answer to `caller`, for a search that started at `startedAt`: a row of
   * another tenant, of a document the caller never had, or of a document deleted before the search
   * started (and not being written since); under an ACL filter, a row outside the allowed groups.
   */
  check(
    caller: string,
    rows: ReadonlyArray<{ documentId: string; metadata?: unknown }>,
    startedAt: number,
    aclGroups?: ReadonlySet<string>,
  ): WrongRow[] {
    const wrong: WrongRow[] = []
    const docs = this.#tenants.get(caller)
    for (const row of rows) {
      const owner = (row.metadata as { owner?: unknown } | undefined)?.owner
      const state = docs?.get(row.documentId)
      if (owner !== caller) wrong.push({ caller, documentId: row.documentId, owner, why: 'other tenant' })
      else if (!state) wrong.push({ caller, documentId: row.documentId, owner, why: 'unknown document' })
      else if (!state.exists && state.inFlight === 0 && state.changedAt < startedAt) {
        wrong.push({ caller, documentId: row.documentId, owner, why: 'deleted document' })
      } else if (aclGroups && !aclGroups.has(String((row.metadata as { acl?: unknown } | undefined)?.acl))) {
        wrong.push({ caller, documentId: row.documentId, owner, why: 'outside the ACL filter' })
      }
    }
    return wrong
  }

  #state(tenantId: string, documentId: string): DocumentState {
    const state = this.#tenants.get(tenantId)?.get(documentId)
    if (!state) throw new Error(`the bench wrote ${tenantId}/${documentId}, which it never seeded`)
    return state
  }
}
