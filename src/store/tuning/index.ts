/**
 * Keeping each tenant fast and right as it grows: tiers (which tenant gets its own index; the
 * work of `optimize()`, tenant-tiers), recall measured against the exact scan (recall,
 * measure-recall) and bounded over queries (recall-bound), the queries tuning uses before traffic
 * (query-model), tuning each tenant's `ef_search` to a target (tune-recall) and the cheaper ways
 * tried before a near-exhaustive one (tuner-alternatives: rebuilds, quantized paths; binary-trial:
 * binary quantization with re-rank measured on the tenant), its filtered path (filtered/: the
 * searches it is tuned on, synthetic filters over declared fields, the walk's budget and exact
 * threshold), and the record of recall over time (recall-monitor).
 *
 * May import: ../tenant, ../ingest, ../schema, ../config, src/db, src/filter, src/sql, src/util,
 * src/errors.ts.
 */
export * from './tenant-tiers.js' // optimize(): tiers and index builds
export * from './recall.js' // tie-aware recall
export * from './recall-bound.js' // a one-sided bound on mean per-query recall (the query is the unit)
export * from './query-model.js' // tuning queries never stored, at the tenant's own scale
export * from './tenant-vectors.js' // a tenant read whole for tuning: the model's neighbours, exact answers in memory
export * from './measure-recall.js' // recall against the exact scan
export * from './tune-recall.js' // the cheapest ef_search that meets the target
export * from './tuner-alternatives.js' // rebuilds and quantized paths before a near-exhaustive ef_search
export * from './binary-trial.js' // a binary-quantized index of one tenant built, measured and dropped
export * from './filtered/filtered-tuning.js' // a tenant's filtered path: walk budget and exact threshold
export * from './filtered/filter-cases.js' // the filtered searches tuning measures
export * from './filtered/tuning-filters.js' // synthetic filters over declared fields
export * from './recall-monitor.js' // recall figures over time
