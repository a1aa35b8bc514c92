/**
 * Rows going in: values checked (embedding: vectors, ids, k, metadata), encoded for binary COPY
 * (binary-copy), and the bulk load that streams them with its index strategy (bulk-ingest).
 *
 * May import: ../schema, ../config, src/db, src/sql, src/util, src/errors.ts.
 */
export * from './embedding.js' // input checks: vectors, ids, k, metadata
export * from './vector-literal.js' // pgvector's text form of a vector
export * from './binary-copy.js' // PostgreSQL's binary COPY format
export * from './bulk-ingest.js' // COPY ingest with an index strategy
