import { fitIdentifier, shortHash } from '../../sql/identifier.js'

/** Names of the store's indexes, derived from the table name. */
export function storeIndexNames(table: string): { primaryKey: string; searchText: string; sharedHnsw: string; tenantPrefix: string } {
  return {
    primaryKey: fitIdentifier(table, 'pkey'),
    searchText: fitIdentifier(table, 'search_text_gin'),
    sharedHnsw: fitIdentifier(table, 'embedding_hnsw'),
    // Fitted with room for the tenant's hash, so a long table name never pushes it past 63 bytes
    // (PostgreSQL would truncate the names and every tenant's index would collide).
    tenantPrefix: fitIdentifier(table, `tenant_${'0'.repeat(TENANT_HASH)}`).slice(0, -TENANT_HASH),
  }
}

const TENANT_HASH = 16

/** The name of a tenant's own HNSW index: the table's prefix and a hash of the tenant id; at most 63 bytes. */
export function tenantIndexName(table: string, tenantId: string): string {
  return `${storeIndexNames(table).tenantPrefix}${shortHash(tenantId, TENANT_HASH)}`
}

/**
 * The name a tenant's index is rebuilt under before it replaces the old one (`rebuildTenantIndex`):
 * the table's rebuild prefix and the tenant's hash; at most 63 bytes.
 *
 * ### Examples
 * ```ts
 * tenantRebuildIndexName('rag_chunks', 'acme') // 'rag_chunks_rebuild_…'
 * ```
 */
export function tenantRebuildIndexName(table: string, tenantId: string): string {
  const prefix = fitIdentifier(table, `rebuild_${'0'.repeat(TENANT_HASH)}`).slice(0, -TENANT_HASH)
  return `${prefix}${shortHash(tenantId, TENANT_HASH)}`
}

/**
 * The name of a tenant's trial index (`tryBinaryRerank`: a binary-quantized index built, measured
 * and dropped by `optimize()`): the table's trial prefix and the tenant's hash; at most 63 bytes.
 *
 * ### Examples
 * ```ts
 * tenantTrialIndexName('rag_chunks', 'acme') // 'rag_chunks_bintrial_…'
 * ```
 */
export function tenantTrialIndexName(table: string, tenantId: string): string {
  const prefix = fitIdentifier(table, `bintrial_${'0'.repeat(TENANT_HASH)}`).slice(0, -TENANT_HASH)
  return `${prefix}${shortHash(tenantId, TENANT_HASH)}`
}

/** The name of a partitioned store's partition `remainder` (`<table>_p<remainder>`, in the store's schema). */
export function partitionName(table: string, remainder: number): string {
  return fitIdentifier(table, `p${remainder}`)
}

/** The store's tuning table (`<table>_tenant_tuning`, in the store's schema), safe to interpolate. */
export function tuningTable(config: { schema?: string; table: string }): string {
  const name = fitIdentifier(config.table, 'tenant_tuning')
  return config.schema ? `"${config.schema}"."${name}"` : `"${name}"`
}

/** The store's query sample table (`<table>_query_sample`), safe to interpolate. */
export function querySampleTable(config: { schema?: string; table: string }): string {
  const name = fitIdentifier(config.table, 'query_sample')
  return config.schema ? `"${config.schema}"."${name}"` : `"${name}"`
}

/** The store's recall monitor table (`<table>_recall_monitor`), safe to interpolate. */
export function recallMonitorTable(config: { schema?: string; table: string }): string {
  const name = fitIdentifier(config.table, 'recall_monitor')
  return config.schema ? `"${config.schema}"."${name}"` : `"${name}"`
}

/** A partition of the query sample table (`<table>_query_sample_p<n>`), unquoted. */
export function querySamplePartition(table: string, remainder: number): string {
  return fitIdentifier(fitIdentifier(table, 'query_sample'), `p${remainder}`)
}
