import { int32Hash } from '../../sql/advisory-lock.js'
import type { ResolvedStoreConfig } from './store-config.js'

/**
 * Every statement the store sends, rendered once per store from its validated configuration.
 * Values are always bound parameters; in every tenant statement the tenant is `$1` and the
 * filter is `tenant_id = $1` (btree-usable; never `IS NOT DISTINCT FROM`).
 */
export interface StoreStatements {
  /** $1 tenant, $2 document → deleted rows. */
  deleteDocument: string
  /** $1 tenant, $2 document, $3 int[] chunk indexes, $4 text[] contents, $5 jsonb[] metadata (as text[]), $6 vectors (as text[]). */
  replaceDocument: string
  /** $1 tenant, $2 query vector, $3 k → nearest first (index-served; re-sorted by exact distance). */
  search: string
  /** $1 tenant, $2 query vector, $3 k → exact nearest, never through an ANN index. */
  exactSearch: string
  /** $1 tenant, $2 vector, $3 query text, $4 k, $5 candidates per list, $6 RRF constant. */
  hybridSearch: string
  /** hybridSearch with the vector list in exact distance order (binary-quantized stores, tenants no index serves). */
  hybridSearchExact: string
  /** COPY of whole rows in binary format. */
  copyRows: string
  /** The advisory-lock class of this table's document writers (computed once per store). */
  documentLockClass: number
  /** The advisory-lock class of a tenant's writes: shared by document writers, exclusive for `deleteWhere`. */
  tenantLockClass: number
}

/** The columns of a result row. */
export const RESULT_COLUMNS = `document_id as "documentId", chunk_index as "chunkIndex", content, metadata`

/** The index order of a search: what the HNSW index holds (the vectors, their halfvec, their bits) compared with `$2`. */
export function indexOrder(c: ResolvedStoreConfig): string {
  const v = c.vectors
  return `${v.indexExpression} ${v.indexOperator} ${v.indexQuery('$2')}`
}

/**
 * What a statement that selects `embedding <op> $2 as distance` orders by to walk the HNSW index:
 * the alias `distance` when the index orders by that same expression (a plain `vector` store: the
 * planner matches the alias's expression to the index just the same), so the query vector appears
 * once in the text — a search sent as one message carries it inlined, and twice was twice the
 * bytes on the wire and twice the server's parse of ~5 KB of numbers; else {@link indexOrder}.
 */
export function walkOrder(c: ResolvedStoreConfig): string {
  const order = indexOrder(c)
  return order === `embedding ${c.operator} $2` ? 'distance' : order
}

/**
 * The k-nearest statements: `knn` through the index (under binary quantization rerank × k
 * candidates in index order, re-ranked by the exact distance outside), `exact` never through it.
 */
export function nearestStatements(c: ResolvedStoreConfig): { knn: (filter: string) => string; exact: (filter: string) => string } {
  const t = c.qualified
  const op = c.operator
  const candidates = c.rerank > 1 ? `$3 * ${c.rerank}` : '$3'
  const knn = (filter: string) => `
    select "documentId", "chunkIndex", content, metadata, distance from (
      select ${RESULT_COLUMNS}, embedding ${op} $2 as distance
      from ${t}
      where tenant_id = $1${filter}
      order by ${walkOrder(c)}
      limit ${candidates}
    ) nearest
    order by distance + 0${c.rerank > 1 ? ' limit $3' : ''}`
  const exact = (filter: string) => `
    select "documentId", "chunkIndex", content, metadata, distance from (
      select ${RESULT_COLUMNS}, embedding ${op} $2 as distance
      from ${t}
      where tenant_id = $1${filter}
      offset 0
    ) scored
    order by distance
    limit $3`
  return { knn, exact }
}

export function renderStatements(c: ResolvedStoreConfig): StoreStatements {
  const t = c.qualified
  const op = c.operator
  const { knn, exact } = nearestStatements(c)
  return {
    deleteDocument: `delete from ${t} where tenant_id = $1 and document_id = $2`,
    // One statement, hence atomic: upsert the new chunks, then delete the old ones past the new count.
    replaceDocument: `
      with incoming as (
        select * from unnest($3::int[], $4::text[], $5::text[], $6::text[]) as u(chunk_index, content, metadata, embedding)
      ), written as (
        insert into ${t} as c (tenant_id, document_id, chunk_index, content, metadata, embedding)
        select $1, $2, chunk_index, content, metadata::jsonb, embedding::${c.vectorType} from incoming
        on conflict (tenant_id, document_id, chunk_index) do update
          set content = excluded.content, metadata = excluded.metadata, embedding = excluded.embedding
        returning 1
      ), removed as (
        delete from ${t}
        where tenant_id = $1 and document_id = $2 and chunk_index >= coalesce(array_length($3::int[], 1), 0)
        returning 1
      )
      select (select count(*) from written)::int as written, (select count(*) from removed)::int as removed`,
    search: knn(''),
    exactSearch: exact(''),
    hybridSearch: hybridStatement(c, walkOrder(c)),
    hybridSearchExact: hybridStatement(c, `embedding ${op} $2`),
    copyRows: `copy ${t} (tenant_id, document_id, chunk_index, content, metadata, embedding) from stdin with (format binary)`,
    documentLockClass: int32Hash(`pgscale.store:${t}`),
    tenantLockClass: int32Hash(`pgscale.store-tenant:${t}`),
  }
}

/**
 * Hybrid search: the vector list (in `vectorOrder`: the index's order, or the exact distance) and
 * the full-text list, fused by reciprocal rank. The tsquery is written out (not a CTE) so the
 * planner folds it to a constant and estimates its selectivity: a small tenant reads its rows by
 * primary key, a large one may use the GIN.
 */
export function hybridStatement(c: ResolvedStoreConfig, vectorOrder: string, filter = ''): string {
  const t = c.qualified
  const op = c.operator
  return `
      with by_vector as (
        select document_id, chunk_index, row_number() over (order by distance) as rank from (
          select document_id, chunk_index, embedding ${op} $2 as distance
          from ${t} where tenant_id = $1${filter}
          order by ${vectorOrder}
          limit $5
        ) v
      ),
      by_text as (
        select document_id, chunk_index, row_number() over (order by score desc) as rank from (
          select document_id, chunk_index, ts_rank_cd(search_text, websearch_to_tsquery('${c.textSearchConfig}'::regconfig, $3)) as score
          from ${t}
          where tenant_id = $1 and search_text @@ websearch_to_tsquery('${c.textSearchConfig}'::regconfig, $3)${filter}
          order by score desc
          limit $5
        ) f
      ),
      fused as (
        select document_id, chunk_index,
          coalesce(1.0 / ($6::float8 + v.rank), 0) + coalesce(1.0 / ($6::float8 + f.rank), 0) as score
        from by_vector v full outer join by_text f using (document_id, chunk_index)
      )
      select ${RESULT_COLUMNS.replace(/(document_id|chunk_index|content|metadata)/g, 'c.$1')},
        c.embedding ${op} $2 as distance, fused.score::float8 as score
      from fused join ${t} c on c.tenant_id = $1 and c.document_id = fused.document_id and c.chunk_index = fused.chunk_index
      order by fused.score desc, distance
      limit $4`
}
