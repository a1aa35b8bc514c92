import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Database } from '../../../src/index.js'

/**
 * What the Mastra suites share. Mastra lives in the example app (examples/mastra, `npm run
 * adapters:install -- mastra`), not in the main install: without it the suites are skipped with
 * {@link MASTRA_MISSING} as the reason. The adapter and Mastra are loaded inside the suites' hooks,
 * so a file without Mastra still loads; vitest resolves the `@mastra/*` imports of the tests and of
 * the adapter from the example app (vitest.config.ts), one copy of @mastra/core for both.
 *
 * The vectors follow Mastra's shared suite (stores/_test-utils/src/domains/vector/test-helpers.ts)
 * at a small dimension: `createVector(seed)` sets the first 10 dimensions from the seed and
 * normalises, `createUnitVector(i)` is the i-th axis.
 */
const CORE = fileURLToPath(new URL('../../../examples/mastra/node_modules/@mastra/core/package.json', import.meta.url))

/** Why the Mastra suites cannot run here ('' when they can). */
export const MASTRA_MISSING = existsSync(CORE)
  ? ''
  : 'needs @mastra/core in examples/mastra/node_modules: run npm run adapters:install -- mastra'

/** The adapter, from source (what `pgscale/mastra` builds from). */
export type Adapter = typeof import('../../../src/adapters/mastra/index.js')
export type PgScaleVector = InstanceType<Adapter['PgScaleVector']>

/** The adapter and the parts of Mastra the suites use, loaded. */
export interface MastraKit {
  adapter: Adapter
  MastraError: typeof import('@mastra/core/error').MastraError
  MastraVector: typeof import('@mastra/core/vector').MastraVector
  /** A tenant's adapter on `db` (one `PgScaleVectors` per kit, so tables are opened once). */
  vector(tenantId: string): PgScaleVector
}

/** The dimension of the suites' indexes (Mastra's suite uses 1536; small is enough but where dimension is the point). */
export const DIM = 16

/**
 * Loads the adapter and Mastra (call in `beforeAll` of a suite that MASTRA_MISSING guards).
 *
 * ### Examples
 * ```ts
 * describeUnless(MASTRA_MISSING)('…', () => { let kit: MastraKit; beforeAll(async () => { kit = await loadMastra(t.db) }) })
 * ```
 */
export async function loadMastra(db: Database, options: { tablePrefix?: string } = {}): Promise<MastraKit> {
  const [adapter, error, vector] = await Promise.all([
    import('../../../src/adapters/mastra/index.js'),
    import('@mastra/core/error'),
    import('@mastra/core/vector'),
  ])
  const vectors = new adapter.PgScaleVectors({ id: 'pgscale-test', db, ...options })
  return { adapter, MastraError: error.MastraError, MastraVector: vector.MastraVector, vector: (tenantId) => vectors.forTenant(tenantId) }
}

/** Mastra's `createVector`: the first 10 dimensions `(seed + i·0.1) / 10`, normalised. */
export function createVector(seed: number, dimension = DIM): number[] {
  const v = new Array<number>(dimension).fill(0)
  for (let i = 0; i < Math.min(10, dimension); i++) v[i] = (seed + i * 0.1) / 10
  const norm = Math.hypot(...v)
  return norm > 0 ? v.map((x) => x / norm) : v
}

/** Mastra's `createUnitVector`: 1 on axis `i` (mod dimension). */
export function createUnitVector(i: number, dimension = DIM): number[] {
  const v = new Array<number>(dimension).fill(0)
  v[i % dimension] = 1
  return v
}

/** The 4-d vectors of Mastra's advanced-operations suite, padded to the index dimension. */
export function pad(values: readonly number[], dimension = DIM): number[] {
  return [...values, ...new Array<number>(dimension - values.length).fill(0)]
}

/** A unique index name per call (Mastra's suites use `name_${Date.now()}`). */
export function indexName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`
}
