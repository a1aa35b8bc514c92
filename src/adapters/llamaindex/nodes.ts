import type { BaseNode, MetadataMode } from '@llamaindex/core/schema'
import { metadataDictToNode, nodeToMetadata } from '@llamaindex/core/vector-store'
import { InvalidArgumentError } from '../../errors.js'
import type { FoundChunk, UpsertChunkInput } from '../../store/index.js'

/**
 * The metadata key that holds a node's ref doc id (its SOURCE relationship: the document it was
 * split from), as LlamaIndex's `nodeToMetadata` writes it. `delete(refDocId)` deletes the rows
 * whose metadata has it; `store.createMetadataIndex('ref_doc_id', 'string')` indexes it.
 *
 * ### Examples
 * ```ts
 * await store.createMetadataIndex(REF_DOC_ID_KEY, 'string') // once, by the table's owner: ref-doc deletes use it
 * const nodes = await vectorStore.client().count({ [REF_DOC_ID_KEY]: 'handbook' })
 * ```
 */
export const REF_DOC_ID_KEY = 'ref_doc_id'

/** The keys `nodeToMetadata` fills with the ref doc id, or with "None" for a node without one. */
const SOURCE_KEYS = ['document_id', 'doc_id', REF_DOC_ID_KEY] as const

/**
 * A node as the row `upsertChunks` writes: the node id as the document id (a document of one
 * chunk), its text as the content (full-text indexed), its embedding, and as metadata what
 * LlamaIndex's own stores write, `nodeToMetadata(node, removeText = true)`: the node's metadata,
 * `_node_content` (the node without text, metadata and embedding, as JSON), `_node_type`, and the
 * ref doc id under `document_id`, `doc_id` and `ref_doc_id` — left out for a node with no source,
 * which `nodeToMetadata` would mark "None" (SimpleVectorStore keeps such a node out of every
 * ref doc). A node without an embedding is an {@link InvalidArgumentError}.
 *
 * ### Examples
 * ```ts
 * const row = nodeToChunk(node, 'add node 0') // { id: node.id_, content: node.text, metadata: { ..., ref_doc_id: 'doc-1' }, embedding }
 * ```
 */
export function nodeToChunk(node: BaseNode, at: string): UpsertChunkInput {
  if (node === null || typeof node !== 'object' || typeof node.toMutableJSON !== 'function') {
    throw new InvalidArgumentError(`${at}: expected a LlamaIndex node (BaseNode)`)
  }
  if (!Array.isArray(node.embedding)) {
    throw new InvalidArgumentError(
      `${at}: node ${JSON.stringify(node.id_)} has no embedding (VectorStoreIndex embeds nodes before add; ` +
        'set node.embedding when calling add directly)',
    )
  }
  const metadata = nodeToMetadata(node, true, 'text', false)
  if (!node.sourceNode) for (const key of SOURCE_KEYS) delete metadata[key]
  return { id: node.id_, content: textOf(node), metadata, embedding: node.embedding }
}

/** A text node's text as it is (its `getContent` would trim it); another node's content without metadata. */
function textOf(node: BaseNode): string {
  const text = (node as { text?: unknown }).text
  return typeof text === 'string' ? text : node.getContent('NONE' as MetadataMode)
}

/**
 * The node id of a stored chunk: the document id, which is the node id of every row `add` wrote
 * (chunk 0); a chunk past the first of a document written otherwise (`replaceDocument`,
 * `bulkIngest`) is `documentId#chunkIndex`.
 *
 * ### Examples
 * ```ts
 * nodeIdOf({ documentId: 'n-1', chunkIndex: 0 }) // 'n-1'
 * nodeIdOf({ documentId: 'report', chunkIndex: 3 }) // 'report#3'
 * ```
 */
export function nodeIdOf(chunk: Pick<FoundChunk, 'documentId' | 'chunkIndex'>): string {
  return chunk.chunkIndex === 0 ? chunk.documentId : `${chunk.documentId}#${chunk.chunkIndex}`
}

/**
 * The node a stored chunk holds, rebuilt by LlamaIndex's `metadataDictToNode` (its class, id,
 * relationships and metadata from `_node_content`, `_node_type` and the metadata) with the
 * content as its text. A row that was not written through the adapter (no `_node_content`)
 * becomes a `TextNode` of its content and metadata, with the id {@link nodeIdOf}.
 *
 * ### Examples
 * ```ts
 * const node = chunkToNode(hit) // a TextNode: node.id_ === hit.documentId, node.text === hit.content
 * ```
 */
export function chunkToNode(chunk: FoundChunk): BaseNode {
  const id = nodeIdOf(chunk)
  if (typeof chunk.metadata._node_content !== 'string') {
    return metadataDictToNode(chunk.metadata, { fallback: { id_: id, text: chunk.content, metadata: chunk.metadata } })
  }
  const node = metadataDictToNode(chunk.metadata)
  node.setContent(chunk.content)
  node.id_ = id
  return node
}
