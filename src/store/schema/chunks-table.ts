import { sql } from 'kysely'
import type { ObjectMigrationStep } from '../../db/migration/object-migrations.js'
import {
  partitionName,
  querySamplePartition,
  querySampleTable,
  recallMonitorTable,
  type ResolvedStoreConfig,
  storeIndexNames,
  tuningTable,
} from '../config/index.js'
import { quoteQualified } from '../../sql/quote.js'
import { isoInstantFunction, isoInstantFunctionSql } from '../../filter/iso-instant.js'

/**
 * The schema of a store's chunks table, as versioned steps (run by `migrateObject`). Every key
 * is led by `tenant_id`, so the table can be distributed by tenant (Citus) without a redesign.
 * Identifiers come from a validated configuration.
 */
export function chunksTableSteps(config: ResolvedStoreConfig): ObjectMigrationStep[] {
  const t = sql.raw(config.qualified)
  const names = storeIndexNames(config.table)
  return [
    {
      // 1: the table, its primary key (tenant reads + document deletes) and the full-text index
      // (unless fullText: false). Ids collate "C" (byte order; their order is never shown): under
      // an en_US.UTF-8 default, loading 100k rows' keys took 1.47× as long (docs/performance.md).
      async up(trx) {
        await sql`create table if not exists ${t} (
            tenant_id text collate "C" not null,
            document_id text collate "C" not null,
            chunk_index integer not null,
            content text not null,
            metadata jsonb not null default '{}'::jsonb,
            embedding ${sql.raw(config.vectors.column)} not null,
            ${config.fullText ? sql`search_text tsvector generated always as (to_tsvector(${sql.lit(config.textSearchConfig)}::regconfig, content)) stored,` : sql``}
            constraint ${sql.id(names.primaryKey)} primary key (tenant_id, document_id, chunk_index)
          )${config.partitions > 0 ? sql` partition by hash (tenant_id)` : sql``}`.execute(trx)
        for (let remainder = 0; remainder < config.partitions; remainder++) {
          const partition = sql.raw(quoteQualified(config.schema, partitionName(config.table, remainder)))
          await sql`create table if not exists ${partition} partition of ${t}
            for values with (modulus ${sql.lit(config.partitions)}, remainder ${sql.lit(remainder)})`.execute(trx)
        }
        // After the partitions: ALTER TABLE on a partitioned table recurses to them.
        if (config.embeddingStorage === 'plain') {
          await sql`alter table ${t} alter column embedding set storage plain`.execute(trx)
        }
        if (config.fullText) await sql`create index if not exists ${sql.id(names.searchText)} on ${t} using gin (search_text)`.execute(trx)
      },
    },
    {
      // 2: per-tenant search settings chosen by optimize({ targetRecall }) (src/store/tenant-tuning.ts).
      async up(trx) {
        await sql`create table if not exists ${sql.raw(tuningTable(config))} (
            tenant_id text collate "C" not null primary key,
            ef_search integer,
            exact boolean not null default false,
            rows_at_tuning integer not null,
            target_recall double precision not null,
            recall double precision not null,
            search_p50_ms double precision,
            exact_p50_ms double precision,
            index_m integer,
            index_ef_construction integer,
            tuned_at timestamptz not null
          )`.execute(trx)
      },
    },
    {
      // 3: the timestamp reader of metadata filters (src/filter/iso-instant.ts), in the store's
      // schema. Stores of one schema share it: they take turns creating it.
      async up(trx) {
        await sql`select pg_advisory_xact_lock(hashtext('pgscale.functions'), hashtext(${config.schema ?? 'public'}))`.execute(trx)
        const { rows } = await sql<{
          fn: string | null
        }>`select to_regprocedure(${`${isoInstantFunction(config.schema)}(jsonb)`})::text as fn`.execute(trx)
        if (!rows[0]?.fn) await sql.raw(isoInstantFunctionSql(config.schema)).execute(trx)
      },
    },
    querySampleStep(config),
    {
      // 5: the filter each sampled search was sent with (src/store/tenant/search/query-sample.ts), and
      // what tuning chose for a tenant's filtered path and which alternatives it tried
      // (src/store/schema/tenant-tuning.ts).
      async up(trx) {
        await sql`alter table ${sql.raw(querySampleTable(config))} add column if not exists filter jsonb`.execute(trx)
        await sql`alter table ${sql.raw(tuningTable(config))}
            add column if not exists filter_tuning jsonb,
            add column if not exists alternatives jsonb`.execute(trx)
      },
    },
  ]
}

/** Step 4: the query sample (src/store/query-sample.ts; tenant-led, partitioned like the chunks), the recall monitor (src/store/recall-monitor.ts) and where each tenant's tuning came from. */
function querySampleStep(config: ResolvedStoreConfig): ObjectMigrationStep {
  return {
    // 4: the query sample (src/store/query-sample.ts; tenant-led, partitioned like the chunks),
    // the recall monitor (src/store/recall-monitor.ts) and where each tenant's tuning came from.
    async up(trx) {
      const sample = sql.raw(querySampleTable(config))
      await sql`create table if not exists ${sample} (
            tenant_id text collate "C" not null,
            sample_id text collate "C" not null,
            embedding ${sql.raw(config.vectors.column)} not null,
            sampled_at timestamptz not null,
            primary key (tenant_id, sample_id)
          )${config.partitions > 0 ? sql` partition by hash (tenant_id)` : sql``}`.execute(trx)
      for (let remainder = 0; remainder < config.partitions; remainder++) {
        const partition = sql.raw(quoteQualified(config.schema, querySamplePartition(config.table, remainder)))
        await sql`create table if not exists ${partition} partition of ${sample}
            for values with (modulus ${sql.lit(config.partitions)}, remainder ${sql.lit(remainder)})`.execute(trx)
      }
      await sql`create table if not exists ${sql.raw(recallMonitorTable(config))} (
            tenant_id text collate "C" not null,
            source text not null,
            recall double precision not null,
            queries integer not null,
            ef_search integer,
            exact boolean not null,
            measured_at timestamptz not null,
            primary key (tenant_id, source)
          )`.execute(trx)
      await sql`alter table ${sql.raw(tuningTable(config))}
            add column if not exists query_source text not null default 'chunks',
            add column if not exists tuning_queries integer`.execute(trx)
    },
  }
}
