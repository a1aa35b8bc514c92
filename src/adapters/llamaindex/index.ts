/**
 * pgscale/llamaindex: LlamaIndex.TS's `BaseVectorStore` on a tenant-scoped pgscale store. One
 * adapter per tenant (`PgScaleVectorStore.forTenant(store, tenantId, { embedModel })`): nodes are
 * rows of that tenant, `delete(refDocId)` removes a source document's nodes, and `query` serves
 * LlamaIndex's filters (mapped to pgscale's filter language, or refused where no exact form exists),
 * `docIds` and the default, hybrid and MMR modes. The store (pgscale-vector-store), LlamaIndex's
 * filters in pgscale's language (filters), nodes as rows and back (nodes), a query checked and
 * planned (query-plan) and run (search). Requires @llamaindex/core (an optional peer dependency);
 * framework.d.ts declares the part of it the main build compiles against.
 *
 * May import: src/store (through src/store/index.ts), src/filter, src/sql, src/util, src/errors.ts.
 */
export { PgScaleVectorStore, type PgScaleVectorStoreOptions } from './pgscale-vector-store.js' // the BaseVectorStore, bound to one tenant
export { toPgScaleFilter, type TranslatedFilters } from './filters.js' // MetadataFilters → pgscale's filter language
export { REF_DOC_ID_KEY } from './nodes.js' // the metadata key of a node's ref doc id
export type { PgScaleQueryMode, PgScaleQueryParams } from './query-plan.js' // the modes served; customParams
