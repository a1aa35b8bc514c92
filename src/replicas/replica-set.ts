import { sql } from 'kysely'
import { adoptDatabase, type DatabaseHandle } from '../db/adopt.js'
import { Database } from '../db/database.js'
import { createNodePostgresPool } from '../db/pools/node-postgres-pool.js'
import { InvalidArgumentError } from '../errors.js'
import { nodeUnavailable, ReplicaNode, type ReplicaNodeStats } from './replica-node.js'
import { fromToken, parseLsn, toToken } from './wal-position.js'

/** How reads are routed among replicas (`new ReplicaSet(primary, replicas, options)`). */
export interface ReplicaOptions {
  /** A replica whose replay lags more than this serves no read. Default 10,000 ms. */
  maxLagMs?: number
  /** How long a read that must see a write waits for a replica to replay past it before it reads the primary. Default 200 ms. */
  waitMs?: number
  /** How often a waiting read looks again. Default 10 ms. */
  pollMs?: number
  /** How long a replica's replay position is reused before it is read again. Default 25 ms. */
  positionCacheMs?: number
  /** How long a replica that failed is left alone. Default 5,000 ms. */
  retryDownMs?: number
  /** Citus (WAL positions are per worker): how long a tenant's reads stay on the coordinator after its write. Default 2,000 ms. */
  stickyMs?: number
  /**
   * The most a replica may take over one read (or over reading its replay position) before the
   * read goes elsewhere and the replica is left alone for `retryDownMs`: a standby that hangs costs
   * a read this much, not the whole hang. Default 500 ms.
   */
  readTimeoutMs?: number
}

/** A tenant as replicas key it: a store's text id, or a rollup's number or bigint (42 and '42' are one tenant). */
export type TenantKey = string | number | bigint

/** What one read asks of routing. */
export interface ReadConsistency {
  /** `'primary'`: read the primary, whatever the replicas. */
  consistency?: 'primary' | 'replica'
  /** A token from `consistencyToken` (another request, another process): read only what has replayed past it. */
  consistencyToken?: string
}

/** Where reads went and why, since the set was made. */
export interface ReplicaStats {
  primaryReads: number
  replicaReads: number
  /** Reads that waited for a replica to replay past the caller's write. */
  waitedForReplay: number
  /** Reads sent to the primary: asked for it, no replica had replayed the write in time, every replica lagging, or down. */
  toPrimary: { asked: number; behindWrite: number; lagging: number; down: number; sticky: number; pending: number }
  replicas: ReplicaNodeStats[]
}

const MAX_TENANTS = 100_000

/** The sets made with each primary handle: how a rollup's write on that handle finds the set its reads go through. */
const SETS_OF_PRIMARY = new WeakMap<object, Set<ReplicaSet>>()

/**
 * The key of a tenant in the write journal: its text form (a rollup's `42` is the store's and
 * the read's `'42'`). A typed error for anything but a string, a safe integer or a bigint.
 *
 * ### Examples
 * ```ts
 * tenantKey(42) === tenantKey('42') // true
 * ```
 */
export function tenantKey(tenant: TenantKey): string {
  if (typeof tenant === 'string' && tenant.length > 0) return tenant
  if (typeof tenant === 'bigint' || (typeof tenant === 'number' && Number.isSafeInteger(tenant))) return String(tenant)
  throw new InvalidArgumentError(`tenant must be a non-empty string, a safe integer or a bigint, got ${JSON.stringify(String(tenant))}`)
}
/**
 * A primary and its streaming replicas, for reads with read-your-writes: after a write pgscale
 * notes the primary's WAL insert position for the tenant (`noteWrite`), and a read of that tenant
 * goes to a replica only once it has replayed past it — waiting up to `waitMs`, else the primary.
 * The position is also a token (`consistencyToken`) an app carries to another request or process
 * (`{ consistencyToken }` on a read). Replicas that fail or are promoted are passed over (counted), and used
 * again once they answer. Hand it to `PgVectorStore.open(db, { replicas })` and to
 * `rollup.read(replicas, …)`.
 *
 * ### Examples
 * ```ts
 * const replicas = new ReplicaSet(primaryDb, [replicaA, replicaB], { maxLagMs: 5000 })
 * const store = await PgVectorStore.open(primaryDb, { dimensions: 384, replicas })
 * ```
 */
export class ReplicaSet {
  readonly primary: Database
  readonly #nodes: ReplicaNode[]
  readonly #options: Required<ReplicaOptions>
  readonly #writes = new Map<string, { lsn: bigint; at: number }>()
  #next = 0
  #citus: Promise<boolean> | undefined
  readonly #stats = {
    primaryReads: 0,
    replicaReads: 0,
    waitedForReplay: 0,
    toPrimary: { asked: 0, behindWrite: 0, lagging: 0, down: 0, sticky: 0, pending: 0 },
  }
  /** Writes made in the app's transactions, by tenant: their transaction ids, until they are seen committed or gone. */
  readonly #pending = new Map<string, Set<string>>()

  constructor(primary: DatabaseHandle, replicas: ReadonlyArray<DatabaseHandle | string>, options: ReplicaOptions = {}) {
    if (!Array.isArray(replicas)) throw new InvalidArgumentError('replicas must be an array of database handles or postgres:// URLs')
    this.primary = adoptDatabase(primary)
    this.#nodes = replicas.map((r, i) => new ReplicaNode(replicaHandle(r), nodeName(r, i)))
    this.#options = resolveOptions(options)
    for (const handle of [primary, this.primary]) {
      const sets = SETS_OF_PRIMARY.get(handle) ?? new Set<ReplicaSet>()
      SETS_OF_PRIMARY.set(handle, sets.add(this))
    }
  }

  /**
   * The replica sets made with `handle` as their primary (the very object given, or the handle
   * pgscale made of it): where a write on that handle is noted without the app saying so.
   *
   * ### Examples
   * ```ts
   * const replicas = new ReplicaSet(db, [standbyUrl])
   * ReplicaSet.ofPrimary(db) // [replicas]
   * ```
   */
  static ofPrimary(handle: unknown): ReplicaSet[] {
    return handle !== null && typeof handle === 'object' ? [...(SETS_OF_PRIMARY.get(handle) ?? [])] : []
  }

  /** How many replicas the set routes to. */
  get size(): number {
    return this.#nodes.length
  }

  /**
   * Notes the primary's WAL insert position for `tenant` after a write committed (the store and
   * the rollup do it for their own writes; call it after yours), and returns it as a token.
   * `42` and `'42'` are the same tenant.
   *
   * ### Examples
   * ```ts
   * await sql`insert into expenses …`.execute(db)
   * const token = await replicas.noteWrite('acme')
   * ```
   */
  async noteWrite(tenant: TenantKey): Promise<string> {
    return this.noteWrites([tenant])
  }

  /**
   * {@link noteWrite} for several tenants written by one commit, with one read of the position.
   *
   * ### Examples
   * ```ts
   * await replicas.noteWrites(['acme', 'globex'])
   * ```
   */
  async noteWrites(tenants: Iterable<TenantKey>): Promise<string> {
    const keys = [...tenants].map(tenantKey)
    const lsn = await this.#primaryPosition()
    for (const key of keys) this.#note(key, lsn)
    return toToken(lsn)
  }

  /**
   * Notes writes made inside a transaction the app has not committed yet (`xid`, the
   * transaction's `pg_current_xact_id()`): until the primary says it committed, the tenant's reads
   * go to the primary; once committed, its position is noted as for {@link noteWrite}; rolled back,
   * it is forgotten. How pgscale learns of a commit it does not see.
   *
   * ### Examples
   * ```ts
   * replicas.notePendingWrites(['acme'], '771')
   * ```
   */
  notePendingWrites(tenants: Iterable<TenantKey>, xid: string): void {
    if (!/^[0-9]{1,20}$/.test(xid)) throw new InvalidArgumentError(`not a transaction id: ${JSON.stringify(xid)}`)
    for (const key of [...tenants].map(tenantKey)) {
      const pending = this.#pending.get(key) ?? new Set<string>()
      this.#pending.set(key, pending.add(xid))
      if (this.#pending.size > MAX_TENANTS) this.#pending.delete(this.#pending.keys().next().value!)
    }
  }

  /**
   * A token for `tenant`'s latest write in this process (the largest position over all of them,
   * transactional writes included once committed), else the primary's current position (what any
   * write committed so far is behind): pass it to another process's reads as `{ consistencyToken }`.
   *
   * ### Examples
   * ```ts
   * res.cookie('pgscale', await replicas.consistencyToken('acme'))
   * ```
   */
  async consistencyToken(tenant: TenantKey): Promise<string> {
    const key = tenantKey(tenant)
    await this.#settle(key)
    const known = this.#writes.get(key)
    if (known) return toToken(known.lsn)
    return toToken(await this.#primaryPosition())
  }

  /**
   * Runs the read `run` on a replica that has replayed past what `tenant` must see (its writes in
   * this process, and `options.consistencyToken`), else on the primary; a replica that fails the read is left
   * alone for a while and the read goes to another node. Never an error unless the primary fails.
   *
   * ### Examples
   * ```ts
   * const rows = await replicas.read('acme', { consistencyToken: token }, (db) => sql`select …`.execute(db))
   * ```
   */
  async read<T>(tenant: TenantKey | undefined, options: ReadConsistency, run: (db: Database) => Promise<T>): Promise<T> {
    const target = await this.#choose(tenant === undefined ? undefined : tenantKey(tenant), options)
    if (target) {
      try {
        const result = await target.within(this.#options.readTimeoutMs, () => run(target.db))
        target.stats.reads++
        this.#stats.replicaReads++
        return result
      } catch (err) {
        if (!nodeUnavailable(err)) throw err
        target.markDown(this.#options.retryDownMs)
        return this.read(tenant, options, run)
      }
    }
    this.#stats.primaryReads++
    return run(this.primary)
  }

  /** Where reads went, per node. */
  stats(): ReplicaStats {
    return { ...this.#stats, toPrimary: { ...this.#stats.toPrimary }, replicas: this.#nodes.map((n) => ({ ...n.stats })) }
  }

  /** Closes the replicas' handles pgscale made (a handle the app passed as a pg.Pool or Kysely keeps its pool). */
  async close(): Promise<void> {
    await Promise.all(this.#nodes.map((n) => n.db.close().catch(() => {})))
  }

  async #choose(tenant: string | undefined, options: ReadConsistency): Promise<ReplicaNode | undefined> {
    if (options.consistency === 'primary' || this.#nodes.length === 0) return this.#primary('asked')
    if (tenant !== undefined && !(await this.#settle(tenant))) return this.#primary('pending')
    const noted = tenant === undefined ? undefined : this.#writes.get(tenant)
    const after = options.consistencyToken === undefined ? 0n : fromToken(options.consistencyToken)
    if (noted && (await this.#isCitus()) && performance.now() - noted.at < this.#options.stickyMs) return this.#primary('sticky')
    const need = noted && noted.lsn > after ? noted.lsn : after
    const started = performance.now()
    for (let waited = false; ; waited = true) {
      const { ready, behind, lagging, down } = await this.#candidates(need)
      if (ready) {
        if (waited) {
          ready.stats.waited++
          this.#stats.waitedForReplay++
        }
        return ready
      }
      if (behind === 0 || performance.now() - started >= this.#options.waitMs)
        return this.#primary(behind > 0 ? 'behindWrite' : lagging > 0 ? 'lagging' : down > 0 ? 'down' : 'behindWrite')
      await new Promise((resolve) => setTimeout(resolve, this.#options.pollMs))
    }
  }

  /** The next usable replica (round robin) that has replayed `need` and lags less than `maxLagMs`, with counts of why others did not. */
  async #candidates(need: bigint): Promise<{ ready?: ReplicaNode; behind: number; lagging: number; down: number }> {
    const now = performance.now()
    const counts = { behind: 0, lagging: 0, down: 0 }
    for (let i = 0; i < this.#nodes.length; i++) {
      const node = this.#nodes[(this.#next + i) % this.#nodes.length]!
      if (!node.usable(now)) {
        counts.down++
        continue
      }
      await node.refresh(need > node.replay ? 0 : this.#options.positionCacheMs, this.#options.retryDownMs, this.#options.readTimeoutMs)
      if (!node.usable(performance.now())) counts.down++
      else if (node.lagMs > this.#options.maxLagMs) {
        node.stats.skippedLagging++
        counts.lagging++
      } else if (node.replay < need) counts.behind++
      else {
        this.#next = (this.#next + i + 1) % this.#nodes.length
        return { ready: node, ...counts }
      }
    }
    return counts
  }

  /** The primary's WAL insert position now: what every write committed so far is behind. */
  async #primaryPosition(): Promise<bigint> {
    const { rows } = await sql<{ lsn: string }>`select pg_current_wal_insert_lsn()::text as lsn`.execute(this.primary)
    return parseLsn(rows[0]!.lsn)
  }

  /** Notes `lsn` for `key`, keeping the largest position seen (tokens are the maximum over every write). */
  #note(key: string, lsn: bigint): void {
    const known = this.#writes.get(key)
    this.#writes.delete(key)
    this.#writes.set(key, { lsn: known && known.lsn > lsn ? known.lsn : lsn, at: performance.now() })
    if (this.#writes.size > MAX_TENANTS) this.#writes.delete(this.#writes.keys().next().value!)
  }

  /**
   * Resolves `key`'s writes in app transactions: committed ones are noted at the primary's position
   * read after their commit was seen, rolled-back (or forgotten) ones dropped. True when none is
   * still in progress.
   */
  async #settle(key: string): Promise<boolean> {
    const pending = this.#pending.get(key)
    if (!pending) return true
    const { rows } = await sql<{ xid: string; status: string | null }>`
      select x as xid, pg_xact_status(x::xid8) as status from unnest(${[...pending]}::text[]) as x`.execute(this.primary)
    let committed = false
    for (const row of rows) {
      if (row.status === 'in progress') continue
      pending.delete(row.xid)
      committed ||= row.status === 'committed' || row.status === null
    }
    if (committed) this.#note(key, await this.#primaryPosition())
    if (pending.size === 0) this.#pending.delete(key)
    return pending.size === 0
  }

  #primary(reason: keyof ReplicaStats['toPrimary']): undefined {
    this.#stats.toPrimary[reason]++
    return undefined
  }

  #isCitus(): Promise<boolean> {
    this.#citus ??= this.primary.hasCitus()
    return this.#citus
  }
}

function resolveOptions(o: ReplicaOptions): Required<ReplicaOptions> {
  const value = (name: keyof ReplicaOptions, fallback: number, max: number) => {
    const v = o[name] ?? fallback
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > max)
      throw new InvalidArgumentError(`replica option ${name} must be a number of ms from 0 to ${max}, got ${JSON.stringify(o[name])}`)
    return v
  }
  return {
    maxLagMs: value('maxLagMs', 10_000, 86_400_000),
    waitMs: value('waitMs', 200, 60_000),
    pollMs: Math.max(1, value('pollMs', 10, 10_000)),
    positionCacheMs: value('positionCacheMs', 25, 60_000),
    retryDownMs: value('retryDownMs', 5000, 3_600_000),
    stickyMs: value('stickyMs', 2000, 3_600_000),
    readTimeoutMs: Math.max(1, value('readTimeoutMs', 500, 3_600_000)),
  }
}

/**
 * A replica's handle: the app's, or — for a `postgres://` URL — a pool of pgscale's that connects
 * on its first read, so a standby that is down when the app starts is only passed over.
 */
function replicaHandle(replica: DatabaseHandle | string): Database {
  if (typeof replica !== 'string') return adoptDatabase(replica)
  if (!/^postgres(ql)?:\/\//.test(replica)) throw new InvalidArgumentError('a replica given as text must be a postgres:// URL')
  return new Database(createNodePostgresPool(replica, {}))
}

/** A replica's name for the stats, without credentials. */
function nodeName(handle: DatabaseHandle | string, i: number): string {
  if (typeof handle === 'string') {
    const u = new URL(handle)
    return `${u.hostname}:${u.port}${u.pathname}`
  }
  const options = (handle as { options?: { host?: string; port?: number; database?: string; connectionString?: string } }).options
  if (options?.connectionString) {
    const u = new URL(options.connectionString)
    return `${u.hostname}:${u.port}${u.pathname}`
  }
  if (options?.host) return `${options.host}:${options.port ?? 5432}/${options.database ?? ''}`
  return `replica ${i + 1}`
}
