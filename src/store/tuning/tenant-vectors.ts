import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { InvalidArgumentError } from '../../errors.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import type { Embedding } from '../ingest/index.js'
import type { SearchResult } from '../tenant/index.js'

/** What recall is counted on: a row's key and its distance to the query. */
export type ScoredRow = Pick<SearchResult, 'documentId' | 'chunkIndex' | 'distance'>

/** A tenant's chunks read into memory in a seeded order: their keys and vectors. */
export interface TenantVectors {
  keys: Array<{ documentId: string; chunkIndex: number }>
  vectors: number[][]
  /** Every chunk of the tenant (false: only the first `limit + 1` of the seeded order were read). */
  complete: boolean
}

/** Tenants up to this many vector components (rows × dimensions; ~32 MB of numbers) are read whole into memory for tuning. */
export const IN_MEMORY_NUMBERS = 4_000_000

/**
 * Up to `IN_MEMORY_NUMBERS / dimensions + 1` of a tenant's chunks in a seeded order (a hash of each
 * chunk's key and `seed`); `complete` when that was all of them (the query model's anchors are the
 * first rows, and a complete tenant's exact answers are computed in memory).
 *
 * ### Examples
 * ```ts
 * const t = await readTenantVectors(db, config, 'acme', 'pgscale')
 * if (t.complete) console.log(exactInMemory(t, query, 10, config.distance))
 * ```
 */
export async function readTenantVectors(db: Database, config: ResolvedStoreConfig, tenantId: string, seed: string): Promise<TenantVectors> {
  const limit = Math.floor(IN_MEMORY_NUMBERS / Math.max(1, config.dimensions))
  // A vector column in pgvector's binary form where that is quicker to read (a native server: ~2.5x
  // at 8,000 × 128; PGlite converts bytea more slowly than text); else its text.
  const binary = config.vectorType === 'vector' && !db.capabilities.inProcess
  const { rows } = await sql<{ v: unknown; d: string; c: number }>`
    select ${binary ? sql`vector_send(embedding)` : sql`embedding::text`} as v, document_id as d, chunk_index as c
    from ${sql.raw(config.qualified)}
    where tenant_id = ${tenantId}
    order by md5(document_id || '#' || chunk_index::text || ${seed}) limit ${limit + 1}`.execute(db)
  return {
    keys: rows.map((r) => ({ documentId: r.d, chunkIndex: Number(r.c) })),
    vectors: rows.map((r) => (binary ? vectorFromBinary(r.v) : (JSON.parse(r.v as string) as number[]))),
    complete: rows.length <= limit,
  }
}

/**
 * A pgvector `vector` from its binary form (`vector_send`: dimensions as int16, an unused int16,
 * then big-endian 4-byte floats), as the driver returns a bytea: bytes, or the `\\x…` hex text.
 *
 * ### Examples
 * ```ts
 * vectorFromBinary(Buffer.from('0002000040400000bf800000', 'hex')) // [3, -1]
 * ```
 */
export function vectorFromBinary(value: unknown): number[] {
  const bytes =
    value instanceof Uint8Array
      ? value
      : typeof value === 'string' && value.startsWith('\\x')
        ? Buffer.from(value.slice(2), 'hex')
        : undefined
  if (!bytes || bytes.byteLength < 4) throw new TypeError(`not a pgvector binary vector: ${typeof value}`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const dim = view.getUint16(0)
  if (bytes.byteLength !== 4 + 4 * dim) throw new TypeError(`a pgvector binary vector of ${dim} dimensions has ${bytes.byteLength} bytes`)
  const out = new Array<number>(dim)
  for (let i = 0; i < dim; i++) out[i] = view.getFloat32(4 + 4 * i)
  return out
}

/**
 * The exact `k` nearest of `tenant`'s vectors to `query` under `distance`, nearest first, with the
 * distance the server's operators give (cosine: 1 − cos; l2: Euclidean; inner product: −dot) —
 * what `exactSearch` returns, computed in memory (double precision; the server's single precision
 * differs by far less than recall's tie tolerance). `skip` leaves one row out (an anchor's own).
 * A tenant read in part (`complete: false`) gets an `InvalidArgumentError`: its nearest are not the
 * tenant's.
 *
 * ### Examples
 * ```ts
 * exactInMemory(tenant, query, 10, 'cosine') // [{ documentId: 'd1', chunkIndex: 0, distance: 0.12 }, …]
 * ```
 */
export function exactInMemory(
  tenant: Pick<TenantVectors, 'keys' | 'vectors'> & { complete?: boolean },
  query: Embedding,
  k: number,
  distance: ResolvedStoreConfig['distance'],
  skip = -1,
): Array<ScoredRow & { row: number }> {
  // The nearest of a part are not the tenant's nearest: answers from them inflate recall.
  if (tenant.complete === false)
    throw new InvalidArgumentError(
      `exact answers in memory need the whole tenant; only ${tenant.vectors.length} of its chunks were read (more than ${IN_MEMORY_NUMBERS} vector components): use exactSearch`,
    )
  let qq = 0
  for (let x = 0; x < query.length; x++) qq += query[x]! * query[x]!
  const qNorm = Math.sqrt(qq) || 1
  const best: Array<{ row: number; d: number }> = []
  for (let j = 0; j < tenant.vectors.length; j++) {
    if (j === skip) continue
    const v = tenant.vectors[j]!
    let dot = 0
    let sq = 0
    let norm = 0
    for (let x = 0; x < query.length; x++) {
      const a = query[x]!
      const b = v[x]!
      dot += a * b
      sq += (a - b) ** 2
      norm += b * b
    }
    const d = distance === 'cosine' ? 1 - dot / (qNorm * (Math.sqrt(norm) || 1)) : distance === 'inner_product' ? -dot : Math.sqrt(sq)
    if (best.length < k || d < best[best.length - 1]!.d) {
      let at = best.length
      while (at > 0 && best[at - 1]!.d > d) at--
      best.splice(at, 0, { row: j, d })
      if (best.length > k) best.pop()
    }
  }
  return best.map((b) => ({ ...tenant.keys[b.row]!, distance: b.d, row: b.row }))
}
