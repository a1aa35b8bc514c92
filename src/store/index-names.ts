import { createHash } from 'node:crypto'

const MAX_IDENTIFIER = 63

/** A name that fits PostgreSQL's 63-byte identifiers: `base_suffix`, `base` shortened with a hash if needed. */
export function fitIdentifier(base: string, suffix: string): string {
  const name = `${base}_${suffix}`
  if (name.length <= MAX_IDENTIFIER) return name
  const hash = shortHash(base, 8)
  return `${base.slice(0, MAX_IDENTIFIER - suffix.length - hash.length - 2)}_${hash}_${suffix}`
}

/** A stable lower-case hex hash of `value`, `length` characters long. */
export function shortHash(value: string, length: number): string {
  return createHash('sha256').update(value).digest('hex').slice(0, length)
}

/** Names of the store's indexes, derived from the table name. */
export function storeIndexNames(table: string): { primaryKey: string; searchText: string; sharedHnsw: string; tenantPrefix: string } {
  return {
    primaryKey: fitIdentifier(table, 'pkey'),
    searchText: fitIdentifier(table, 'search_text_gin'),
    sharedHnsw: fitIdentifier(table, 'embedding_hnsw'),
    tenantPrefix: fitIdentifier(table, 'tenant_'),
  }
}

/** The name of a tenant's own HNSW index: the table's prefix and a hash of the tenant id. */
export function tenantIndexName(table: string, tenantId: string): string {
  return `${storeIndexNames(table).tenantPrefix}${shortHash(tenantId, 16)}`
}
