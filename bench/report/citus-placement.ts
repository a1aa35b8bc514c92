import { sql, type Kysely } from 'kysely'
import { citusTasks, explain, planShape, type LocalSettings } from '../../src/index.js'

/** Where one tenant lives on a Citus cluster and how its statement ran there. */
export interface CitusTenantPlacement {
  /** What the bench calls the tenant's class (`small`, `large`, a rollup tenant, …). */
  label: string
  tenant: string
  /** The distributed table whose shard this is. */
  table: string
  shardId: number
  /** `worker N (host:port)`, N in the order of pg_dist_node. */
  worker: string
  /** Tasks of the statement's distributed plan: 1 = routed to one shard. */
  tasks: number
  /** The plan's shape, the shard's plan inside (`planShape`). */
  plan: string
}

/** A bench report's Citus section. */
export interface CitusPlacementReport {
  table: string
  shards: number
  workers: string[]
  tenants: CitusTenantPlacement[]
}

/**
 * For each tenant: the shard of `table` that holds it, that shard's worker, and the plan of the
 * tenant's statement (`statement(tenant)`, EXPLAINed with `settings`). `undefined` when `table` is
 * not distributed (plain PostgreSQL).
 *
 * ### Examples
 * ```ts
 * const citus = await citusPlacement(db, 'chunks', [{ label: 'large', tenant: 't-1' }], (t) => ({ sql, params: [t, q, 10] }))
 * ```
 */
export async function citusPlacement(
  db: Kysely<any>,
  table: string,
  tenants: ReadonlyArray<{ label: string; tenant: string | number }>,
  statement: (tenant: string | number) => { sql: string; params: readonly unknown[]; settings?: LocalSettings },
): Promise<CitusPlacementReport | undefined> {
  const { rows: dist } = await sql<{ shards: number }>`
    select count(*)::int as shards from pg_dist_shard where logicalrelid = to_regclass(${table})`
    .execute(db)
    .catch(() => ({ rows: [] as Array<{ shards: number }> }))
  if (!dist[0]?.shards) return undefined
  const { rows: nodes } = await sql<{ groupid: number; address: string }>`
    select groupid, nodename || ':' || nodeport as address from pg_dist_node
    where noderole = 'primary' and shouldhaveshards order by nodeid`.execute(db)
  const workerName = new Map(nodes.map((n, i) => [n.groupid, `worker ${i + 1} (${n.address})`]))
  const placements: CitusTenantPlacement[] = []
  for (const { label, tenant } of tenants) {
    const { rows } = await sql<{ shardid: string; groupid: number }>`
      select p.shardid::text, p.groupid from pg_dist_placement p
      where p.shardid = get_shard_id_for_distribution_column(${table}, ${String(tenant)}::text)`.execute(db)
    const s = statement(tenant)
    const plan = await explain(db, s.sql, s.params, { settings: s.settings })
    placements.push({
      label,
      tenant: String(tenant),
      table,
      shardId: Number(rows[0]?.shardid ?? 0),
      worker: workerName.get(rows[0]?.groupid ?? -1) ?? 'unknown',
      tasks: citusTasks(plan)?.taskCount ?? 0,
      plan: planShape(plan),
    })
  }
  return { table, shards: dist[0].shards, workers: nodes.map((n, i) => `worker ${i + 1} (${n.address})`), tenants: placements }
}

/** The section as lines for a person. */
export function renderCitusPlacement(r: CitusPlacementReport): string[] {
  const lines = [`Citus: ${r.table} in ${r.shards} shards on ${r.workers.length} node(s): ${r.workers.join(', ')}`]
  const width = Math.max(0, ...r.tenants.map((t) => t.label.length))
  for (const t of r.tenants) {
    lines.push(
      `  ${t.label.padEnd(width)}  tenant ${t.tenant}: shard ${t.shardId} of ${t.table} on ${t.worker}, ${t.tasks} task${t.tasks === 1 ? '' : 's'}`,
    )
    lines.push(`    ${t.plan}`)
  }
  return lines
}
