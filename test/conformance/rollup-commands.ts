import fc from 'fast-check'
import { sql } from 'kysely'
import { expect } from 'vitest'
import { expectedFleetRows, expectedRollupRows, expectedTenantLevelRows, localMonth, materialize, type Model } from './model.js'
import { tenantArb, type Cmd, type World } from './writes.js'

/**
 * The rollup's commands: the app's own SQL on the source (`conf_events`, tracked, so every write
 * marks its bucket dirty), `refreshAt`, `refreshDirty` (a drain), `read` — plain (the buckets
 * as last refreshed) or `fresh: true` (the truth now) — and `readAcross` through the fleet level
 * (every tenant's buckets as last refreshed, combined), each read checked against the model.
 */

/** Moments around the local month boundaries of Asia/Kolkata (+05:30): 18:30Z is local midnight. */
const MOMENTS = [
  '2025-01-10T12:00:00Z',
  '2025-01-31T18:29:59Z',
  '2025-01-31T18:30:00Z',
  '2025-02-14T00:00:00Z',
  '2025-02-28T18:30:00Z',
  '2025-03-05T06:00:00Z',
]
const MONTHS = ['2025-01', '2025-02', '2025-03']
const show = (v: unknown) => JSON.stringify(v)

export class SourceInsert implements Cmd {
  readonly kind = 'sourceInsert'
  constructor(
    readonly tenant: string,
    readonly at: string,
    readonly category: string,
    readonly amount: number,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    const id = m.nextSourceId++
    await w.sourceWrite(this.tenant, 'insert into conf_events (id, tenant_id, at, category, amount) values ($1, $2, $3, $4, $5)', [
      id,
      this.tenant,
      this.at,
      this.category,
      this.amount,
    ])
    m.source.push({ id, tenant: this.tenant, at: this.at, category: this.category, amount: this.amount })
    m.dirty.add(`${this.tenant}|${localMonth(this.at)}`)
  }
  toString() {
    return `sql: insert into conf_events (${show(this.tenant)}, ${this.at}, ${show(this.category)}, ${this.amount})`
  }
}

export class SourceDelete implements Cmd {
  readonly kind = 'sourceDelete'
  constructor(
    readonly tenant: string,
    readonly pick: number,
  ) {}
  check = (m: Readonly<Model>) => m.source.some((r) => r.tenant === this.tenant)
  async run(m: Model, w: World) {
    const mine = m.source.filter((r) => r.tenant === this.tenant)
    const row = mine[this.pick % mine.length]!
    await w.sourceWrite(this.tenant, 'delete from conf_events where id = $1', [row.id])
    m.source = m.source.filter((r) => r.id !== row.id)
    m.dirty.add(`${this.tenant}|${localMonth(row.at)}`)
  }
  toString() {
    return `sql: delete from conf_events one row of ${show(this.tenant)} (#${this.pick})`
  }
}

export class RefreshAt implements Cmd {
  readonly kind = 'refreshAt'
  constructor(
    readonly tenant: string,
    readonly moment: string,
  ) {}
  check = () => true
  async run(m: Model, w: World) {
    await w.rollup.refreshAt(w.rollupDb, { tenantId: this.tenant, moment: this.moment })
    materialize(m, `${this.tenant}|${localMonth(this.moment)}`)
  }
  toString() {
    return `rollup.refreshAt(${show(this.tenant)}, ${this.moment})`
  }
}

export class RefreshDirty implements Cmd {
  readonly kind = 'refreshDirty'
  check = () => true
  async run(m: Model, w: World) {
    const result = await w.rollup.refreshDirty(w.rollupDb)
    expect(result.remaining, `${this}: the log drained`).toBe(0)
    for (const key of m.dirty) materialize(m, key)
    m.dirty.clear()
  }
  toString() {
    return 'rollup.refreshDirty()'
  }
}

/** `refreshFleet`: the deferred level's pending months recomputed; no answer changes (the model is untouched). */
export class RefreshFleet implements Cmd {
  readonly kind = 'refreshFleet'
  check = () => true
  async run(_m: Model, w: World) {
    const result = await w.rollup.refreshFleet(w.rollupDb)
    expect(result.remaining, `${this}: nothing left pending`).toBe(0)
  }
  toString() {
    return 'rollup.refreshFleet()'
  }
}

export class RollupRead implements Cmd {
  readonly kind = 'rollupRead'
  constructor(
    readonly tenant: string,
    readonly from: string,
    readonly to: string,
    readonly fresh: boolean,
    readonly combine: boolean,
  ) {}
  check = () => this.from <= this.to
  async run(m: Model, w: World) {
    const rows = await w.rollup.read(w.rollupReader, {
      tenantId: this.tenant,
      from: this.from,
      to: this.to,
      ...(this.fresh ? { fresh: true } : {}),
      ...(this.combine ? { groupBy: [] } : {}),
    })
    const got = rows.map((r) => ({ ...r, total: Number(r.total), count: Number(r.count) }))
    expect(got, String(this)).toEqual(expectedRollupRows(m, this.tenant, this.from, this.to, this.fresh, this.combine))
  }
  toString() {
    return `rollup.read(${show(this.tenant)}, ${this.from}..${this.to}${this.fresh ? ', fresh' : ''}${this.combine ? ', groupBy []' : ''})`
  }
}

/**
 * A read of the fleet level: `readAcross` without tenant detail (per month and category, per
 * month, or over the range), which the rollup answers from `conf_fleet` — through the mode's
 * reader (a ReplicaSet in the replicas mode: it must see every refresh this process made).
 */
export class FleetRead implements Cmd {
  readonly kind = 'fleetRead'
  constructor(
    readonly from: string,
    readonly to: string,
    readonly combine: boolean,
    readonly combineMonths: boolean,
  ) {}
  check = () => this.from <= this.to
  async run(m: Model, w: World) {
    const options = { from: this.from, to: this.to, groupBy: this.combine ? [] : ['category'], combineMonths: this.combineMonths }
    // Per category: the level kept by deltas; without groups: the deferred one (beside its pending months).
    const level = this.combine ? '"conf_fleet_months"' : '"conf_fleet"'
    expect(w.rollup.readAcrossQuery(w.admin, options).compile(w.admin).sql, `${this}: reads the fleet level`).toContain(level)
    const rows = await w.rollup.readAcross(w.rollupReader, options)
    const got = rows.map((r) => ({ ...r, total: Number(r.total), count: Number(r.count) }))
    expect(got, String(this)).toEqual(expectedFleetRows(m, this.from, this.to, this.combine, this.combineMonths))
  }
  toString() {
    return `rollup.readAcross(${this.from}..${this.to}${this.combine ? ', groupBy []' : ''}${this.combineMonths ? ', combineMonths' : ''}) (fleet level)`
  }
}

/**
 * A read of the per-tenant level: `readAcross({ perTenant: true, groupBy: [] })` (per month, or
 * over the range), which the rollup answers from `conf_by_tenant` — through the mode's reader.
 */
export class TenantLevelRead implements Cmd {
  readonly kind = 'tenantLevelRead'
  constructor(
    readonly from: string,
    readonly to: string,
    readonly combineMonths: boolean,
  ) {}
  check = () => this.from <= this.to
  async run(m: Model, w: World) {
    const options = { from: this.from, to: this.to, groupBy: [], perTenant: true, combineMonths: this.combineMonths }
    expect(w.rollup.readAcrossQuery(w.admin, options).compile(w.admin).sql, `${this}: reads the per-tenant level`).toContain(
      '"conf_by_tenant"',
    )
    const rows = await w.rollup.readAcross(w.rollupReader, options)
    const got = rows
      .map((r) => ({ month: r.month, tenant_id: String(r.tenant_id), total: Number(r.total), count: Number(r.count) }))
      .sort((a, b) => (JSON.stringify([a.month, a.tenant_id]) < JSON.stringify([b.month, b.tenant_id]) ? -1 : 1))
    expect(got, String(this)).toEqual(expectedTenantLevelRows(m, this.from, this.to, this.combineMonths))
  }
  toString() {
    return `rollup.readAcross(${this.from}..${this.to}, perTenant, groupBy []${this.combineMonths ? ', combineMonths' : ''}) (per-tenant level)`
  }
}

/** Under rls: the fleet table, as the runtime role with a tenant set (or none), shows no row: fleet-wide admin data. */
export class RawFleetRead implements Cmd {
  readonly kind = 'rawFleetRead'
  constructor(readonly tenant: string | undefined) {}
  check = () => true
  async run(_m: Model, w: World) {
    for (const table of ['conf_fleet', 'conf_fleet_months', 'conf_fleet_months_pending'])
      expect(await w.rawAs!(this.tenant, `select * from ${table}`), `${this} (${table})`).toEqual([])
  }
  toString() {
    return `raw SQL as the runtime role, ${this.tenant === undefined ? 'no tenant set' : `tenant ${show(this.tenant)} set`}: select * from conf_fleet`
  }
}

/** The rollup's commands by kind. */
export const rollupCommands: Record<string, () => fc.Arbitrary<Cmd>> = {
  sourceInsert: () =>
    fc
      .tuple(tenantArb, fc.constantFrom(...MOMENTS), fc.constantFrom('food', 'rent'), fc.integer({ min: 1, max: 50 }))
      .map(([t, at, c, a]) => new SourceInsert(t, at, c, a)),
  sourceDelete: () => fc.tuple(tenantArb, fc.nat(20)).map(([t, p]) => new SourceDelete(t, p)),
  refreshAt: () => fc.tuple(tenantArb, fc.constantFrom(...MOMENTS)).map(([t, at]) => new RefreshAt(t, at)),
  refreshDirty: () => fc.constant(new RefreshDirty()),
  refreshFleet: () => fc.constant(new RefreshFleet()),
  rollupRead: () =>
    fc
      .tuple(tenantArb, fc.constantFrom(...MONTHS), fc.constantFrom(...MONTHS), fc.boolean(), fc.boolean())
      .map(([t, f, to, fresh, c]) => new RollupRead(t, f, to, fresh, c)),
  fleetRead: () =>
    fc
      .tuple(fc.constantFrom(...MONTHS), fc.constantFrom(...MONTHS), fc.boolean(), fc.boolean())
      .map(([f, to, c, cm]) => new FleetRead(f, to, c, cm)),
  tenantLevelRead: () =>
    fc.tuple(fc.constantFrom(...MONTHS), fc.constantFrom(...MONTHS), fc.boolean()).map(([f, to, cm]) => new TenantLevelRead(f, to, cm)),
  rawFleetRead: () => fc.option(tenantArb, { freq: 4, nil: undefined }).map((t) => new RawFleetRead(t)),
}

/** The source table and the rollup over it (Asia/Kolkata months, by category), created by the owner. */
export const SOURCE_DDL = `create table conf_events (id int primary key, tenant_id text not null, at timestamptz not null,
  category text not null, amount int not null)`
export const sourceIndex = sql`create index on conf_events (tenant_id, at)`
