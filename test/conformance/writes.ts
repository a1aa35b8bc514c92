import fc from 'fast-check'
import type { Kysely } from 'kysely'
import type { Database, MetadataFilter, MonthlyRollup, PgVectorStore, ReplicaSet, TenantStore } from '../../src/index.js'
import { matchesFilter } from '../../src/index.js'
import { DIM, DOCS, docsOf, TENANTS, type Chunk, type Model } from './model.js'

/**
 * The write operations of the harness: each knows what it does to the model (and so what the call
 * must resolve to, or that the server must refuse it) and how to run it through the public API.
 * Commands wrap them: plainly, in an app's transaction, with a poisoned row, or with its backend
 * killed mid-write.
 */

/** What an operation's model step says when the server must refuse it (nothing written). */
export const REFUSED = Symbol('refused')

export interface WriteOp {
  /** The public method (the name in `KNOWN_FAILING` and in a mode's command list). */
  readonly kind: string
  /** The tenants whose rows it writes. */
  readonly tenants: readonly string[]
  /** Runs on the store, not a tenant handle (cannot join an app's transaction). */
  readonly storeLevel?: boolean
  /** Applies it to the model; resolves to what the call must return, or REFUSED. */
  apply(m: Model): unknown
  /** Runs it; the result normalised to compare with `apply`'s. */
  exec(tenant: TenantStore, store: PgVectorStore): Promise<unknown>
  /** The same write with one more row whose content the test trigger refuses (undefined: no row to add). */
  poisoned?(): WriteOp
  toString(): string
}

/** The content the test trigger `conf_poison` refuses: a statement failing mid-write. */
export const POISON = 'poison'

const show = (v: unknown) => JSON.stringify(v)
const vec = (e: readonly number[]) => `[${e.join(',')}]`

// ---- arbitraries of values ----

/** A small non-zero integer vector (exact in float4; ties are frequent, on purpose). */
export const embeddingArb = fc
  .array(fc.integer({ min: -2, max: 2 }), { minLength: DIM, maxLength: DIM })
  .filter((v) => v.some((x) => x !== 0))
export const tenantArb = fc.constantFrom(...TENANTS)
export const docArb = fc.constantFrom(...DOCS)
export const metadataArb: fc.Arbitrary<Record<string, unknown>> = fc.record(
  {
    kind: fc.constantFrom('a', 'b', 'c'),
    n: fc.integer({ min: 0, max: 3 }),
    tags: fc.subarray(['x', 'y']),
    flag: fc.boolean(),
  },
  { requiredKeys: ['kind'] },
)
/** A handful of MongoDB-style filters (never `{}`: deleteWhere refuses it). */
export const filterArb: fc.Arbitrary<MetadataFilter> = fc.constantFrom<MetadataFilter>(
  { kind: 'a' },
  { kind: { $in: ['a', 'b'] } },
  { n: { $gte: 2 } },
  { $or: [{ kind: 'c' }, { n: 0 }] },
  { flag: true },
  { tags: 'x' },
  { n: { $exists: false } },
  { kind: { $ne: 'b' }, n: { $lt: 2 } },
)
const words = ['alpha', 'beta', 'gamma', 'delta']
export const contentArb = fc.tuple(fc.constantFrom(...words), fc.constantFrom(...words)).map(([a, b]) => `${a} ${b}`)
const chunkArb: fc.Arbitrary<Chunk> = fc.record({ content: contentArb, metadata: metadataArb, embedding: embeddingArb })

// ---- the operations ----

class ReplaceDocument implements WriteOp {
  readonly kind = 'replaceDocument'
  constructor(
    readonly tenant: string,
    readonly doc: string,
    readonly chunks: Chunk[],
  ) {}
  get tenants() {
    return [this.tenant]
  }
  apply(m: Model) {
    const docs = docsOf(m, this.tenant)
    const old = docs.get(this.doc) ?? new Map<number, Chunk>()
    const removed = [...old.keys()].filter((i) => i >= this.chunks.length).length
    if (this.chunks.length === 0) docs.delete(this.doc)
    else docs.set(this.doc, new Map(this.chunks.map((c, i) => [i, structuredClone(c)])))
    return { written: this.chunks.length, removed }
  }
  exec(t: TenantStore) {
    return t.replaceDocument(this.doc, this.chunks)
  }
  poisoned() {
    return new ReplaceDocument(this.tenant, this.doc, [...this.chunks, { content: POISON, metadata: {}, embedding: [1, 0, 0, 0] }])
  }
  toString() {
    return `${this.tenant}.replaceDocument(${show(this.doc)}, ${this.chunks.map((c) => `${show(c.content)}${vec(c.embedding)}${show(c.metadata)}`).join(' ')})`
  }
}

class DeleteDocument implements WriteOp {
  readonly kind = 'deleteDocument'
  constructor(
    readonly tenant: string,
    readonly doc: string,
  ) {}
  get tenants() {
    return [this.tenant]
  }
  apply(m: Model) {
    const docs = docsOf(m, this.tenant)
    const n = docs.get(this.doc)?.size ?? 0
    docs.delete(this.doc)
    return n
  }
  exec(t: TenantStore) {
    return t.deleteDocument(this.doc)
  }
  toString() {
    return `${this.tenant}.deleteDocument(${show(this.doc)})`
  }
}

interface UpsertRow extends Chunk {
  id: string
}

class UpsertChunks implements WriteOp {
  readonly kind: 'upsertChunks' | 'bulkUpsert' = 'upsertChunks'
  constructor(
    readonly tenant: string,
    readonly rows: UpsertRow[],
    readonly deleteWhere?: MetadataFilter,
  ) {}
  get tenants() {
    return [this.tenant]
  }
  apply(m: Model) {
    const docs = docsOf(m, this.tenant)
    if (this.deleteWhere) deleteMatching(docs, this.deleteWhere)
    const ids: string[] = []
    for (const r of this.rows) if (!ids.includes(r.id)) ids.push(r.id)
    for (const id of ids) {
      const last = this.rows.filter((r) => r.id === id).at(-1)!
      docs.set(id, new Map([[0, { content: last.content, metadata: structuredClone(last.metadata), embedding: [...last.embedding] }]]))
    }
    return ids
  }
  exec(t: TenantStore) {
    const options = this.deleteWhere ? { deleteWhere: this.deleteWhere } : {}
    return this.kind === 'bulkUpsert' ? t.bulkUpsert(this.rows, options) : t.upsertChunks(this.rows, options)
  }
  poisoned() {
    return new (this.constructor as typeof UpsertChunks)(
      this.tenant,
      [...this.rows, { id: 'px', content: POISON, metadata: {}, embedding: [0, 1, 0, 0] }],
      this.deleteWhere,
    )
  }
  toString() {
    const rows = this.rows.map((r) => `${r.id}:${show(r.content)}${vec(r.embedding)}${show(r.metadata)}`).join(' ')
    return `${this.tenant}.${this.kind}(${rows}${this.deleteWhere ? `, deleteWhere ${show(this.deleteWhere)}` : ''})`
  }
}

/** `bulkUpsert`: `upsertChunks`' rows and model through binary COPY. */
class BulkUpsert extends UpsertChunks {
  override readonly kind = 'bulkUpsert'
}

function deleteMatching(docs: Map<string, Map<number, Chunk>>, filter: MetadataFilter): number {
  let n = 0
  for (const [id, doc] of docs) {
    for (const [i, c] of doc)
      if (matchesFilter(c.metadata, filter)) {
        doc.delete(i)
        n++
      }
    if (doc.size === 0) docs.delete(id)
  }
  return n
}

class UpdateMetadata implements WriteOp {
  readonly kind = 'updateMetadata'
  constructor(
    readonly tenant: string,
    readonly target: { ids: string[] } | { filter: MetadataFilter },
    readonly metadata: Record<string, unknown>,
    readonly mode: 'replace' | 'merge',
    readonly embedding?: number[],
  ) {}
  get tenants() {
    return [this.tenant]
  }
  apply(m: Model) {
    const docs = docsOf(m, this.tenant)
    let n = 0
    for (const [id, doc] of docs)
      for (const c of doc.values()) {
        const hit = 'ids' in this.target ? this.target.ids.includes(id) : matchesFilter(c.metadata, this.target.filter)
        if (!hit) continue
        n++
        c.metadata = this.mode === 'merge' ? { ...c.metadata, ...structuredClone(this.metadata) } : structuredClone(this.metadata)
        if (this.embedding) c.embedding = [...this.embedding]
      }
    return n
  }
  exec(t: TenantStore) {
    return t.updateMetadata(this.target, {
      metadata: this.metadata,
      mode: this.mode,
      ...(this.embedding ? { embedding: this.embedding } : {}),
    })
  }
  toString() {
    return `${this.tenant}.updateMetadata(${show(this.target)}, ${this.mode} ${show(this.metadata)}${this.embedding ? ` embedding ${vec(this.embedding)}` : ''})`
  }
}

class DeleteWhere implements WriteOp {
  readonly kind = 'deleteWhere'
  constructor(
    readonly tenant: string,
    readonly filter: MetadataFilter,
  ) {}
  get tenants() {
    return [this.tenant]
  }
  apply(m: Model) {
    return deleteMatching(docsOf(m, this.tenant), this.filter)
  }
  exec(t: TenantStore) {
    return t.deleteWhere(this.filter)
  }
  toString() {
    return `${this.tenant}.deleteWhere(${show(this.filter)})`
  }
}

interface LoadRow extends Chunk {
  tenantId: string
  documentId: string
  chunkIndex: number
}

/** `forTenant(t).bulkIngest` (one tenant) or `store.bulkIngest` (rows of several tenants). */
export class BulkIngest implements WriteOp {
  constructor(
    readonly kind: 'tenant.bulkIngest' | 'store.bulkIngest',
    readonly rows: LoadRow[],
  ) {}
  get storeLevel() {
    return this.kind === 'store.bulkIngest'
  }
  get tenants() {
    return [...new Set(this.rows.map((r) => r.tenantId))]
  }
  apply(m: Model) {
    const keys = this.rows.map((r) => `${r.tenantId}|${r.documentId}|${r.chunkIndex}`)
    const clash = this.rows.some((r) => m.chunks.get(r.tenantId)?.get(r.documentId)?.has(r.chunkIndex))
    if (clash || new Set(keys).size !== keys.length) return REFUSED // the primary key: all or nothing
    for (const r of this.rows) {
      const docs = docsOf(m, r.tenantId)
      const doc = docs.get(r.documentId) ?? new Map<number, Chunk>()
      doc.set(r.chunkIndex, { content: r.content, metadata: structuredClone(r.metadata), embedding: [...r.embedding] })
      docs.set(r.documentId, doc)
    }
    return this.rows.length
  }
  async exec(t: TenantStore, store: PgVectorStore) {
    if (this.kind === 'store.bulkIngest') return (await store.bulkIngest(this.rows)).rows
    return (await t.bulkIngest(this.rows.map(({ tenantId: _t, ...r }) => r))).rows
  }
  poisoned() {
    const tenantId = this.rows[0]!.tenantId
    return new BulkIngest(this.kind, [
      ...this.rows,
      { tenantId, documentId: 'px', chunkIndex: 9, content: POISON, metadata: {}, embedding: [0, 0, 1, 0] },
    ])
  }
  toString() {
    const rows = this.rows.map(
      (r) => `${r.tenantId}/${r.documentId}#${r.chunkIndex}:${show(r.content)}${vec(r.embedding)}${show(r.metadata)}`,
    )
    return `${this.kind === 'store.bulkIngest' ? 'store' : `${this.rows[0]!.tenantId}`}.bulkIngest(${rows.join(' ')})`
  }
}

// ---- arbitraries of operations ----

const loadRowArb = (tenant: fc.Arbitrary<string>) =>
  fc.record({
    tenantId: tenant,
    documentId: docArb,
    chunkIndex: fc.integer({ min: 0, max: 5 }),
    content: contentArb,
    metadata: metadataArb,
    embedding: embeddingArb,
  })

/** Every write operation, by kind. */
export const WRITE_OPS: Record<string, fc.Arbitrary<WriteOp>> = {
  replaceDocument: fc.tuple(tenantArb, docArb, fc.array(chunkArb, { maxLength: 3 })).map(([t, d, cs]) => new ReplaceDocument(t, d, cs)),
  deleteDocument: fc.tuple(tenantArb, docArb).map(([t, d]) => new DeleteDocument(t, d)),
  upsertChunks: fc
    .tuple(
      tenantArb,
      fc.array(fc.record({ id: docArb, content: contentArb, metadata: metadataArb, embedding: embeddingArb }), {
        minLength: 1,
        maxLength: 3,
      }),
      fc.option(filterArb, { freq: 4, nil: undefined }),
    )
    .map(([t, rows, dw]) => new UpsertChunks(t, rows, dw)),
  bulkUpsert: fc
    .tuple(
      tenantArb,
      fc.array(fc.record({ id: docArb, content: contentArb, metadata: metadataArb, embedding: embeddingArb }), {
        minLength: 1,
        maxLength: 3,
      }),
      fc.option(filterArb, { freq: 4, nil: undefined }),
    )
    .map(([t, rows, dw]) => new BulkUpsert(t, rows, dw)),
  updateMetadata: fc
    .tuple(
      tenantArb,
      fc.oneof(
        fc.uniqueArray(docArb, { minLength: 1, maxLength: 2 }).map((ids) => ({ ids })),
        filterArb.map((filter) => ({ filter })),
      ),
      metadataArb,
      fc.constantFrom<'replace' | 'merge'>('replace', 'merge'),
      fc.option(embeddingArb, { freq: 3, nil: undefined }),
    )
    .map(([t, target, md, mode, e]) => new UpdateMetadata(t, target, md, mode, e)),
  deleteWhere: fc.tuple(tenantArb, filterArb).map(([t, f]) => new DeleteWhere(t, f)),
  'tenant.bulkIngest': tenantArb.chain((t) =>
    fc.array(loadRowArb(fc.constant(t)), { minLength: 1, maxLength: 3 }).map((rows) => new BulkIngest('tenant.bulkIngest', rows)),
  ),
  'store.bulkIngest': fc
    .array(loadRowArb(tenantArb), { minLength: 1, maxLength: 4 })
    .map((rows) => new BulkIngest('store.bulkIngest', rows)),
}

// ---- the real side ----

/** A command of the harness: `kind` names it in a mode's list and in `KNOWN_FAILING`; `toString()` is what a failure prints. */
export type Cmd = fc.AsyncCommand<Model, World> & { readonly kind: string }

/**
 * The real side of the harness, as one mode opened it: the store and the rollup, how a write is
 * made (directly, inside an app's transaction), where reads go, and what the mode can do besides
 * (pause a standby's replay, read raw SQL as the runtime role, kill a backend).
 */
export interface World {
  readonly mode: string
  readonly store: PgVectorStore
  readonly rollup: MonthlyRollup
  /** A tenant handle for reads (through the replicas where the mode has them). */
  reader(tenant: string): TenantStore
  /** Runs a write the mode's way; resolves to what the operation resolves to. */
  write(op: WriteOp): Promise<unknown>
  /** Where the rollup's writes (refreshAt, refreshDirty) run. */
  readonly rollupDb: Kysely<any>
  /** Where the rollup's reads go (a ReplicaSet in the replicas mode). */
  readonly rollupReader: Kysely<any> | ReplicaSet
  /** The app's own SQL on the rollup's source (as the runtime role with its tenant set, under rls). */
  sourceWrite(tenant: string, text: string, params: readonly unknown[]): Promise<void>
  /** The database owner, directly on the server (not through a pooler): resets, locks, kills. */
  readonly admin: Database
  /** Its URL, where the mode has a server (faults need a second connection). */
  readonly adminUrl?: string
  /** Empties every table and waits until reads can see it (standbys replayed it). */
  reset(): Promise<void>
  /** Replay control of the standbys (replicas mode). */
  readonly standbys?: { count: number; pause(i: number): Promise<void>; resume(i: number): Promise<void>; caughtUp(): Promise<void> }
  /** A second process's view: a store on the same primary and standbys, with a ReplicaSet of its own. */
  readonly otherProcess?: PgVectorStore
  /** Raw SQL as the runtime role in one transaction with `pgscale.tenant_id` set to `tenant` (or not set). */
  rawAs?(tenant: string | undefined, text: string, params?: readonly unknown[]): Promise<Array<Record<string, unknown>>>
  /** Runs `work` inside an app transaction of the store's database (transaction commands). */
  inTransaction?<T>(work: (tenant: (id: string) => TenantStore) => Promise<T>): Promise<T>
}
