import type { ResolvedStoreConfig } from '../config/index.js'

/**
 * The statements that compare a tenant's chunks in two spaces — `from` (the one it searches) and
 * `to` (the one it moves to) — and bring `to` in line. A chunk is the same in both when its key
 * (document, chunk index) and its content are: only then is its `to` vector one of its current
 * text. Every statement filters `tenant_id = $1` on both tables.
 */
export interface SpaceDiff {
  /**
   * Chunks of `from` whose content `to` lacks (missing, or older text), in key order: `$2` how many.
   * The `not exists` probes `to`'s primary key row by row (its `offset 0` keeps the planner from
   * turning it into a merge or hash anti-join, which sorts or hashes the tenant's whole rest on
   * every batch): a batch reads its rows and the done rows before them, nothing after.
   */
  pending: string
  /** The same, after the key (`$3` document, `$4` chunk index): one pass over the tenant is linear. */
  pendingAfter: string
  /** How many chunks of `from` `to` lacks. */
  countPending: string
  /** How many chunks `from` has, and how many `to` holds with the same content. */
  counts: string
  /** Deletes from `to` the chunks `from` no longer has; returns how many. */
  deleteGone: string
  /** Copies metadata from `from` where the content is the same and the metadata is not; returns how many. */
  syncMetadata: string
  /**
   * `deleteGone`, `syncMetadata` and `pending` in one statement (the switch's, under its lock): the
   * pending chunks (`$2` how many) as `pending` reads them — neither change touches what it reads
   * (it looks at `from`'s keys and `to`'s content; deletions are of keys `from` lacks, the sync
   * changes metadata only).
   */
  settle: string
  /** Deletes from `to` the chunks of these keys (`$2` documents, `$3` chunk indexes): a batch's older versions, before its COPY. */
  deleteKeys: string
  /** Writes embedded chunks into `to`: `$2` documents, `$3` chunk indexes, `$4` contents, `$5` metadata (JSON text), `$6` the vectors' literals joined by `;` (one text: an array of long literals costs the driver more to escape than the database to write). */
  upsert: string
}

/**
 * The diff statements between two spaces' tables.
 *
 * ### Examples
 * ```ts
 * const diff = spaceDiff(defaultSpaceConfig, v2Config)
 * await db.executeQuery(CompiledQuery.raw(diff.pending, ['acme', 256]))
 * ```
 */
export function spaceDiff(from: ResolvedStoreConfig, to: ResolvedStoreConfig): SpaceDiff {
  const a = from.qualified
  const b = to.qualified
  const same = `b.tenant_id = $1 and b.document_id = a.document_id and b.chunk_index = a.chunk_index`
  const gone = `delete from ${b} b where b.tenant_id = $1 and not exists (
        select 1 from ${a} a where a.tenant_id = $1 and a.document_id = b.document_id and a.chunk_index = b.chunk_index) returning 1`
  const synced = `update ${b} b set metadata = a.metadata from ${a} a
        where ${same} and a.tenant_id = $1 and b.content = a.content and b.metadata is distinct from a.metadata returning 1`
  const pending = `select a.document_id, a.chunk_index, a.content, a.metadata from ${a} a
      where a.tenant_id = $1 and not exists (select 1 from ${b} b where ${same} and b.content = a.content offset 0)
      order by a.document_id, a.chunk_index limit $2`
  return {
    pending,
    pendingAfter: `select a.document_id, a.chunk_index, a.content, a.metadata from ${a} a
      where a.tenant_id = $1 and (a.document_id, a.chunk_index) > ($3::text collate "C", $4::int)
        and not exists (select 1 from ${b} b where ${same} and b.content = a.content offset 0)
      order by a.document_id, a.chunk_index limit $2`,
    countPending: `select count(*)::int as n from ${a} a
      where a.tenant_id = $1 and not exists (select 1 from ${b} b where ${same} and b.content = a.content)`,
    counts: `select (select count(*)::int from ${a} a where a.tenant_id = $1) as total,
      (select count(*)::int from ${a} a where a.tenant_id = $1 and exists (select 1 from ${b} b where ${same} and b.content = a.content)) as embedded`,
    deleteGone: `with gone as (${gone}) select count(*)::int as n from gone`,
    syncMetadata: `with synced as (${synced}) select count(*)::int as n from synced`,
    settle: `with gone as (${gone}), synced as (${synced}) ${pending}`,
    deleteKeys: `delete from ${b} b where b.tenant_id = $1
      and (b.document_id, b.chunk_index) in (select k.d, k.i from unnest($2::text[], $3::int[]) as k(d, i))`,
    upsert: `insert into ${b} (tenant_id, document_id, chunk_index, content, metadata, embedding)
      select $1, u.d, u.i, u.c, u.m::jsonb, u.e::${to.vectors.column}
      from unnest($2::text[], $3::int[], $4::text[], $5::text[], string_to_array($6, ';')) as u(d, i, c, m, e)
      on conflict (tenant_id, document_id, chunk_index)
      do update set content = excluded.content, metadata = excluded.metadata, embedding = excluded.embedding`,
  }
}
