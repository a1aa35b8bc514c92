import fc from 'fast-check'
import pg from 'pg'
import { expect } from 'vitest'
import type { MetadataFilter } from '../../src/index.js'
import {
  assignModel,
  cloneModel,
  DIM,
  DOCS,
  expectExactNearest,
  expectHitsFrom,
  materialize,
  plainRows,
  rowsOf,
  type Model,
} from './model.js'
import { contentArb, embeddingArb, filterArb, REFUSED, tenantArb, WRITE_OPS, type Cmd, type World, type WriteOp } from './writes.js'

/**
 * The commands of the harness (fast-check's `AsyncCommand`s): writes in their wrappers, the reads
 * each checked against the model, and the mode's own (replay paused and resumed, raw SQL as the
 * runtime role, app transactions rolled back). `kind` names a command in a mode's list and in
 * `KNOWN_FAILING`; `toString()` is what a failure prints.
 */

const show = (v: unknown) => JSON.stringify(v)
const vec = (e: readonly number[]) => `[${e.join(',')}]`
const opt = (name: string, v: unknown) => (v === undefined ? '' : `, ${name}=${show(v)}`)

/** The result of a write as the model states it (numbers and ids compare as they are). */
function expectResult(op: WriteOp, got: unknown, want: unknown): void {
  expect(got, `${op}: its result`).toEqual(want)
}

/** A write made the mode's way; its result and every later read must match the model. */
export class WriteCommand implements Cmd {
  constructor(readonly op: WriteOp) {}
  get kind() {
    return this.op.kind
  }
  check = () => true
  async run(m: Model, w: World) {
    const next = cloneModel(m)
    const want = this.op.apply(next)
    if (want === REFUSED) {
      await expect(w.write(this.op), `${this.op}: refused (a row already there), nothing written`).rejects.toThrow()
      return
    }
    expectResult(this.op, await w.write(this.op), want)
    assignModel(m, next)
  }
  toString() {
    return String(this.op)
  }
}

/** A write with one more row that the test trigger refuses (a statement failing mid-write): all of it or nothing. */
export class PoisonedWrite implements Cmd {
  readonly kind = 'poisonedWrite'
  constructor(readonly op: WriteOp) {}
  check = () => true
  async run(_m: Model, w: World) {
    await expect(w.write(this.op), `${this.op}: a poisoned row fails the whole write`).rejects.toThrow()
  }
  toString() {
    return `poisoned ${this.op}`
  }
}

/** A write whose backend is terminated while it waits on its DML, after its first statements (BEGIN, its locks) ran. */
export class KilledWrite implements Cmd {
  readonly kind = 'killedWrite'
  constructor(readonly op: WriteOp) {}
  check = () => true
  async run(_m: Model, w: World) {
    const locker = new pg.Client({ connectionString: w.adminUrl })
    await locker.connect()
    try {
      await locker.query('begin')
      await locker.query('lock table conf_chunks in share mode')
      const outcome = w.write(this.op).then(
        () => 'completed',
        (e: unknown) => e,
      )
      await terminateWaiting(locker)
      await locker.query('rollback')
      expect(await outcome, `${this.op}: its backend was killed; it must fail`).toBeInstanceOf(Error)
    } finally {
      await locker.end()
    }
  }
  toString() {
    return `killed mid-write ${this.op}`
  }
}

/** Terminates the one backend waiting on the locker's table lock. */
async function terminateWaiting(locker: pg.Client): Promise<void> {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    // Inside the locker's transaction pg_stat_activity is a snapshot taken once: clear it each time.
    await locker.query('select pg_stat_clear_snapshot()')
    const { rows } = await locker.query<{ pid: number }>(
      `select pid from pg_stat_activity where pid <> pg_backend_pid() and datname = current_database() and wait_event_type = 'Lock' limit 1`,
    )
    if (rows[0]) {
      await locker.query('select pg_terminate_backend($1::int)', [rows[0].pid])
      return
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error('no backend waited on the table lock within 15 s')
}

/** An app transaction around a write that the app then rolls back: inside, the write is seen; after, nothing changed. */
export class RolledBackWrite implements Cmd {
  readonly kind = 'rolledBackWrite'
  constructor(readonly op: WriteOp) {}
  check = () => !this.op.storeLevel
  async run(m: Model, w: World) {
    const inside = cloneModel(m)
    const want = this.op.apply(inside)
    const tenant = this.op.tenants[0]!
    const rollback = new Error('the app rolls back')
    const err = await w.inTransaction!(async (handle) => {
      const t = handle(tenant)
      if (want === REFUSED) {
        await expect(this.op.exec(t, w.store)).rejects.toThrow()
      } else {
        expectResult(this.op, await this.op.exec(t, w.store), want)
      }
      // Inside the app's transaction, pgscale reads its uncommitted writes (the savepoint either way).
      expect(plainRows((await t.find({ limit: 1000 })).rows), `${this}: read inside the transaction`).toEqual(
        plainRows(rowsOf(want === REFUSED ? m : inside, tenant)),
      )
      throw rollback
    }).catch((e: unknown) => e)
    expect(err).toBe(rollback)
  }
  toString() {
    return `rolled back: ${this.op}`
  }
}

/** A write inside an app transaction that commits (the replicas mode: then read through the replicas). */
export class TransactionWrite implements Cmd {
  readonly kind = 'transactionWrite'
  constructor(readonly op: WriteOp) {}
  check = () => !this.op.storeLevel
  async run(m: Model, w: World) {
    const next = cloneModel(m)
    const want = this.op.apply(next)
    if (want === REFUSED) return
    const got = await w.inTransaction!((handle) => this.op.exec(handle(this.op.tenants[0]!), w.store))
    expectResult(this.op, got, want)
    assignModel(m, next)
  }
  toString() {
    return `in an app transaction: ${this.op}`
  }
}

// ---- reads ----

const kArb = fc.integer({ min: 1, max: 6 })
const filterOpt = fc.option(filterArb, { freq: 2, nil: undefined })

export class Search implements Cmd {
  readonly kind = 'search'
  constructor(
    readonly tenant: string,
    readonly q: number[],
    readonly k: number,
    readonly filter: MetadataFilter | undefined,
    readonly strategy: 'exact' | 'index' | undefined,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    const hits = await w.reader(this.tenant).search(this.q, {
      k: this.k,
      ...(this.filter ? { filter: this.filter } : {}),
      ...(this.strategy ? { filterStrategy: this.strategy } : {}),
    })
    const rows = rowsOf(m, this.tenant, this.filter)
    if (this.filter && this.strategy === 'exact') return expectExactNearest(String(this), hits, rows, this.q, this.k)
    expectHitsFrom(String(this), hits, rows, this.q)
    expect(hits.length, `${this}: never silently fewer than min(k, ${rows.length} matching rows)`).toBe(Math.min(this.k, rows.length))
  }
  toString() {
    return `${this.tenant}.search(${vec(this.q)}, k=${this.k}${opt('filter', this.filter)}${opt('filterStrategy', this.strategy)})`
  }
}

export class ExactSearch implements Cmd {
  readonly kind = 'exactSearch'
  constructor(
    readonly tenant: string,
    readonly q: number[],
    readonly k: number,
    readonly filter: MetadataFilter | undefined,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    const hits = await w.reader(this.tenant).exactSearch(this.q, { k: this.k, ...(this.filter ? { filter: this.filter } : {}) })
    expectExactNearest(String(this), hits, rowsOf(m, this.tenant, this.filter), this.q, this.k)
  }
  toString() {
    return `${this.tenant}.exactSearch(${vec(this.q)}, k=${this.k}${opt('filter', this.filter)})`
  }
}

export class HybridSearch implements Cmd {
  readonly kind = 'hybridSearch'
  constructor(
    readonly tenant: string,
    readonly q: number[],
    readonly text: string,
    readonly k: number,
    readonly filter: MetadataFilter | undefined,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    const hits = await w.reader(this.tenant).hybridSearch({
      embedding: this.q,
      text: this.text,
      k: this.k,
      ...(this.filter ? { filter: this.filter } : {}),
    })
    const rows = rowsOf(m, this.tenant, this.filter)
    const byKey = new Map(rows.map((r) => [`${r.documentId}#${r.chunkIndex}`, r]))
    for (const h of hits) {
      const row = byKey.get(`${h.documentId}#${h.chunkIndex}`)
      expect(row, `${this}: hit ${h.documentId}#${h.chunkIndex} is not the tenant's matching row`).toBeDefined()
      expect({ content: h.content, metadata: h.metadata }).toEqual({ content: row!.content, metadata: row!.metadata })
    }
    for (let i = 1; i < hits.length; i++) expect(hits[i]!.score, `${this}: best score first`).toBeLessThanOrEqual(hits[i - 1]!.score)
    // The vector list takes max(4k, 40) candidates, more than a tenant holds here: every matching row is fused.
    expect(hits.length, `${this}: min(k, ${rows.length} matching rows)`).toBe(Math.min(this.k, rows.length))
  }
  toString() {
    return `${this.tenant}.hybridSearch(${vec(this.q)}, ${show(this.text)}, k=${this.k}${opt('filter', this.filter)})`
  }
}

export class Find implements Cmd {
  readonly kind = 'find'
  constructor(
    readonly tenant: string,
    readonly filter: MetadataFilter | undefined,
    readonly limit: number,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    const t = w.reader(this.tenant)
    const all: Array<{ documentId: string; chunkIndex: number; content: string; metadata: Record<string, unknown> }> = []
    let page = await t.find({ limit: this.limit, ...(this.filter ? { filter: this.filter } : {}) })
    for (let pages = 1; ; pages++) {
      expect(page.rows.length, `${this}: page size`).toBeLessThanOrEqual(this.limit)
      all.push(...page.rows)
      if (!page.next || pages > 40) break
      page = await t.find({ limit: this.limit, after: page.next, ...(this.filter ? { filter: this.filter } : {}) })
    }
    expect(plainRows(all), `${this}: every page`).toEqual(plainRows(rowsOf(m, this.tenant, this.filter)))
  }
  toString() {
    return `${this.tenant}.find(limit=${this.limit}${opt('filter', this.filter)}) all pages`
  }
}

export class Count implements Cmd {
  readonly kind = 'count'
  constructor(
    readonly tenant: string,
    readonly filter: MetadataFilter | undefined,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    expect(await w.reader(this.tenant).count(this.filter), String(this)).toBe(rowsOf(m, this.tenant, this.filter).length)
  }
  toString() {
    return `${this.tenant}.count(${this.filter ? show(this.filter) : ''})`
  }
}

export class GetChunks implements Cmd {
  readonly kind = 'getChunks'
  constructor(
    readonly tenant: string,
    readonly ids: string[],
    readonly includeEmbedding: boolean,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    const got = await w.reader(this.tenant).getChunks(this.ids, { includeEmbedding: this.includeEmbedding })
    const rows = rowsOf(m, this.tenant)
    const want = [...new Set(this.ids)].flatMap((id) => rows.filter((r) => r.documentId === id))
    const shape = (r: {
      documentId: string
      chunkIndex: number
      content: string
      metadata: Record<string, unknown>
      embedding?: number[]
    }) => ({
      documentId: r.documentId,
      chunkIndex: r.chunkIndex,
      content: r.content,
      metadata: r.metadata,
      ...(this.includeEmbedding ? { embedding: r.embedding } : {}),
    })
    expect(got.map(shape), String(this)).toEqual(want.map(shape))
  }
  toString() {
    return `${this.tenant}.getChunks(${show(this.ids)}${this.includeEmbedding ? ', includeEmbedding' : ''})`
  }
}

/** Another process reads with the writer's `store.consistencyToken(tenant)`: it must see every completed write. */
export class TokenRead implements Cmd {
  readonly kind = 'tokenRead'
  constructor(readonly tenant: string) {}
  check = () => true
  async run(m: Model, w: World) {
    const token = await w.store.consistencyToken(this.tenant)
    const other = w.otherProcess!.forTenant(this.tenant)
    const rows = await other.find({ limit: 1000, ...(token ? { consistencyToken: token } : {}) })
    expect(plainRows(rows.rows), `${this}: another process with the token`).toEqual(plainRows(rowsOf(m, this.tenant)))
  }
  toString() {
    return `another process reads ${this.tenant} with store.consistencyToken(${show(this.tenant)})`
  }
}

// ---- the mode's own ----

export class ReplayControl implements Cmd {
  readonly kind = 'replay'
  constructor(
    readonly standby: number | 'all',
    readonly paused: boolean,
  ) {}
  check = () => true
  async run(_m: Model, w: World) {
    const which = this.standby === 'all' ? Array.from({ length: w.standbys!.count }, (_, i) => i) : [this.standby]
    await Promise.all(which.map((i) => (this.paused ? w.standbys!.pause(i) : w.standbys!.resume(i))))
  }
  toString() {
    return `standby ${this.standby}: replay ${this.paused ? 'paused' : 'resumed'}`
  }
}

/** Both standbys resume and replay everything the primary wrote so far (then a pause leaves them exactly there). */
export class CaughtUp implements Cmd {
  readonly kind = 'caughtUp'
  check = () => true
  async run(_m: Model, w: World) {
    await w.standbys!.caughtUp()
  }
  toString() {
    return 'standbys: replay resumed and caught up'
  }
}

/** Raw SQL as the runtime role: with a tenant set it sees exactly that tenant's rows; without, none. */
export class RawRoleRead implements Cmd {
  readonly kind = 'rawRoleRead'
  constructor(readonly tenant: string | undefined) {}
  check = () => true
  async run(m: Model, w: World) {
    const rows = await w.rawAs!(
      this.tenant,
      `select tenant_id, document_id as "documentId", chunk_index as "chunkIndex", content from conf_chunks order by 2, 3`,
    )
    const want =
      this.tenant === undefined
        ? []
        : rowsOf(m, this.tenant).map((r) => ({
            tenant_id: this.tenant,
            documentId: r.documentId,
            chunkIndex: r.chunkIndex,
            content: r.content,
          }))
    expect(rows, String(this)).toEqual(want)
  }
  toString() {
    return this.tenant === undefined
      ? 'raw SQL as the runtime role, no tenant set: select * from conf_chunks'
      : `raw SQL as the runtime role, tenant ${show(this.tenant)} set: select * from conf_chunks`
  }
}

/** Under rls, appending another tenant's key to the rollup's dirty log must be refused. */
export class ForeignDirtyAppend implements Cmd {
  readonly kind = 'foreignDirtyAppend'
  constructor(
    readonly tenant: string,
    readonly other: string,
  ) {}
  check = () => this.tenant !== this.other
  async run(m: Model, w: World) {
    const err = await w.rawAs!(this.tenant, `insert into conf_monthly_dirty (tenant_id, month) values ($1, '2025-01-01')`, [
      this.other,
    ]).catch((e: unknown) => e)
    if (!(err instanceof Error)) {
      // Written: keep the model true to the table (a drain refreshes that bucket) before failing.
      m.dirty.add(`${this.other}|2025-01`)
      materialize(m, `${this.other}|2025-01`)
    }
    const state = (err as { sqlState?: string; code?: string }).sqlState ?? (err as { code?: string }).code
    expect(state, `${this}: must be refused (42501): ${String(err)}`).toBe('42501')
  }
  toString() {
    return `raw SQL as the runtime role, tenant ${show(this.tenant)} set: insert into conf_monthly_dirty a key of ${show(this.other)}`
  }
}

// ---- embedding spaces ----

/** The `mirror` space's model: a hash of the text, DIM values (never all zero). */
function mirrorModel(text: string): number[] {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return Array.from({ length: DIM }, (_, i) => ((Math.imul(h, i + 7) >>> 8) % 1000) / 500 - 1 + (i === 0 ? 0.001 : 0))
}

/**
 * A tenant moved to the `mirror` space and back within one command: the backfill and the switch,
 * then every page of its chunks read through the space it searches (the model's rows, none lost or
 * mixed), then the rollback (its answers the model's again) and the release of the mirror's rows.
 */
export class SpaceRoundTrip implements Cmd {
  readonly kind = 'spaceRoundTrip'
  constructor(readonly tenant: string) {}
  check = () => true
  async run(m: Model, w: World) {
    const store = w.store
    const result = await store.migrateTenant(this.tenant, { to: 'mirror', embed: async (texts) => texts.map(mirrorModel), switch: true })
    expect(result.switched, `${this}: switched`).toBe(true)
    const { space, tenant } = await store.activeTenant(this.tenant)
    expect(space, `${this}: searches the mirror`).toBe('mirror')
    const { rows } = await tenant.find({ limit: 1000 })
    expect(plainRows(rows), `${this}: the mirror holds the model's rows`).toEqual(plainRows(rowsOf(m, this.tenant)))
    const first = rows[0]
    if (first) {
      const [hit] = await tenant.exactSearch(mirrorModel(first.content), { k: 1 })
      expect(hit?.distance, `${this}: a chunk's own text finds it at distance 0 in the mirror`).toBeCloseTo(0, 5)
    }
    await store.rollbackTenant(this.tenant)
    expect((await store.activeTenant(this.tenant)).space, `${this}: back in default`).toBe('default')
    await store.releaseTenantSpace(this.tenant, 'mirror')
  }
  toString() {
    return `${this.tenant}: migrate to the mirror space, switch, read, roll back, release`
  }
}

// ---- every command, by kind ----

const writeOp = (kinds: readonly string[]) => fc.oneof(...kinds.map((k) => WRITE_OPS[k]!))

/** The store's commands by kind (the rollup's are in rollup-commands.ts); `writes` are the write kinds the wrappers may wrap. */
export function storeCommands(writes: readonly string[]): Record<string, () => fc.Arbitrary<Cmd>> {
  return {
    search: () =>
      fc
        .tuple(tenantArb, embeddingArb, kArb, filterOpt, fc.constantFrom<'exact' | 'index' | undefined>(undefined, 'exact', 'index'))
        .map(([t, q, k, f, s]) => new Search(t, q, k, f, s)),
    exactSearch: () => fc.tuple(tenantArb, embeddingArb, kArb, filterOpt).map(([t, q, k, f]) => new ExactSearch(t, q, k, f)),
    hybridSearch: () =>
      fc.tuple(tenantArb, embeddingArb, contentArb, kArb, filterOpt).map(([t, q, s, k, f]) => new HybridSearch(t, q, s, k, f)),
    find: () => fc.tuple(tenantArb, filterOpt, fc.integer({ min: 1, max: 5 })).map(([t, f, l]) => new Find(t, f, l)),
    count: () => fc.tuple(tenantArb, filterOpt).map(([t, f]) => new Count(t, f)),
    getChunks: () =>
      fc
        .tuple(tenantArb, fc.array(fc.constantFrom(...DOCS, 'px', 'nope'), { minLength: 1, maxLength: 4 }), fc.boolean())
        .map(([t, ids, e]) => new GetChunks(t, ids, e)),
    tokenRead: () => tenantArb.map((t) => new TokenRead(t)),
    poisonedWrite: () =>
      writeOp(writes.filter((k) => ['replaceDocument', 'upsertChunks', 'bulkUpsert', 'tenant.bulkIngest', 'store.bulkIngest'].includes(k)))
        .filter((op) => op.poisoned !== undefined)
        .map((op) => new PoisonedWrite(op.poisoned!())),
    killedWrite: () => writeOp(writes).map((op) => new KilledWrite(op)),
    rolledBackWrite: () => writeOp(writes.filter((k) => k !== 'store.bulkIngest')).map((op) => new RolledBackWrite(op)),
    transactionWrite: () => writeOp(writes.filter((k) => k !== 'store.bulkIngest')).map((op) => new TransactionWrite(op)),
    caughtUp: () => fc.constant(new CaughtUp()),
    replay: () => fc.tuple(fc.constantFrom<number | 'all'>(0, 1, 'all'), fc.boolean()).map(([i, p]) => new ReplayControl(i, p)),
    rawRoleRead: () => fc.option(tenantArb, { freq: 4, nil: undefined }).map((t) => new RawRoleRead(t)),
    foreignDirtyAppend: () => fc.tuple(tenantArb, tenantArb).map(([t, o]) => new ForeignDirtyAppend(t, o)),
    spaceRoundTrip: () => tenantArb.map((t) => new SpaceRoundTrip(t)),
    ...Object.fromEntries(Object.entries(WRITE_OPS).map(([kind, arb]) => [kind, () => arb.map((op) => new WriteCommand(op) as Cmd)])),
  }
}
