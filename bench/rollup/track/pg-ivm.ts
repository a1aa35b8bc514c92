import { sql } from 'kysely'
import type { Database } from '../../../src/index.js'
import { sqlTextConstant } from '../../../src/bench-kit.js'

/**
 * pg_ivm as the comparison beside tracking, when the server has it (never installed by pgscale: it
 * builds from its public source with PGXS). Its IMMV holds what the expenses rollup holds — sum and
 * count per tenant, local month and category, cancelled rows left out — and is maintained by
 * pg_ivm's own triggers in the writer's transaction.
 */
export interface PgIvm {
  version: string
  /** Creates the IMMV (populated from the source); not timed by the bench. */
  create(db: Database): Promise<void>
  /** Drops it and its triggers. */
  drop(db: Database): Promise<void>
}

/**
 * The pg_ivm comparison if the server has the extension available (created here if need be), else null.
 *
 * ### Examples
 * ```ts
 * const ivm = await pgIvm(db, 'pgscale_bench.expenses', 'America/Mexico_City')
 * if (ivm) { await ivm.create(db); ...; await ivm.drop(db) }
 * ```
 */
export async function pgIvm(db: Database, source: string, zone: string): Promise<PgIvm | null> {
  const { rows } = await sql<{
    version: string
  }>`select default_version as version from pg_available_extensions where name = 'pg_ivm'`.execute(db)
  if (!rows[0]) return null
  await sql`create extension if not exists pg_ivm`.execute(db)
  const name = `${source}_ivm`
  const month = `date_trunc('month', paid_at at time zone ${sqlTextConstant(zone)})`
  const view = `select tenant_id, ${month} as month, category, sum(amount) as total, count(*) as count from ${source} where status <> 'cancelled' group by tenant_id, ${month}, category`
  return {
    version: rows[0].version,
    create: async (d) => {
      await sql`select pgivm.create_immv(${name}, ${view})`.execute(d)
    },
    drop: async (d) => {
      await sql.raw(`drop table if exists ${name}`).execute(d)
    },
  }
}

/**
 * The pool options that load pg_ivm in every writer session (pg_ivm asks for it in
 * `session_preload_libraries`), or none without it. Loaded in every mode, so the modes differ only
 * by the triggers.
 *
 * ### Examples
 * ```ts
 * const writers = await connect({ connectionString: url, ...pgIvmSessionOptions(true) })
 * ```
 */
export function pgIvmSessionOptions(available: boolean): { options?: string } {
  return available ? { options: '-c session_preload_libraries=pg_ivm' } : {}
}
