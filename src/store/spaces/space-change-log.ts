import type { ResolvedStoreConfig } from '../config/index.js'

/**
 * The switch's statements scoped to the change log: the same comparisons as `SpaceDiff`'s, over
 * only the keys the guard logged while the tenant migrated (`changes`) — what the switch does
 * under its lock, so its work grows with the writes since the backfill, not with the tenant. The
 * rest of the tenant was brought in line by the backfill's full passes, which began after the log
 * did (a migration's state row is written before its first pass). Every statement filters
 * `tenant_id = $1` on every table.
 */
export interface ChangeLogDiff {
  /** Logged chunks of `from` whose content `to` lacks, in key order: `$2` how many. */
  pending: string
  /** How many logged chunks of `from` `to` lacks. */
  countPending: string
  /**
   * In one statement, as `SpaceDiff.settle`: the logged keys `from` no longer has deleted from `to`,
   * metadata copied from `from` for logged keys of the same content, and `pending`.
   */
  settle: string
  /**
   * Deletes the log rows whose key is in line now (the same content and metadata in both spaces, or
   * in neither). Safe beside writers: a write this statement does not see logged a row it does not
   * see either, so only keys checked in one snapshot go.
   */
  prune: string
}

/**
 * Deletes a tenant's (`$1`) change log: at a flip, in its transaction (what it held is in line);
 * at a cancelled migration and a released space (nothing is logged for the tenant any more).
 *
 * ### Examples
 * ```ts
 * await trx.executeQuery(CompiledQuery.raw(clearChangeLog(spaceTables(config).changes), ['acme']))
 * ```
 */
export function clearChangeLog(changes: string): string {
  return `delete from ${changes} where tenant_id = $1`
}

/**
 * The change-log statements between two spaces' tables.
 *
 * ### Examples
 * ```ts
 * const logged = changeLogDiff(defaultSpaceConfig, v2Config, spaceTables(defaultSpaceConfig).changes)
 * await db.executeQuery(CompiledQuery.raw(logged.pending, ['acme', 256]))
 * ```
 */
export function changeLogDiff(from: ResolvedStoreConfig, to: ResolvedStoreConfig, changes: string): ChangeLogDiff {
  const a = from.qualified
  const b = to.qualified
  const keys = `(select distinct c.document_id, c.chunk_index from ${changes} c where c.tenant_id = $1)`
  const at = (t: string, k: string) => `${t}.tenant_id = $1 and ${t}.document_id = ${k}.document_id and ${t}.chunk_index = ${k}.chunk_index`
  const gone = `delete from ${b} b using ${keys} k where ${at('b', 'k')}
        and not exists (select 1 from ${a} a where ${at('a', 'b')}) returning 1`
  const synced = `update ${b} b set metadata = a.metadata from ${a} a, ${keys} k
        where ${at('a', 'k')} and ${at('b', 'a')} and b.content = a.content and b.metadata is distinct from a.metadata returning 1`
  const lacking = `from ${a} a join ${keys} k on a.document_id = k.document_id and a.chunk_index = k.chunk_index
      where a.tenant_id = $1 and not exists (select 1 from ${b} b where ${at('b', 'a')} and b.content = a.content)`
  const pending = `select a.document_id, a.chunk_index, a.content, a.metadata ${lacking} order by a.document_id, a.chunk_index limit $2`
  return {
    pending,
    countPending: `select count(*)::int as n ${lacking}`,
    settle: `with gone as (${gone}), synced as (${synced}) ${pending}`,
    prune: `delete from ${changes} c where c.tenant_id = $1 and (
        exists (select 1 from ${a} a join ${b} b on ${at('b', 'a')}
          where ${at('a', 'c')} and b.content = a.content and b.metadata = a.metadata)
        or (not exists (select 1 from ${a} a where ${at('a', 'c')}) and not exists (select 1 from ${b} b where ${at('b', 'c')})))`,
  }
}
