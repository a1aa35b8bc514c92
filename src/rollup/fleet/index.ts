/**
 * Fleet rollups: a rollup's optional coarser levels — without the tenant (one row per local month
 * and kept group, every measure combined over all tenants), or per tenant (`perTenant`: one row
 * per tenant, month and kept group, the dropped groups combined) — declared with `fleetTable` and
 * kept by the rollup's own refreshes, rebuilds and drains in the transactions that change its
 * tenant buckets (deltas of sums, the touched months recomputed from the rollup table, or a
 * per-tenant level's rows rewritten from the rows the tenant statement wrote) — or, `deferred`,
 * only marked by them and recomputed later by `refreshFleet` —, read by
 * `readAcross` when they answer a view. Installed into the rollup's context through the
 * hooks its bucket operations call (`FleetHooks`), so they need not know it.
 *
 * May import: ../buckets, ../schema, ../sql, ../config, src/db, src/sql, src/util, src/errors.ts.
 */
export * from './fleet-table.js' // fleetTable: the level's declaration, DDL and fill
export * from './fleet-plan.js' // how each measure combines, and whether deltas keep the level exact
export * from './fleet-level.js' // the hooks: locks, statements, read routing, server checks
export * from './fleet-sql.js' // delta refresh and rebuild, recompute, fill, the deferred levels' marks
export * from './deferred-level.js' // a level kept by the drain: the read beside its pending months or buckets, refreshFleet
