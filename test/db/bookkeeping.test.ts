import { sql } from 'kysely'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { pgscale } from '../../cli/pgscale.js'
import {
  connect,
  doctorAll,
  MonthlyRollup,
  PgVectorStore,
  recordedObjects,
  recordedStores,
  rollupTable,
  type Database,
  type Finding,
  type PgVectorStoreConfig,
} from '../../src/index.js'
import { itUnless } from '../support/skip.js'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { useRuntimeRole, type RuntimeRole } from '../support/runtime-role.js'
import { useTestDatabase } from '../support/test-database.js'
import { axisVector } from '../support/vectors.js'

/**
 * pgscale's bookkeeping per schema (#48): each schema keeps its own `pgscale_object_version` and
 * `pgscale_lease`, named qualified, so two teams in two schemas of one database — two owner roles,
 * two runtime roles — each work without the other's bookkeeping and cannot read it; and a
 * database as store schema version 5 left it (every record in `public.pgscale_object_version`)
 * has its records moved, at once by two processes, and not at all when the move fails midway.
 */
const t = useTestDatabase()
const DIM = 4
const chunk = (tenantId: string, i: number) => ({
  tenantId,
  documentId: `doc-${i}`,
  chunkIndex: 0,
  content: `chunk ${i}`,
  metadata: { n: i },
  embedding: axisVector(DIM, i % DIM, 0.1 * (i % 3)),
})
const exists = async (db: Database, name: string) =>
  (await sql<{ found: boolean }>`select to_regclass(${name}) is not null as found`.execute(db)).rows[0]!.found
const keysIn = async (db: Database, table: string) =>
  (await sql<{ object: string }>`select object from ${sql.raw(table)} order by object`.execute(db)).rows.map((r) => r.object)
const sqlState = (err: unknown) => (err as { sqlState?: string; code?: string }).sqlState ?? (err as { code?: string }).code

/** The bookkeeping as pgscale up to store schema version 5 kept it: one table in `public`, the old DDL, every schema's records. */
async function asVersion5(db: Database, schema: string): Promise<void> {
  await sql
    .raw(
      `create table if not exists public.pgscale_object_version (object text primary key, version integer not null, config jsonb not null)`,
    )
    .execute(db)
  await sql
    .raw(
      `create table if not exists public.pgscale_lease (resource text primary key, holder text not null, expires_at timestamptz not null)`,
    )
    .execute(db)
  await sql
    .raw(
      `insert into public.pgscale_object_version (object, version, config) select object, version, config from "${schema}".pgscale_object_version;
       drop table "${schema}".pgscale_object_version, "${schema}".pgscale_lease`,
    )
    .execute(db)
}

interface Team {
  schema: string
  owner: RuntimeRole
  runtime: RuntimeRole
  store: PgVectorStoreConfig
}
const team = (schema: string): Team => ({
  schema,
  owner: useRuntimeRole(t, `own_${schema}`),
  runtime: useRuntimeRole(t, `rt_${schema}`),
  store: { table: `${schema}.chunks`, dimensions: DIM },
})
const teams = [team('team_a'), team('team_b')]
const expenses = (schema: string) => {
  const target = rollupTable(`${schema}.expenses_monthly`, {
    groupBy: { category: 'text' },
    measures: { total: 'numeric' },
    tenantType: 'bigint',
  })
  const rollup = new MonthlyRollup({
    source: `${schema}.expenses`,
    target,
    at: 'paid_at',
    tenant: 'tenant_id',
    groupBy: ['category'],
    measures: { total: sql`sum(amount)` },
    zone: 'UTC',
  })
  return { target, rollup }
}

describe('two teams in two schemas of one database', () => {
  beforeAll(async () => {
    for (const { schema, owner, runtime } of teams) {
      await owner.create()
      await runtime.create()
      await sql.raw(`create schema ${schema} authorization ${owner.name}`).execute(t.db)
    }
  })

  it('each owner migrates, opens, optimizes, tracks, refreshes and doctors its own schema; nothing lands in public', async () => {
    for (const { schema, owner, runtime, store } of teams) {
      await owner.as(async (db) => {
        await PgVectorStore.migration(store, { runtimeRole: runtime.name }).up(db)
        const opened = await PgVectorStore.open(db, store)
        await opened.bulkIngest(Array.from({ length: 24 }, (_, i) => chunk(i % 2 ? 'acme' : 'globex', i)))
        await opened.optimize()
        await opened.close()
        await sql
          .raw(
            `create table ${schema}.expenses (tenant_id bigint not null, paid_at timestamptz not null, category text, amount numeric not null);
             grant select, insert, update, delete on ${schema}.expenses to ${runtime.name}`,
          )
          .execute(db)
        const { target, rollup } = expenses(schema)
        await target.migration({ runtimeRole: runtime.name }).up(db)
        await rollup.trackingMigration({ runtimeRole: runtime.name }).up(db)
        await sql.raw(`insert into ${schema}.expenses values (1, '2026-03-04T05:00:00Z', 'food', 12.5)`).execute(db)
        expect((await rollup.refreshDirty(db)).buckets).toBe(1)
        const records = await recordedObjects(db)
        expect(records.map((r) => [r.key, r.keptIn, r.missing, r.recreated])).toEqual([
          [`rollup:${schema}.expenses_monthly`, schema, [], false],
          [`store:${schema}.chunks`, schema, [], false],
        ])
        const stores = await recordedStores(db)
        const findings = await doctorAll(db, { stores, rollups: await MonthlyRollup.tracked(db), records })
        expect(findings.filter((f) => f.level === 'fail')).toEqual([])
      })
    }
    expect(await exists(t.db, 'public.pgscale_object_version')).toBe(false)
    expect(await exists(t.db, 'public.pgscale_lease')).toBe(false)
  })

  it("each runtime role opens and searches its store, and neither role of a team can read the other's bookkeeping", async () => {
    for (const [i, { schema, owner, runtime, store }] of teams.entries()) {
      const other = teams[1 - i]!.schema
      await runtime.as(async (db) => {
        const opened = await PgVectorStore.open(db, { ...store, migrate: false })
        expect(await opened.forTenant('acme').search(axisVector(DIM, 1), { k: 3 })).toHaveLength(3)
        await opened.close()
        expect((await recordedObjects(db)).map((r) => r.key)).toEqual([`rollup:${schema}.expenses_monthly`, `store:${schema}.chunks`])
      })
      for (const role of [owner, runtime]) {
        const err = await role
          .as((db) => sql.raw(`select object from ${other}.pgscale_object_version`).execute(db))
          .catch((e: unknown) => e)
        expect(sqlState(err)).toBe('42501')
      }
    }
  })
})

describe('the pgscale CLI as each team', () => {
  const server = itUnless(!t.target.url && 'the CLI logs in as each role by URL')
  let dir = ''
  beforeAll(() => void (dir = tempDir('pgscale-bookkeeping-')))
  afterAll(removeTempDirs)

  server('each owner optimizes, drains, doctors and forgets only its own; each runtime role doctors and drains its own', async () => {
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    try {
      for (const [i, { schema, owner, runtime }] of teams.entries()) {
        const other = teams[1 - i]!.schema
        const doctor = async (url: string) => {
          const file = join(dir, `${schema}-doctor.json`)
          const code = await pgscale(['doctor', '--pg', url, '--json', file])
          const text = readFileSync(file, 'utf8')
          return { code, text, findings: (JSON.parse(text) as { findings: Finding[] }).findings }
        }
        expect(await pgscale(['optimize', '--pg', owner.url()])).toBe(0)
        expect(await pgscale(['drain', '--once', '--pg', owner.url()])).toBe(0)
        expect(await pgscale(['forget', '--missing', '--pg', owner.url()])).toBe(0)
        for (const role of [owner, runtime]) {
          const { text, findings } = await doctor(role.url())
          expect(findings.filter((f) => f.level === 'fail')).toEqual([])
          expect(findings.map((f) => f.object)).toEqual(expect.arrayContaining([`"${schema}"."chunks"`, `"${schema}"."expenses_monthly"`]))
          expect(text).not.toContain(other)
        }
        expect(await pgscale(['drain', '--once', '--pg', runtime.url()])).toBe(0)
      }
    } finally {
      vi.restoreAllMocks()
    }
  })
})

describe('a database as store schema version 5 left it (every record in public.pgscale_object_version)', () => {
  const rt = useRuntimeRole(t, 'rt_legacy')
  const tableOwner = useRuntimeRole(t, 'own_legacy')
  const legacy = (table: string): PgVectorStoreConfig => ({ table: `legacy_s.${table}`, dimensions: DIM })

  beforeAll(async () => {
    await rt.create()
    await sql.raw(`create schema legacy_s; create schema legacy_f`).execute(t.db)
    for (const config of [legacy('l1'), legacy('l2'), { table: 'pub_chunks', dimensions: DIM }]) {
      await PgVectorStore.migration(config, { runtimeRole: rt.name }).up(t.db)
    }
    for (const table of ['f1', 'f2']) await (await PgVectorStore.open(t.db, { table: `legacy_f.${table}`, dimensions: DIM })).close()
    await asVersion5(t.db, 'legacy_s')
    await asVersion5(t.db, 'legacy_f')
    await sql.raw(`grant select on public.pgscale_object_version to ${rt.name}`).execute(t.db)
  })

  it('the runtime role opens a store before its owner migrates (reading the old table), and doctor says the records are not moved', async () => {
    await rt.as(async (db) => (await PgVectorStore.open(db, { ...legacy('l1'), migrate: false })).close())
    const records = await recordedObjects(t.db)
    expect(records.filter((r) => r.schema === 'legacy_s').map((r) => [r.key, r.keptIn])).toEqual([
      ['store:legacy_s.l1', 'public'],
      ['store:legacy_s.l2', 'public'],
    ])
    const findings = await doctorAll(t.db, { stores: [], rollups: [], records })
    expect(findings.filter((f) => f.check === 'not-moved').map((f) => f.object)).toEqual(
      expect.arrayContaining(['store:legacy_s.l1', 'store:legacy_s.l2']),
    )
  })

  it("two processes opening the schema's stores at once move each record once, and the runtime role still opens them", async () => {
    const second = t.url ? await connect(t.url, { maxConnections: 2 }) : t.db
    try {
      await Promise.all([
        PgVectorStore.open(t.db, legacy('l1')).then((s) => s.close()),
        PgVectorStore.open(second, legacy('l2')).then((s) => s.close()),
        PgVectorStore.open(second, legacy('l1')).then((s) => s.close()),
      ])
    } finally {
      if (second !== t.db) await second.close()
    }
    expect(await keysIn(t.db, 'legacy_s.pgscale_object_version')).toEqual(['store:legacy_s.l1', 'store:legacy_s.l2'])
    const left = await keysIn(t.db, 'public.pgscale_object_version')
    expect(left.filter((k) => k.startsWith('store:legacy_s.'))).toEqual([])
    expect(left).toContain('store:public.pub_chunks')
    const { rows } = await sql<{ object: string; same: boolean }>`
      select object, relid = to_regclass('legacy_s.' || split_part(object, '.', 2)) as same from legacy_s.pgscale_object_version order by 1`.execute(
      t.db,
    )
    expect(rows.map((r) => r.same)).toEqual([true, true])
    // SELECT on the new table went to the roles that could read the moved stores' tables.
    await rt.as(async (db) => {
      for (const table of ['l1', 'l2']) await (await PgVectorStore.open(db, { ...legacy(table), migrate: false })).close()
    })
  })

  it('a move that fails midway leaves every old record where it was; the next one moves them', async () => {
    await sql
      .raw(
        `create table legacy_f.pgscale_object_version (object text primary key, version integer not null, config jsonb not null, relid oid,
           constraint refuse_f2 check (object <> 'store:legacy_f.f2'))`,
      )
      .execute(t.db)
    const before = await keysIn(t.db, 'public.pgscale_object_version')
    const err = await PgVectorStore.open(t.db, { table: 'legacy_f.f1', dimensions: DIM }).catch((e: unknown) => e)
    expect(sqlState(err)).toBe('23514')
    expect(await keysIn(t.db, 'public.pgscale_object_version')).toEqual(before)
    expect(await keysIn(t.db, 'legacy_f.pgscale_object_version')).toEqual([])
    await sql.raw(`alter table legacy_f.pgscale_object_version drop constraint refuse_f2`).execute(t.db)
    await (await PgVectorStore.open(t.db, { table: 'legacy_f.f1', dimensions: DIM })).close()
    expect(await keysIn(t.db, 'legacy_f.pgscale_object_version')).toEqual(['store:legacy_f.f1', 'store:legacy_f.f2'])
  })

  it("the plain-SQL migration (pgscale migrate --print) moves the schema's records too, and a second run changes nothing", async () => {
    const config = { table: 'legacy_q.q1', dimensions: DIM }
    await sql.raw(`create schema legacy_q`).execute(t.db)
    await (await PgVectorStore.open(t.db, config)).close()
    await asVersion5(t.db, 'legacy_q')
    const text = await PgVectorStore.migrationSql(config)
    expect(text).toContain('"legacy_q"."pgscale_object_version"')
    for (let run = 0; run < 2; run++) {
      await sql.raw(text).execute(t.db)
      expect(await keysIn(t.db, 'legacy_q.pgscale_object_version')).toEqual(['store:legacy_q.q1'])
      expect((await keysIn(t.db, 'public.pgscale_object_version')).filter((k) => k.startsWith('store:legacy_q.'))).toEqual([])
    }
    const { rows } = await sql<{ same: boolean }>`
      select relid = to_regclass('legacy_q.q1') as same from legacy_q.pgscale_object_version`.execute(t.db)
    expect(rows[0]!.same).toBe(true)
  })

  it("a table's owner without CREATE on its schema still opens its store, the record left in the old table", async () => {
    await tableOwner.create()
    await sql.raw(`create schema legacy_p; grant usage on schema legacy_p to ${tableOwner.name}`).execute(t.db)
    await (await PgVectorStore.open(t.db, { table: 'legacy_p.p1', dimensions: DIM })).close()
    await asVersion5(t.db, 'legacy_p')
    await sql
      .raw(
        `do $$ declare r record; begin
           for r in select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'legacy_p' and c.relkind in ('r', 'p') loop
             execute format('alter table legacy_p.%I owner to ${tableOwner.name}', r.relname);
           end loop;
         end $$;
         grant select on public.pgscale_object_version to ${tableOwner.name}`,
      )
      .execute(t.db)
    await tableOwner.as(async (db) => (await PgVectorStore.open(db, { table: 'legacy_p.p1', dimensions: DIM })).close())
    expect(await exists(t.db, 'legacy_p.pgscale_object_version')).toBe(false)
    expect(await keysIn(t.db, 'public.pgscale_object_version')).toContain('store:legacy_p.p1')
  })

  it('a table dropped and created again is recognised (doctor warns), and its owner records it again', async () => {
    const config = legacy('l2')
    await sql.raw(`alter table legacy_s.l2 rename to l2_old; create table legacy_s.l2 (like legacy_s.l2_old including all)`).execute(t.db)
    const recreated = (await recordedObjects(t.db)).find((r) => r.key === 'store:legacy_s.l2')
    expect(recreated).toMatchObject({ missing: [], recreated: true })
    const findings = await doctorAll(t.db, { stores: [], rollups: [], records: await recordedObjects(t.db) })
    expect(findings.filter((f) => f.check === 'recreated').map((f) => [f.level, f.object])).toEqual([['warn', 'store:legacy_s.l2']])
    await (await PgVectorStore.open(t.db, config)).close()
    expect((await recordedObjects(t.db)).find((r) => r.key === 'store:legacy_s.l2')?.recreated).toBe(false)
  })
})
