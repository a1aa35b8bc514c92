import { CompiledQuery, sql } from 'kysely'
import { PgVectorStore, type Database, type MonthlyRollup, type ReplicaSet } from '../../src/index.js'
import { createSchema, storeConfig, truncateAll } from './harness.js'
import type { World, WriteOp } from './writes.js'

/**
 * How each mode opens its world over a database: the store and the rollup as the mode uses them.
 * `owner` creates and empties the tables; `db` is what the app's calls go through (a pooler's, the
 * runtime role's, the primary of a ReplicaSet).
 */

interface Base {
  mode: string
  owner: Database
  ownerUrl?: string
  db: Database
  rollup: MonthlyRollup
  store: PgVectorStore
}

function baseWorld(b: Base, extra: Partial<World> = {}): World {
  return {
    mode: b.mode,
    store: b.store,
    rollup: b.rollup,
    reader: (tenant) => b.store.forTenant(tenant),
    write: (op: WriteOp) => op.exec(b.store.forTenant(op.tenants[0]!), b.store),
    rollupDb: b.db,
    rollupReader: b.db,
    sourceWrite: async (_tenant, text, params) => {
      await b.db.executeQuery(CompiledQuery.raw(text, [...params]))
    },
    admin: b.owner,
    ...(b.ownerUrl ? { adminUrl: b.ownerUrl } : {}),
    reset: () => truncateAll(b.owner),
    inTransaction: (work) => b.db.transaction().execute((trx) => work((id) => b.store.forTenant(id, { transaction: trx }))),
    ...extra,
  }
}

/** (a) plain: the store and the rollup on `db` (the test database, or a pooler's connection to it). */
export async function openPlain(mode: string, owner: Database, db: Database, ownerUrl?: string): Promise<World> {
  const rollup = await createSchema(owner, 'none')
  const store = await PgVectorStore.open(db, storeConfig('none'))
  return baseWorld({ mode, owner, ownerUrl, db, rollup, store })
}

/** (b) every tenant write inside an app transaction (`forTenant(t, { transaction })`) that commits; store-level writes outside. */
export async function openTransactional(owner: Database, ownerUrl?: string): Promise<World> {
  const world = await openPlain('transaction', owner, owner, ownerUrl)
  return {
    ...world,
    write: (op) =>
      op.storeLevel
        ? op.exec(world.store.forTenant(op.tenants[0]!), world.store)
        : owner.transaction().execute((trx) => op.exec(world.store.forTenant(op.tenants[0]!, { transaction: trx }), world.store)),
    sourceWrite: (tenant, text, params) =>
      owner.transaction().execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(text, [...params]))
      }),
  }
}

/** (c) reads through a ReplicaSet over standbys whose replay the commands pause and resume. */
export async function openReplicated(
  owner: Database,
  ownerUrl: string,
  replicas: ReplicaSet,
  standbys: Database[],
  otherReplicas: ReplicaSet,
): Promise<World> {
  const rollup = await createSchema(owner, 'none')
  const store = await PgVectorStore.open(owner, { ...storeConfig('none'), replicas })
  // Another process: a store of its own with a ReplicaSet of its own; it knows of no write of this one's.
  const otherProcess = await PgVectorStore.open(owner, { ...storeConfig('none'), replicas: otherReplicas })
  const replay = (i: number, what: 'pause' | 'resume') => sql.raw(`select pg_wal_replay_${what}()`).execute(standbys[i]!)
  return baseWorld(
    { mode: 'replicas', owner, ownerUrl, db: owner, rollup, store },
    {
      rollupReader: replicas,
      sourceWrite: async (tenant, text, params) => {
        await owner.executeQuery(CompiledQuery.raw(text, [...params]))
        await replicas.noteWrite(tenant) // what docs/scale-out.md tells an app to do after its own SQL
      },
      reset: async () => {
        await Promise.all(standbys.map((_, i) => replay(i, 'resume')))
        await truncateAll(owner)
        await caughtUp(owner, standbys)
      },
      standbys: {
        count: standbys.length,
        pause: async (i) => void (await replay(i, 'pause')),
        resume: async (i) => void (await replay(i, 'resume')),
        caughtUp: async () => {
          await Promise.all(standbys.map((_, i) => replay(i, 'resume')))
          await caughtUp(owner, standbys)
        },
      },
      otherProcess,
    },
  )
}

/** Waits until every standby replayed the primary's WAL as of now. */
async function caughtUp(primary: Database, standbys: Database[]): Promise<void> {
  // WAL the primary inserted but has not flushed (an idle primary's running-xacts record, seen
  // after a killed write: insert 80 bytes past flush for good) never reaches a standby: a
  // transaction that commits synchronously flushes everything before it first.
  await primary.transaction(async (trx) => {
    await sql`set local synchronous_commit = on`.execute(trx)
    await sql`select pg_current_xact_id()`.execute(trx)
  })
  const { rows } = await sql<{ lsn: string }>`select pg_current_wal_insert_lsn()::text as lsn`.execute(primary)
  for (const s of standbys)
    for (let i = 0; ; i++) {
      const { rows: r } = await sql<{ ok: boolean }>`select pg_last_wal_replay_lsn() >= ${rows[0]!.lsn}::pg_lsn as ok`.execute(s)
      if (r[0]?.ok) break
      if (i > 1000) {
        // What the primary says of its standbys, for the failure's message.
        const { rows: state } =
          await sql`select application_name, state, sent_lsn::text, write_lsn::text, flush_lsn::text, replay_lsn::text,
            pg_current_wal_flush_lsn()::text as primary_flush, pg_current_wal_insert_lsn()::text as primary_insert
          from pg_stat_replication`.execute(primary)
        const { rows: standby } = await sql`select pg_last_wal_replay_lsn()::text as replay, pg_last_wal_receive_lsn()::text as receive,
            pg_get_wal_replay_pause_state() as pause`.execute(s)
        throw new Error(
          `a standby did not catch up in 10 s to ${rows[0]!.lsn}: primary ${JSON.stringify(state)}, standby ${JSON.stringify(standby)}`,
        )
      }
      await new Promise((res) => setTimeout(res, 10))
    }
}

/**
 * (d) the runtime role (DML only) on a store and a rollup with `isolation: 'rls'`; raw SQL as the
 * role sees only the tenant it set. `roleDb` logs in as the role (a server); without it (PGlite) the
 * owner's one session takes the role with SET ROLE, and drops it only to empty the tables.
 */
export async function openRowSecure(owner: Database, role: string, roleDb?: Database, ownerUrl?: string): Promise<World> {
  const rollup = await createSchema(owner, 'rls', role)
  const setRole = () => sql.raw(`set role ${role}`).execute(owner)
  if (!roleDb) await setRole()
  const db = roleDb ?? owner
  const store = await PgVectorStore.open(db, storeConfig('rls'))
  return baseWorld(
    { mode: 'rls', owner, ownerUrl, db, rollup, store },
    {
      sourceWrite: (tenant, text, params) =>
        db.transaction().execute(async (trx) => {
          await sql`select set_config('pgscale.tenant_id', ${tenant}, true)`.execute(trx)
          await trx.executeQuery(CompiledQuery.raw(text, [...params]))
        }),
      rawAs: (tenant, text, params = []) =>
        db.transaction().execute(async (trx) => {
          if (tenant !== undefined) await sql`select set_config('pgscale.tenant_id', ${tenant}, true)`.execute(trx)
          return (await trx.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, [...params]))).rows
        }),
      reset: async () => {
        if (roleDb) return truncateAll(owner)
        await sql`reset role`.execute(owner)
        try {
          await truncateAll(owner)
        } finally {
          await setRole()
        }
      },
    },
  )
}
