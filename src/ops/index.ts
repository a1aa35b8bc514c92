/**
 * Operations a deployment runs on a schedule, behind the `pgscale` CLI: the config module that
 * declares stores and rollups (ops-config), finding what the database recorded when there is none
 * (recorded-stores; rollups: `MonthlyRollup.tracked`), and judging health for cron jobs to alert
 * on (findings, doctor, recall-check).
 *
 * May import: src/store, src/rollup, src/db, src/sql, src/util, src/errors.ts.
 */
export * from './ops-config.js' // the config module: stores, rollups, runtime role
export * from './recorded-stores.js' // stores the database recorded
export * from './findings.js' // what a check found, and the exit code it means
export * from './doctor.js' // store and rollup health from the catalog
export * from './recall-check.js' // the recall monitor against each tenant's target
export * from './ops-targets.js' // which stores and rollups a command works on
export * from './recorded-objects.js' // every record of pgscale_object_version, and which of its relations are gone
export * from './forget-records.js' // removing records of objects that no longer exist
export * from './doctor-run.js' // every doctor check, never stopping at an object that cannot be opened
