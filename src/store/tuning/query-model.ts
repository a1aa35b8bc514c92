import { sql } from 'kysely'
import type { Database } from '../../db/database.js'
import { seededRandom, type Random } from '../../util/seeded-random.js'
import type { ResolvedStoreConfig } from '../config/index.js'
import type { TenantStore } from '../tenant/index.js'
import { exactInMemory, readTenantVectors, type TenantVectors } from './tenant-vectors.js'

/**
 * The kinds of query the model makes around a stored chunk (the anchor) and its neighbours, at the
 * tenant's own scale (`d` = the anchor's distance to its k-th neighbour):
 * - `between`: a point on the segment from the anchor to one of its neighbours (30-70% of the way);
 * - `local`: the anchor moved by `d` along a random mix of its neighbours' offsets (the directions
 *   the data varies in there: anisotropic where the data is);
 * - `far`: the same moved by 3 `d`, farther than any of its k neighbours;
 * - `blend`: the midpoint of the anchor and another anchor farther than its k-th neighbour (most
 *   often of another document): a query whose neighbours lie in two places, as a question that
 *   spans two subjects does;
 * - `isotropic`: the anchor moved by 2 `d` in a uniformly random direction (off the data's surface);
 *   also made where another family cannot be (an anchor without neighbours, a `blend` without a
 *   partner).
 */
export type QueryFamily = 'between' | 'local' | 'far' | 'blend' | 'isotropic'

/** Every family, in the order the model makes them. */
export const QUERY_FAMILIES: readonly QueryFamily[] = ['between', 'local', 'far', 'blend', 'isotropic']

/** A stored chunk and its nearest neighbours (nearest first, itself excluded), as the model reads them. */
export interface Anchor {
  embedding: readonly number[]
  neighbours: ReadonlyArray<readonly number[]>
}

/** Queries the model made, each with its family, and the scale it was calibrated to. */
export interface ModelQueries {
  queries: number[][]
  families: QueryFamily[]
  /** Median over anchors of the distance (Euclidean, on unit vectors for cosine) to the k-th neighbour. */
  kthDistance: number
  /** The neighbour rank the scale is taken at (10, or fewer in a small tenant). */
  k: number
  /** The whole tenant, when it was read into memory for the anchors' neighbours (`readTenantVectors`). */
  tenant?: TenantVectors
}

/** Neighbours read per anchor: the scale is the distance to the 10th. */
const NEIGHBOURS = 10

/**
 * Multiples of the scale the `far` and `isotropic` families move by. Measured on seeded generators
 * (test/store/tuning/stated-vs-delivered.ts): fresh queries drawn from a tenant's topics sat 2-3×
 * the chunks' 10th-neighbour distance from their nearest chunk where chunks cluster by document;
 * at 1× every family found its neighbours more easily than those queries did.
 */
const FAR_SCALE = 3
const ISOTROPIC_SCALE = 2

/**
 * Tuning queries a tenant has never stored, calibrated to its own geometry: `n` queries, one of each
 * family ({@link QueryFamily}) per anchor, the anchors a seeded sample of its chunks and their
 * exact nearest neighbours (one exact scan per anchor: n / 5 of them). What tuning
 * measures before the tenant has real queries; the worst family's bound is the one stated.
 *
 * ### Examples
 * ```ts
 * const { queries, families, kthDistance } = await modelQueries(db, config, store.forTenant('acme'), 200, 'pgscale')
 * ```
 */
export async function modelQueries(
  db: Database,
  config: ResolvedStoreConfig,
  handle: TenantStore,
  n: number,
  seed: string,
  families: readonly QueryFamily[] = QUERY_FAMILIES,
): Promise<ModelQueries> {
  const { anchors, tenant } = await sampleAnchors(db, config, handle, Math.ceil(n / families.length), seed)
  const made = queriesAround(anchors, { n, seed: `${seed}:${handle.tenantId}`, families, cosine: config.distance === 'cosine' })
  return tenant ? { ...made, tenant } : made
}

/**
 * A seeded sample of the tenant's chunks with their nearest neighbours (exact, with their vectors),
 * and the tenant read whole when it fits in memory (`IN_MEMORY_NUMBERS`): its neighbours are then
 * found in memory (one read instead of one exact scan per anchor).
 */
export async function sampleAnchors(
  db: Database,
  config: ResolvedStoreConfig,
  handle: TenantStore,
  count: number,
  seed: string,
): Promise<{ anchors: Anchor[]; tenant?: TenantVectors }> {
  const tenant = await readTenantVectors(db, config, handle.tenantId, seed)
  if (tenant.complete) {
    const anchors = tenant.vectors.slice(0, count).map((embedding, i) => ({
      embedding,
      neighbours: exactInMemory(tenant, embedding, NEIGHBOURS, config.distance, i).map((r) => tenant.vectors[r.row]!),
    }))
    return { anchors, tenant }
  }
  // Exact: the model must not depend on the index it is about to judge. The neighbours' keys by
  // exact scans, their vectors in one read.
  const chosen = tenant.vectors.slice(0, count)
  const keys: Array<Array<{ documentId: string; chunkIndex: number }>> = []
  for (const [i, embedding] of chosen.entries()) {
    const own = tenant.keys[i]!
    const near = await handle.exactSearch(embedding, { k: NEIGHBOURS + 1 })
    keys.push(near.filter((r) => !(r.documentId === own.documentId && r.chunkIndex === own.chunkIndex)).slice(0, NEIGHBOURS))
  }
  const vectors = await vectorsByKey(db, config, handle.tenantId, keys.flat())
  const anchors: Anchor[] = chosen.map((embedding, i) => ({
    embedding,
    neighbours: keys[i]!.map((k) => vectors.get(keyOf(k))).filter((v): v is number[] => v !== undefined),
  }))
  return { anchors }
}

/** The vectors of a tenant's chunks by key (one statement). */
async function vectorsByKey(
  db: Database,
  config: ResolvedStoreConfig,
  tenantId: string,
  keys: ReadonlyArray<{ documentId: string; chunkIndex: number }>,
): Promise<Map<string, number[]>> {
  if (keys.length === 0) return new Map()
  const { rows } = await sql<{ v: string; d: string; c: number }>`
    select c.embedding::text as v, c.document_id as d, c.chunk_index as c
    from ${sql.raw(config.qualified)} c
    join unnest(${keys.map((k) => k.documentId)}::text[], ${keys.map((k) => k.chunkIndex)}::int[]) as k(d, i)
      on c.document_id = k.d and c.chunk_index = k.i
    where c.tenant_id = ${tenantId}`.execute(db)
  return new Map(rows.map((r) => [keyOf({ documentId: r.d, chunkIndex: Number(r.c) }), JSON.parse(r.v) as number[]]))
}

function keyOf(k: { documentId: string; chunkIndex: number }): string {
  return `${k.documentId}\u0000${k.chunkIndex}`
}

/**
 * The model's queries around `anchors` (pure: seeded, no database): for each anchor in turn, one
 * query of each family, until `n`. With `cosine`, vectors are taken as unit vectors (the scale is
 * a chord) and queries are returned unit length. An anchor without neighbours gives `isotropic`
 * queries at the median scale.
 *
 * ### Examples
 * ```ts
 * const { queries, kthDistance } = queriesAround(anchors, { n: 200, seed: 'pgscale', cosine: true })
 * ```
 */
export function queriesAround(
  anchors: readonly Anchor[],
  options: { n: number; seed: string; cosine: boolean; families?: readonly QueryFamily[] },
): ModelQueries {
  const families = options.families ?? QUERY_FAMILIES
  const random = seededRandom(`${options.seed}:query-model`)
  const prepared = anchors.map((a) => {
    const anchor = options.cosine ? unit(a.embedding) : [...a.embedding]
    const neighbours = a.neighbours.map((v) => (options.cosine ? unit(v) : [...v]))
    const kth = neighbours.length ? distance(anchor, neighbours[neighbours.length - 1]!) : NaN
    return { anchor, neighbours, kth }
  })
  const scales = prepared.map((p) => p.kth).filter((d) => Number.isFinite(d) && d > 0)
  const kthDistance = scales.length ? median(scales) : 0
  const k = Math.max(0, ...prepared.map((p) => p.neighbours.length))
  const queries: number[][] = []
  const made: QueryFamily[] = []
  for (let i = 0; queries.length < options.n && prepared.length > 0; i++) {
    const p = prepared[Math.floor(i / families.length) % prepared.length]!
    const family = families[i % families.length]!
    const d = Number.isFinite(p.kth) && p.kth > 0 ? p.kth : kthDistance
    const partner = family === 'blend' ? blendPartner(random, prepared, p) : undefined
    const kind: QueryFamily = p.neighbours.length === 0 || (family === 'blend' && !partner) ? 'isotropic' : family
    const q =
      kind === 'isotropic'
        ? moved(p.anchor, isotropic(random, p.anchor.length), p.neighbours.length === 0 ? d : ISOTROPIC_SCALE * d)
        : kind === 'blend'
          ? p.anchor.map((x, j) => (x + partner![j]!) / 2)
          : around(random, p, kind, d)
    queries.push(options.cosine ? unit(q) : q)
    made.push(kind)
  }
  return { queries, families: made, kthDistance, k }
}

/** One query of `family` around an anchor with neighbours, at scale `d`. */
function around(random: Random, p: { anchor: number[]; neighbours: number[][] }, family: QueryFamily, d: number): number[] {
  const { anchor, neighbours } = p
  if (family === 'between') {
    const other = neighbours[random.int(neighbours.length)]!
    const t = 0.3 + 0.4 * random.next()
    return anchor.map((x, i) => x + t * (other[i]! - x))
  }
  // A random mix of the offsets to the neighbours: a direction the data varies in near the anchor.
  const direction = new Array<number>(anchor.length).fill(0)
  for (const v of neighbours) {
    const g = random.gaussian()
    for (let i = 0; i < direction.length; i++) direction[i]! += g * (v[i]! - anchor[i]!)
  }
  return moved(anchor, direction, family === 'far' ? FAR_SCALE * d : d)
}

/** Another anchor farther from `p`'s than its k-th neighbour (a few seeded draws), or undefined. */
function blendPartner(
  random: Random,
  prepared: ReadonlyArray<{ anchor: number[]; kth: number }>,
  p: { anchor: number[]; kth: number },
): number[] | undefined {
  for (let tries = 0; tries < 8 && prepared.length > 1; tries++) {
    const other = prepared[random.int(prepared.length)]!
    if (other !== p && distance(p.anchor, other.anchor) > p.kth) return other.anchor
  }
  return undefined
}

/** `x` moved by `length` along `direction` (an isotropic one when `direction` is zero). */
function moved(x: readonly number[], direction: readonly number[], length: number): number[] {
  const norm = Math.hypot(...direction)
  if (!(norm > 0)) return [...x]
  return x.map((v, i) => v + (length * direction[i]!) / norm)
}

function isotropic(random: Random, dim: number): number[] {
  return Array.from({ length: dim }, () => random.gaussian())
}

function unit(x: readonly number[]): number[] {
  const norm = Math.hypot(...x) || 1
  return x.map((v) => v / norm)
}

function distance(a: readonly number[], b: readonly number[]): number {
  let s = 0
  for (let i = 0; i < a.length; i++) s += (a[i]! - b[i]!) ** 2
  return Math.sqrt(s)
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}
