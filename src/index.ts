// The public API of pgscale. Internals are not re-exported.
export { adoptDatabase, type DatabaseHandle } from './db/adopt.js'
export { connect, connectPglite, type ConnectOptions } from './db/connect.js'
export { joinTransaction, type AppTransaction } from './db/joined-transaction.js'
export {
  Database,
  type DatabaseConfig,
  type DatabaseTransaction,
  type TransactionConnection,
  type TransactionOptions,
  hasCitusExtension,
  hasCitusShardNodes,
} from './db/database.js'
export type { LocalSettings } from './db/local-settings.js'
export { migrate, MIGRATION_TABLE, type MigrateOptions } from './db/migration/migrate.js'
export { vectorExtensionMigration } from './db/migration/vector-extension-migration.js'
export { checkProvider, provision, PROVIDERS, type ProviderCheck, type ProvisionOptions } from './db/provision.js'
export { registerProvider, type ProviderName } from './db/providers/registry.js'
export {
  DEFAULT_SERVER_SETTINGS,
  type Provider,
  type ProvisionedDatabase,
  type ServerSettings,
  type SkippedProvider,
} from './db/providers/provider.js'
export { ensureVectorExtension, MIN_PGVECTOR_VERSION, type ServerInfo } from './db/server-info.js'
export type { Capabilities, CopySource } from './db/pools/session.js'
export { expectPlan, noSeqScan, renderPlan, usesIndex } from './plan/assertions.js'
export { checkPlanShapes, type PlanCase, type PlanShapesOptions, type PlanShapesResult, type PlanStatement } from './plan/plan-shapes.js'
export {
  citusTasks,
  explain,
  indexesUsed,
  planNodes,
  planShape,
  type CitusTasks,
  type ExplainOptions,
  type Plan,
  type PlanNode,
} from './plan/explain.js'
export {
  MonthlyRollup,
  type DrainOptions,
  type MarkDirtyOptions,
  type MonthlyRollupConfig,
  type ReadAcrossOptions,
  type RefreshDirtyOptions,
  type RefreshDirtyResult,
  type RefreshFleetOptions,
  type RefreshFleetResult,
  type RollupAcrossRow,
  type DirtyLogStats,
  type ReadOptions,
  type RebuildOptions,
  type RefreshAtOptions,
  type RollupRow,
} from './rollup/index.js'
export {
  fromToken,
  ReplicaSet,
  ReplicaTimeoutError,
  tenantKey,
  toToken,
  WriteJournal,
  type ReadConsistency,
  type ReplicaNodeStats,
  type ReplicaOptions,
  type ReplicaStats,
  type TenantKey,
} from './replicas/index.js'
export {
  cannotOpen,
  configRollups,
  defineConfig,
  doctorAll,
  doctorRollup,
  doctorStore,
  exitCodeOf,
  forgetMissing,
  forgetRecord,
  loadConfig,
  missingFindings,
  staleRecordFindings,
  opsRollups,
  opsStores,
  qualifiedName,
  recallCheck,
  recordedObjects,
  recordedStores,
  recordRelations,
  resolveRecord,
  withStores,
  type DoctorOptions,
  type DoctorTargets,
  type Finding,
  type ForgetOutcome,
  type RecordedKind,
  type RecordedObject,
  type OpsRollup,
  type PgscaleConfig,
  type RecallCheckOptions,
} from './ops/index.js'
export { rollupTable, type RollupMigrationOptions, type RollupTable, type RollupTableConfig } from './rollup/index.js'
export { fleetTable, type FleetTable, type FleetTableConfig, type PercentileSketchOptions } from './rollup/index.js'
export type {
  ColumnsOf,
  ColumnTypes,
  CheckedColumns,
  GroupByOf,
  GroupColumnOf,
  GroupInputOf,
  GroupNameOf,
  MeasureColumnOf,
  MeasureNameOf,
  MeasuresOf,
  MonthlyRollupConfigOf,
  NormalizedColumnType,
  PercentileNameOf,
  PercentilesFor,
  RankableMeasureOf,
  ReadAcrossOptionsOf,
  ReadAcrossOptionsWith,
  ReadOptionsOf,
  ReadOptionsWith,
  RollupAcrossRowOf,
  RollupColumnType,
  RollupColumnValue,
  RollupRowOf,
  RollupSketchType,
  RollupTableConfigOf,
  RollupTableOf,
  RollupTop,
  TdigestMeasureOf,
  TopInputOf,
  TopOf,
} from './rollup/index.js'
export type { RecordedLevel, RecordedRollup } from './rollup/index.js'
export { approxCountDistinct, approxPercentiles, type DistinctSketchOptions, type PercentileRequest } from './rollup/index.js'
export type { SourceIndex } from './rollup/index.js'
export {
  DEFAULT_OWN_INDEX_ABOVE,
  DEFAULT_MAX_OWN_INDEXES,
  PgVectorStore,
  type BulkIngestOptions,
  type BulkIngestResult,
  type OptimizeOptions,
  type OptimizeResult,
  type StoreStats,
} from './store/index.js'
export type { IngestOptions, IngestResult, IngestRow, SkippedRow, TenantIngestRow } from './store/index.js'
export type { MeasureRecallOptions, MeasureRecallResult, TenantRecall } from './store/index.js'
export { countRecall, DEFAULT_RECALL_EPSILON, recallOf, type RecallCount } from './store/index.js'
export type { FilterTuning, TenantTuning, TunedAlternative } from './store/index.js'
export type { StoreMigrationOptions } from './store/index.js'
export {
  DEFAULT_SPACE,
  type EmbedTexts,
  type EmbeddingSpace,
  type EmbeddingSpaceConfig,
  type MigrateTenantOptions,
  type MigrateTenantResult,
  type MigrationStatus,
  type SwitchTenantOptions,
  type TenantSpaceState,
  type CompareSpacesOptions,
  type SpaceComparison,
  type SpaceQuality,
  ndcgAt,
  overlapAt,
  rankCorrelation,
  recallAt,
} from './store/index.js'
export {
  DEFAULT_MMR_FETCH_K,
  DEFAULT_MMR_LAMBDA,
  DOCUMENT_LOCKS_MAX,
  GET_CHUNKS_MAX_IDS,
  maximalMarginalRelevance,
  type GetChunksOptions,
  type MarginalRelevanceOptions,
  type MaxMarginalRelevanceOptions,
  type MetadataUpdate,
  type MetadataUpdateMode,
  type StoredChunk,
  type UpdateTarget,
  type UpsertChunkInput,
  type UpsertChunksOptions,
} from './store/index.js'
export type { QuerySampleFlush } from './store/index.js'
export type { QuerySampleOptions } from './store/index.js'
export type { TenantRecallReport, RecallFigure, QuerySource } from './store/index.js'
export { DEFAULT_TARGET_RECALL, type RecallTuningOptions, type TenantTuningReport } from './store/index.js'
export type { Embedding } from './store/index.js'
export type { IndexBuildOptions, IndexBuildProgress, IndexBuildResult } from './store/index.js'
export type { Distance, PgVectorStoreConfig, Quantization, VectorType } from './store/index.js'
export { DEFAULT_RERANK } from './store/index.js'
export { matchesFilter } from './filter/filter-reference.js'
export { FILTER_LIMITS, type MetadataFilter } from './filter/filter-tree.js'
export type {
  FieldCondition,
  FieldOperators,
  Filter,
  FilterJson,
  FilterJsonObject,
  FilterOf,
  FilterScalar,
  FilterValue,
  LogicalOperators,
  StoreFilter,
} from './filter/filter-types.js'
export type { MetadataFieldType } from './filter/metadata-field.js'
export type { MetadataIndex, MetadataIndexOptions } from './store/index.js'
export type { FindCursor, FindOptions, FindResult, FoundChunk } from './store/index.js'
export { DEFAULT_EXACT_BELOW, MAX_SELECTIVITY_SCALE, walkEfSearch, type FilteredBudget, type FilterStrategy } from './store/index.js'
export {
  TenantStore,
  type ChunkInput,
  type HybridSearchOptions,
  type HybridSearchResult,
  type IterativeScan,
  type SearchOptions,
  type SearchResult,
} from './store/index.js'
export {
  ConnectionError,
  DatabaseError,
  DimensionMismatchError,
  ExtensionMissingError,
  IndexBuildError,
  InvalidArgumentError,
  InvalidIdentifierError,
  InvalidTimeZoneError,
  MigrationError,
  MigrationRequiredError,
  EmbeddingSpaceError,
  PgScaleError,
  PrivilegeError,
  PlanAssertionError,
  PlanRegressionError,
  type PlanShapeChange,
  ProviderUnavailableError,
  DatabaseNotConfiguredError,
  SchemaMismatchError,
  type PgScaleErrorCode,
} from './errors.js'
export { assertIdentifier, assertQualifiedName } from './sql/identifier.js'
