import type { Kysely } from 'kysely'
import { objectSchema, objectVersionTable } from '../../db/migration/bookkeeping.js'
import { objectMigrationSql } from '../../db/migration/object-migration-sql.js'
import { assertMigrationOptions, dirtyKeyNames, type RollupMigrationOptions } from '../config/index.js'
import { checkRollupOnServer, rollupKey, rollupRecord, tableGrants, trackingCommentStatement, trackingDdl } from '../schema/index.js'
import type { RollupContext } from './rollup-context.js'

/** The schema of a quoted `"schema"."name"` (undefined for a bare `"name"`). */
function schemaOf(quoted: string): string | undefined {
  const parts = quoted.split('"."')
  return parts.length === 2 ? parts[0]!.replace(/^"/, '') : undefined
}

/**
 * A rollup's DDL as one transaction of plain SQL (what `pgscale migrate --print` writes): its
 * table (and the sketch extensions its measures need), with `track` its dirty-key log, trigger
 * function and triggers and the record `MonthlyRollup.tracked` reads, its fleet level when it
 * declares one (the table, its marker and row-level security, filled from the rollup table under
 * a `SHARE` lock, only while empty), and the runtime role's grants (with `track`, `SELECT` on the
 * record's table too: `pgscale drain` as that role finds the rollup). Tracking needs the source's
 * `at` column type, read from `db` (no DDL; the fleet table need not exist yet).
 *
 * ### Examples
 * ```ts
 * await writeFile('V8__expenses_monthly.sql', await rollupMigrationSql(ctx, db, { runtimeRole: 'app', track: true }))
 * ```
 */
export async function rollupMigrationSql(
  ctx: RollupContext,
  db: Kysely<any>,
  options: RollupMigrationOptions & { track?: boolean } = {},
): Promise<string> {
  const { target } = ctx.parts
  assertMigrationOptions(options, 'migrationSql')
  const track = options.track !== false
  // The rollup's own server checks only: the fleet level's (its table exists) would refuse the script that creates it.
  const parts = track ? { ...ctx.parts, atKind: await checkRollupOnServer(db.withoutPlugins(), ctx.parts) } : ctx.parts
  const log = dirtyKeyNames(parts).log
  const fleet = ctx.fleet?.level?.migrationSql(options.runtimeRole)
  return objectMigrationSql({
    key: rollupKey(parts),
    config: ((track ? rollupRecord(parts) : undefined) ?? { target: target.name }) as unknown as Record<string, unknown>,
    version: 1,
    checkConfig: false,
    record: track,
    statements: [...target.ddl(), ...(track ? [...trackingDdl(parts), trackingCommentStatement(parts)] : []), ...(fleet?.statements ?? [])],
    after: [
      ...tableGrants(schemaOf(target.qualified), target.qualified, options.runtimeRole),
      ...(track ? tableGrants(schemaOf(log), log, options.runtimeRole) : []),
      // The record, readable by the role: `pgscale drain` as the runtime role finds the rollup (as a store's grants do).
      ...(track && options.runtimeRole
        ? [`grant select on ${objectVersionTable(objectSchema(rollupKey(parts)))} to "${options.runtimeRole}"`]
        : []),
      ...(fleet?.grants ?? []),
    ],
  })
}
