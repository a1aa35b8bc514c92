/**
 * The store's configuration and everything derived from it without a database: the options and
 * their validation (store-config, query-sample-options), the vector types and their SQL
 * (vector-type), the names of its tables and indexes (index-names), and every statement it sends,
 * rendered once per store (store-sql). Pure: nothing here talks to a server.
 *
 * May import: src/sql, src/util, src/errors.ts.
 */
export * from './store-config.js' // options and their resolved form
export * from './query-sample-options.js' // the querySample option
export * from './vector-type.js' // vector types, quantization and their SQL
export * from './index-names.js' // names of the tables and indexes
export * from './store-sql.js' // precompiled statements
