import type { IngestRow, MetadataFilter, ProvisionedDatabase } from '../../../src/index.js'

/** A peer store measured beside pgscale on the same rows, queries and filters. */
export interface FilterPeer {
  name: string
  version: string
  /** Loads the rows (all tenants) into the peer's own table. */
  load(rows: Iterable<IngestRow>): Promise<void>
  /** The peer's top 10 for the query within the tenant, under the filter written in the peer's syntax. */
  search(
    tenant: string,
    query: Float32Array,
    filter: MetadataFilter,
  ): Promise<Array<{ documentId: string; chunkIndex: number; distance: number }>>
  close(): Promise<void>
}

/** The peers found installed, and those that were not (with why). */
export interface FilterPeers {
  peers: FilterPeer[]
  skipped: Array<{ name: string; skipped: string }>
}

/**
 * The peers installed as bench-only dependencies (none is a dependency of pgscale).
 *
 * ### Examples
 * ```ts
 * const { peers, skipped } = await loadFilterPeers(provisioned, { dim: 128 }, console.error)
 * ```
 */
export async function loadFilterPeers(
  _provisioned: ProvisionedDatabase,
  _config: { dim: number },
  log: (line: string) => void,
): Promise<FilterPeers> {
  const skipped = [
    { name: 'Mastra @mastra/pg PgVector', skipped: 'not installed (npm run bench:peers:install)' },
    { name: 'LangChain PGVectorStore', skipped: 'not installed (npm run bench:peers:install)' },
  ]
  for (const s of skipped) log(`peer ${s.name}: ${s.skipped}`)
  return { peers: [], skipped }
}
