/**
 * pgscale/langchain: LangChain.js's `VectorStore` over one tenant of a `PgVectorStore`
 * (pgscale-vector-store), with what it maps — LangChain documents and ids to single-chunk pgscale
 * documents (documents), distances to scores (scores), and the filter check that catches the
 * community PGVectorStore dialect (filters). The framework (`@langchain/core`) is an optional peer
 * dependency: the app brings it; the main build compiles against framework.d.ts, and
 * `npx tsc -p tsconfig.adapters.json` against the real package. Nothing in src/ imports this folder.
 *
 * May import: src/store (through src/store/index.ts), src/filter, src/sql, src/util, src/errors.ts,
 * and `@langchain/core`.
 */
export {
  PgScaleVectorStore,
  type AppTransaction,
  type PgScaleAddOptions,
  type PgScaleDeleteParams,
  type PgScaleSearchOptions,
  type PgScaleVectorStoreArgs,
} from './pgscale-vector-store.js'
export { scoreOf, type ScoreNormalization } from './scores.js'
export type { MetadataFilter as PgScaleFilter } from '../../filter/filter-tree.js'
