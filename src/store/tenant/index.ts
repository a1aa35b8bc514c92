/**
 * One tenant's reads and writes: the handle `forTenant` returns (tenant-store), its filtered
 * search, its budget from the tenant's tuning and what `auto` learned about filters (filtered-search,
 * filtered-budget, filtered-sql, filter-verdicts), the
 * metadata reads and deletes (metadata-queries), what a filter-taking module needs (tenant-scope),
 * and the sample of query embeddings its searches record (query-sample). The chunk-level
 * capabilities framework adapters build on: batched upserts of single-chunk documents
 * (upsert-chunks), chunks by id (get-chunks), metadata and embedding updates (update-metadata),
 * MMR (marginal-relevance), over their statements (chunk-statements) and the writers' locks
 * (document-locks). Every statement here carries `tenant_id = $1`.
 *
 * May import: ../ingest, ../schema, ../config, src/db, src/filter, src/sql, src/util, src/errors.ts.
 */
export * from './tenant-store.js' // the tenant handle
export * from './tenant-scope.js' // what filter-taking modules need
export * from './search/filtered-search.js' // the filtered walk or exact path
export * from './search/filtered-budget.js' // what a tenant's filtered search may spend
export * from './search/filtered-sql.js' // statements that take a compiled filter
export * from './search/web-search-text.js' // a hybrid search's text, safe for websearch_to_tsquery
export * from './search/filter-verdicts.js' // remembered filter verdicts
export * from './metadata-queries.js' // find, count and deleteWhere
export * from './search/query-sample.js' // the sample of query embeddings
export * from './writes/document-locks.js' // writers' advisory locks: documents, the tenant
export * from './writes/chunk-statements.js' // statements of the chunk-level capabilities
export * from './writes/upsert-chunks.js' // batched upserts of single-chunk documents
export * from './get-chunks.js' // chunks by document id
export * from './writes/update-metadata.js' // metadata and embedding updates by ids or filter
export * from './search/marginal-relevance.js' // maximal marginal relevance, and the search built on it
export * from './replica-reads.js' // how a tenant handle reads from replicas
