import { InvalidArgumentError } from '../../errors.js'
import { assertId } from '../ingest/index.js'
import type { ChunkScope } from './writes/chunk-statements.js'
import type { FoundChunk } from './metadata-queries.js'
import { runScoped } from './tenant-scope.js'

/** A chunk as `getChunks` returns it; `embedding` only with `includeEmbedding`. */
export interface StoredChunk extends FoundChunk {
  /** The stored vector (as 4-byte floats read back), with `includeEmbedding: true`. */
  embedding?: number[]
}

/** Options of `getChunks`. */
export interface GetChunksOptions {
  /** Return each chunk's embedding too. Default false. */
  includeEmbedding?: boolean
}

/** Most document ids one `getChunks` takes. */
export const GET_CHUNKS_MAX_IDS = 10_000

/**
 * The chunks of the given documents of this tenant, in the order of the ids (an id given twice:
 * at its first place), each document's chunks by chunk index; an id with no chunks here (absent,
 * or another tenant's) is simply not in the result. One statement.
 *
 * ### Examples
 * ```ts
 * const chunks = await getChunks(scope, ['doc-2', 'doc-1'], { includeEmbedding: true })
 * ```
 */
export async function getChunks(scope: ChunkScope, ids: readonly string[], options: GetChunksOptions = {}): Promise<StoredChunk[]> {
  if (!Array.isArray(ids)) throw new InvalidArgumentError('getChunks: ids must be an array of document ids')
  if (ids.length > GET_CHUNKS_MAX_IDS) {
    throw new InvalidArgumentError(`getChunks takes at most ${GET_CHUNKS_MAX_IDS} ids at once, got ${ids.length}`)
  }
  const includeEmbedding = assertFlag(options, 'includeEmbedding', 'getChunks')
  const wanted = [...new Set(ids.map((id) => assertId(id, 'document id')))]
  if (wanted.length === 0) return []
  const text = includeEmbedding ? scope.chunks.getChunksWithEmbeddings : scope.chunks.getChunks
  return (await runScoped<StoredChunk>(scope, text, [wanted])).rows
}

/**
 * A boolean option (absent: false); anything else is an {@link InvalidArgumentError} naming it.
 *
 * ### Examples
 * ```ts
 * const includeEmbedding = assertFlag(options, 'includeEmbedding', 'search')
 * ```
 */
export function assertFlag<K extends string>(options: Partial<Record<K, unknown>> | undefined, key: K, where: string): boolean {
  if (options === null || typeof options !== 'object') throw new InvalidArgumentError(`${where}: options must be an object`)
  const value = options[key]
  if (value === undefined) return false
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${where}: ${key} must be true or false, got ${JSON.stringify(value)}`)
  return value
}
