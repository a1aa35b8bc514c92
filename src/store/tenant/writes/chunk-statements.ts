import { RESULT_COLUMNS, type ResolvedStoreConfig, type StoreStatements } from '../../config/index.js'
import type { LockClasses } from './document-locks.js'
import type { TenantScope } from '../tenant-scope.js'

/**
 * The statements of the chunk-level capabilities (`upsertChunks`, `getChunks`, `updateMetadata`,
 * searches that return embeddings), rendered once per store from its validated configuration.
 * The tenant is always `$1`, every value a bound parameter (arrays through `unnest`).
 */
export interface ChunkStatements {
  /**
   * $1 tenant, $2 text[] document ids (distinct), $3 text[] contents, $4 text[] metadata (JSON),
   * $5 text[] vectors → `written`, `removed`: each document becomes exactly one chunk (index 0),
   * its other chunks deleted, in one statement.
   */
  upsertSingleChunk: string
  /** $1 tenant, $2 text[] document ids (distinct) → their chunks in the ids' order, then by chunk index. */
  getChunks: string
  /** `getChunks` with each chunk's `embedding` (as real[]). */
  getChunksWithEmbeddings: string
  /** The store's `search` with each hit's `embedding`. */
  searchWithEmbeddings: string
  /** The store's `exactSearch` with each hit's `embedding`. */
  exactSearchWithEmbeddings: string
  /** $1 tenant; `set` and `where` given (`where` ANDed after `tenant_id = $1`) → updated rows. */
  update(set: readonly string[], where: string): string
}

/** What the chunk-level capabilities need of a tenant handle: its scope, the lock classes, the statements. */
export interface ChunkScope extends TenantScope {
  readonly locks: LockClasses
  readonly chunks: ChunkStatements
}

/** The embedding as a result column: `real[]`, which every driver returns as numbers (vector and halfvec alike). */
const EMBEDDING = 'embedding::real[]'

/**
 * A search statement (rows with `documentId`, `chunkIndex` and `distance`; `$1` the tenant) with
 * each hit's `embedding` beside it, read by primary key in the same statement — the same snapshot,
 * so the vector is the one the distance was computed on — in the same distance order.
 *
 * ### Examples
 * ```ts
 * const text = withEmbeddings(config, statements.exact(f.sql))
 * ```
 */
export function withEmbeddings(config: ResolvedStoreConfig, statement: string): string {
  return `
    select hit.*, (
        select c.${EMBEDDING} from ${config.qualified} c
        where c.tenant_id = $1 and c.document_id = hit."documentId" and c.chunk_index = hit."chunkIndex"
      ) as embedding
    from (${statement}
    ) hit
    order by hit.distance`
}

const rendered = new WeakMap<StoreStatements, ChunkStatements>()

/**
 * The chunk statements of a store, rendered on first use and kept with its `StoreStatements`
 * (one object per store), so every tenant handle of the store shares them.
 *
 * ### Examples
 * ```ts
 * const chunks = chunkStatements(config, statements)
 * await runScoped(scope, chunks.getChunks, [ids])
 * ```
 */
export function chunkStatements(config: ResolvedStoreConfig, statements: StoreStatements): ChunkStatements {
  let chunks = rendered.get(statements)
  if (!chunks) {
    chunks = renderChunkStatements(config, statements)
    rendered.set(statements, chunks)
  }
  return chunks
}

function renderChunkStatements(c: ResolvedStoreConfig, statements: StoreStatements): ChunkStatements {
  const t = c.qualified
  const get = (embedding: boolean) => `
      select ${RESULT_COLUMNS.replace(/(document_id|chunk_index|content|metadata)/g, 'c.$1')}${embedding ? `, c.${EMBEDDING} as embedding` : ''}
      from unnest($2::text[]) with ordinality as wanted(document_id, position)
      join ${t} c on c.document_id = wanted.document_id
      where c.tenant_id = $1
      order by wanted.position, c.chunk_index`
  return {
    // One statement, hence atomic: chunk 0 upserted, the documents' other chunks deleted.
    upsertSingleChunk: `
      with incoming as (
        select * from unnest($2::text[], $3::text[], $4::text[], $5::text[]) as u(document_id, content, metadata, embedding)
      ), written as (
        insert into ${t} as c (tenant_id, document_id, chunk_index, content, metadata, embedding)
        select $1, document_id, 0, content, metadata::jsonb, embedding::${c.vectorType} from incoming
        on conflict (tenant_id, document_id, chunk_index) do update
          set content = excluded.content, metadata = excluded.metadata, embedding = excluded.embedding
        returning 1
      ), removed as (
        delete from ${t}
        where tenant_id = $1 and document_id = any($2::text[]) and chunk_index > 0
        returning 1
      )
      select (select count(*) from written)::int as written, (select count(*) from removed)::int as removed`,
    getChunks: get(false),
    getChunksWithEmbeddings: get(true),
    searchWithEmbeddings: withEmbeddings(c, statements.search),
    exactSearchWithEmbeddings: withEmbeddings(c, statements.exactSearch),
    update: (set, where) => `update ${t} set ${set.join(', ')} where tenant_id = $1 and (${where})`,
  }
}
