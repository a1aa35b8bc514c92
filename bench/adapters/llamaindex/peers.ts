import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { BaseEmbedding } from '@llamaindex/core/embeddings'
import type { BaseNode, Metadata, TextNodeParams } from '@llamaindex/core/schema'
import type { MetadataFilters, VectorStoreQuery, VectorStoreQueryResult } from '@llamaindex/core/vector-store'

/** The example app whose node_modules hold LlamaIndex.TS and the packed pgscale (`npm run adapters:install -- llamaindex`). */
export const LLAMAINDEX_APP = join(import.meta.dirname, '..', '..', '..', 'examples', 'llamaindex')

/** The part of @llamaindex/postgres 0.0.66's `PGVectorStore` the bench uses (its own declarations are not in the main build). */
export interface LlamaPgVectorStore {
  setCollection(collection: string): void
  add(nodes: BaseNode[]): Promise<string[]>
  query(query: VectorStoreQuery): Promise<VectorStoreQueryResult>
  client(): Promise<{ close(): Promise<void> }>
}

/** What the bench loads: pgscale as an app installs it (the packed copy), and LlamaIndex.TS beside it. */
export interface LlamaIndexPeers {
  pgscale: typeof import('pgscale')
  adapter: typeof import('pgscale/llamaindex')
  TextNode: new (init: TextNodeParams<Metadata>) => BaseNode
  /** An embedding model that is never called (every node and query comes with its vector). */
  embedModel: BaseEmbedding
  PGVectorStore: new (config: {
    clientConfig: { connectionString: string }
    tableName: string
    dimensions: number
    embedModel: BaseEmbedding
  }) => LlamaPgVectorStore
  /** `MetadataFilters` as LlamaIndex takes them (the same object goes to both stores). */
  filters(key: string, values: string[]): MetadataFilters
}

/**
 * Loads the packed pgscale (`examples/llamaindex/node_modules/pgscale`: what `npm run build && npm
 * run adapters:install -- llamaindex` installed), its LlamaIndex adapter, and @llamaindex/postgres
 * and @llamaindex/core from the same node_modules, by their ESM entry files: from bench/, Node would
 * not find them, and one copy of @llamaindex/core serves both stores. Throws with the install
 * command when they are missing.
 *
 * ### Examples
 * ```ts
 * const peers = await loadLlamaIndexPeers()
 * const vectorStore = peers.adapter.PgScaleVectorStore.forTenant(store, 't0', { embedModel: peers.embedModel })
 * ```
 */
export async function loadLlamaIndexPeers(): Promise<LlamaIndexPeers> {
  const modules = join(LLAMAINDEX_APP, 'node_modules')
  if (
    !existsSync(join(modules, 'pgscale', 'dist', 'src', 'adapters', 'llamaindex', 'index.js')) ||
    !existsSync(join(modules, '@llamaindex', 'postgres'))
  ) {
    throw new Error(
      'the bench needs examples/llamaindex installed with a fresh pgscale: run npm run build && npm run adapters:install -- llamaindex',
    )
  }
  const [pgscale, adapter, schema, embeddings, postgres] = await Promise.all([
    importEntry(modules, 'pgscale', '.'),
    importEntry(modules, 'pgscale', './llamaindex'),
    importEntry(modules, '@llamaindex/core', './schema'),
    importEntry(modules, '@llamaindex/core', './embeddings'),
    importEntry(modules, '@llamaindex/postgres', '.'),
  ])
  class Unused extends (embeddings.BaseEmbedding as typeof BaseEmbedding) {
    constructor() {
      super()
    }
    async getTextEmbedding(): Promise<number[]> {
      throw new Error('the bench passes every vector; nothing is embedded')
    }
  }
  return {
    pgscale,
    adapter,
    TextNode: schema.TextNode,
    embedModel: new Unused(),
    PGVectorStore: postgres.PGVectorStore,
    filters: (key, values) => ({ filters: [{ key, operator: 'in', value: values }] }),
  }
}

/** A package's ESM entry for `subpath`, read from its `exports` (`import` condition), imported by file URL. */
async function importEntry(modules: string, name: string, subpath: string): Promise<any> {
  const dir = join(modules, name)
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { exports: Record<string, unknown> }
  const entry = esmTarget(manifest.exports[subpath])
  if (!entry) throw new Error(`${name} has no ESM entry for ${subpath}`)
  return import(pathToFileURL(join(dir, entry)).href)
}

function esmTarget(target: unknown): string | undefined {
  if (typeof target === 'string') return target
  if (target === null || typeof target !== 'object') return undefined
  const conditions = target as Record<string, unknown>
  return esmTarget(conditions.import) ?? esmTarget(conditions.default)
}
