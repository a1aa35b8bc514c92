import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { BaseEmbedding } from '@llamaindex/core/embeddings'
import type { BaseNode, Metadata, TextNode } from '@llamaindex/core/schema'
import type { VectorStoreQuery, VectorStoreQueryResult } from '@llamaindex/core/vector-store'

/**
 * What the LlamaIndex.TS suites share. The framework lives in the example app (examples/llamaindex,
 * `npm run adapters:install -- llamaindex`), not in the main install: without it the suites are
 * skipped with {@link LLAMAINDEX_MISSING} as the reason. Everything that loads the framework is
 * imported here, inside the suites' hooks, so a file without the framework still loads; vitest
 * resolves the `@llamaindex/*` and `llamaindex` imports of the tests and of the adapter from the
 * example app (vitest.config.ts), one copy of @llamaindex/core for both.
 */
const CORE = fileURLToPath(new URL('../../../examples/llamaindex/node_modules/@llamaindex/core/package.json', import.meta.url))
const LLAMAINDEX = fileURLToPath(new URL('../../../examples/llamaindex/node_modules/llamaindex/package.json', import.meta.url))

/**
 * `llamaindex` (VectorStoreIndex, Settings, SimpleVectorStore) as the example app installs it. Its
 * types are read from that install by path (tsconfig.adapters.json maps `@llamaindex/core/*` only);
 * at run time vitest resolves the bare name from the example app like every framework import.
 */
export type LlamaIndexModule = typeof import('../../../examples/llamaindex/node_modules/llamaindex/dist/type/index.js')
const LLAMAINDEX_ENTRY: string = 'llamaindex'

/** Why the LlamaIndex suites cannot run here ('' when they can). */
export const LLAMAINDEX_MISSING =
  existsSync(CORE) && existsSync(LLAMAINDEX)
    ? ''
    : 'needs @llamaindex/core and llamaindex in examples/llamaindex/node_modules: run npm run adapters:install -- llamaindex'

/** The adapter, from source (what `pgscale/llamaindex` builds from). */
export type Adapter = typeof import('../../../src/adapters/llamaindex/index.js')
export type PgScaleVectorStore = import('../../../src/adapters/llamaindex/index.js').PgScaleVectorStore

/** The adapter and the parts of LlamaIndex.TS the suites use, loaded. */
export interface LlamaIndexKit {
  adapter: Adapter
  schema: typeof import('@llamaindex/core/schema')
  vectorStore: typeof import('@llamaindex/core/vector-store')
  llamaindex: LlamaIndexModule
  MockLLM: typeof import('@llamaindex/core/llms/mock').MockLLM
  SentenceSplitter: typeof import('@llamaindex/core/node-parser').SentenceSplitter
  /** A deterministic {@link BaseEmbedding} of `dimensions`: a bias plus one hashed bucket per word. */
  hashEmbedding(dimensions: number): BaseEmbedding
  /**
   * A TextNode with its embedding, and `refDocId` as its SOURCE (the document it was split from);
   * without `refDocId`, a node with no source.
   */
  node(id: string, text: string, embedding: number[], metadata?: Metadata, refDocId?: string): TextNode
}

/**
 * Loads the adapter and LlamaIndex.TS (call in `beforeAll` of a suite that LLAMAINDEX_MISSING guards).
 *
 * ### Examples
 * ```ts
 * describeUnless(LLAMAINDEX_MISSING)('…', () => { let kit: LlamaIndexKit; beforeAll(async () => { kit = await loadLlamaIndex() }) })
 * ```
 */
export async function loadLlamaIndex(): Promise<LlamaIndexKit> {
  const [adapter, schema, vectorStore, embeddings, mock, nodeParser, llamaindex] = await Promise.all([
    import('../../../src/adapters/llamaindex/index.js'),
    import('@llamaindex/core/schema'),
    import('@llamaindex/core/vector-store'),
    import('@llamaindex/core/embeddings'),
    import('@llamaindex/core/llms/mock'),
    import('@llamaindex/core/node-parser'),
    import(LLAMAINDEX_ENTRY) as Promise<LlamaIndexModule>,
  ])

  class HashEmbedding extends embeddings.BaseEmbedding {
    constructor(readonly dimensions: number) {
      super()
    }
    async getTextEmbedding(text: string): Promise<number[]> {
      return hashVector(text, this.dimensions)
    }
  }

  return {
    adapter,
    schema,
    vectorStore,
    llamaindex,
    MockLLM: mock.MockLLM,
    SentenceSplitter: nodeParser.SentenceSplitter,
    hashEmbedding: (dimensions) => new HashEmbedding(dimensions),
    node: (id, text, embedding, metadata = {}, refDocId) =>
      new schema.TextNode({
        id_: id,
        text,
        embedding,
        metadata,
        relationships: refDocId === undefined ? {} : { [schema.NodeRelationship.SOURCE]: { nodeId: refDocId, metadata: {} } },
      }),
  }
}

/**
 * A word-hash vector: 0.1 in the first dimension (never the zero vector) and 1 in a bucket (FNV-1a
 * of the lower-cased word) for each word, so texts that share words are near.
 *
 * ### Examples
 * ```ts
 * hashVector('Cats purr', 64) // [0.1, 0, …, 1 (cats), …, 1 (purr), …]
 * ```
 */
export function hashVector(text: string, dimensions: number): number[] {
  const v = new Array<number>(dimensions).fill(0)
  v[0] = 0.1
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let h = 0x811c9dc5
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0
    v[1 + (h % (dimensions - 1))]! += 1
  }
  return v
}

/** The node ids of a result, sorted: what two stores that agree on a filter return alike. */
export function sortedIds(result: VectorStoreQueryResult): string[] {
  return [...result.ids].sort()
}

/** Every node id of a store that matches a query: `similarityTopK` past the corpus. */
export async function allIds(
  store: { query(q: VectorStoreQuery): Promise<VectorStoreQueryResult> },
  q: VectorStoreQuery,
): Promise<string[]> {
  return sortedIds(await store.query({ ...q, similarityTopK: 1000 }))
}

/** A result's nodes as plain objects (id, text, metadata, ref doc id): what `toEqual` compares across stores. */
export function plainNodes(result: VectorStoreQueryResult): Array<{ id: string; text: string; metadata: Metadata; refDocId?: string }> {
  return (result.nodes ?? []).map((n: BaseNode) => ({
    id: n.id_,
    text: (n as TextNode).text,
    metadata: n.metadata,
    ...(n.sourceNode ? { refDocId: n.sourceNode.nodeId } : {}),
  }))
}
