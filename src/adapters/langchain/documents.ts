import { randomUUID } from 'node:crypto'
import { Document, type DocumentInterface } from '@langchain/core/documents'
import { InvalidArgumentError } from '../../errors.js'
import { assertId } from '../../store/index.js'

/** A chunk as the store returns it: a search hit or a stored chunk. */
interface ChunkLike {
  documentId: string
  content: string
  metadata: Record<string, unknown>
}

/**
 * The id each document is written under: `ids[i]` when the caller passed `ids` (what
 * `@langchain/core/indexing`'s `index()` does, with documents that carry none), else the
 * document's own `id`, else a new random UUID. Checks the shapes first (nothing is embedded or sent
 * for a bad call): an array of documents, and `ids`, if given, one per document. The documents are
 * not changed.
 *
 * ### Examples
 * ```ts
 * documentIds([new Document({ pageContent: 'a', id: 'doc-a' }), new Document({ pageContent: 'b' })], undefined, 'addDocuments')
 * // ['doc-a', '0b6f…'] (a UUID)
 * documentIds([new Document({ pageContent: 'a', id: 'doc-a' })], ['given'], 'addDocuments') // ['given']
 * ```
 */
export function documentIds(documents: readonly DocumentInterface[], ids: unknown, where: string): string[] {
  if (!Array.isArray(documents)) throw new InvalidArgumentError(`${where}: documents must be an array of Documents`)
  if (ids !== undefined && (!Array.isArray(ids) || ids.length !== documents.length)) {
    throw new InvalidArgumentError(
      `${where}: options.ids must be an array of one id per document (${documents.length}), got ${Array.isArray(ids) ? ids.length : typeof ids}`,
    )
  }
  return documents.map((doc, i) => {
    if (doc === null || typeof doc !== 'object') throw new InvalidArgumentError(`${where}: document ${i} is not a Document`)
    const id: unknown = (ids as unknown[] | undefined)?.[i] ?? doc.id ?? randomUUID()
    return assertId(id, 'document id')
  })
}

/**
 * Ids as a list to read or delete: an array of valid ids, each once, in the order given.
 *
 * ### Examples
 * ```ts
 * uniqueIds(['a', 'b', 'a'], 'delete') // ['a', 'b']
 * ```
 */
export function uniqueIds(ids: unknown, where: string): string[] {
  if (!Array.isArray(ids)) throw new InvalidArgumentError(`${where}: ids must be an array of document ids`)
  return [...new Set(ids.map((id) => assertId(id, 'document id')))]
}

/**
 * A LangChain `Document` of a stored chunk: its text, its metadata, and its document id as `id`.
 *
 * ### Examples
 * ```ts
 * toDocument({ documentId: 'faq-1', content: 'Refunds take a week.', metadata: { kind: 'faq' } })
 * // Document { pageContent: 'Refunds take a week.', metadata: { kind: 'faq' }, id: 'faq-1' }
 * ```
 */
export function toDocument(chunk: ChunkLike): Document {
  return new Document({ pageContent: chunk.content, metadata: chunk.metadata, id: chunk.documentId })
}

/**
 * Pairs documents with their vectors, as the store takes them; the counts must match.
 *
 * ### Examples
 * ```ts
 * const rows = withVectors(vectors, documents, 'addVectors') // [{ content, metadata, embedding }, …]
 * ```
 */
export function withVectors(
  vectors: readonly number[][],
  documents: readonly DocumentInterface[],
  where: string,
): Array<{ content: string; metadata: Record<string, unknown>; embedding: number[] }> {
  if (!Array.isArray(vectors) || !Array.isArray(documents) || vectors.length !== documents.length) {
    throw new InvalidArgumentError(
      `${where}: one vector per document is needed, got ${Array.isArray(vectors) ? vectors.length : typeof vectors} vectors ` +
        `for ${Array.isArray(documents) ? documents.length : typeof documents} documents`,
    )
  }
  return documents.map((doc, i) => {
    if (doc === null || typeof doc !== 'object') throw new InvalidArgumentError(`${where}: document ${i} is not a Document`)
    return { content: doc.pageContent, metadata: doc.metadata, embedding: vectors[i]! }
  })
}
