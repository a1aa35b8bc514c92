import { CompiledQuery, type Compilable, type Kysely, type RawBuilder } from 'kysely'
import { adoptDatabase, type DatabaseHandle } from '../db/adopt.js'
import type { LocalSettings } from '../db/local-settings.js'

/** One node of a PostgreSQL plan (`EXPLAIN (FORMAT JSON)`), with the fields pgscale reads typed. */
export interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Parent Relationship'?: string
  'Join Type'?: string
  Strategy?: string
  'Startup Cost'?: number
  'Total Cost'?: number
  'Plan Rows'?: number
  'Actual Total Time'?: number
  'Actual Rows'?: number
  Plans?: PlanNode[]
  [field: string]: unknown
}

/** A whole plan: the root node and, with `analyze`, timings. */
export interface Plan {
  Plan: PlanNode
  'Planning Time'?: number
  'Execution Time'?: number
  /** The statement that was explained (for failure messages). */
  sql: string
}

/** Options of {@link explain}. */
export interface ExplainOptions {
  /** Run the statement (EXPLAIN ANALYZE) to get actual rows and times. Default false. */
  analyze?: boolean
  /** `SET LOCAL` settings for the explained statement, e.g. `{ 'hnsw.ef_search': 100 }`. */
  settings?: LocalSettings
}

/**
 * EXPLAINs a statement (SQL text with `$n` parameters, or a compiled/compilable Kysely query) and
 * returns the plan as a typed tree. Runs in a transaction that is always rolled back, so
 * `analyze` on a DELETE changes nothing.
 *
 * ### Examples
 * ```ts
 * const plan = await explain(db, 'select * from items where tenant_id = $1', ['acme'])
 * const plan2 = await explain(db, db.selectFrom('items').selectAll().where('id', '=', 1))
 * const plan3 = await explain(db, sql`select * from items where tenant_id = ${tenantId}`)
 * ```
 */
export async function explain(
  handle: DatabaseHandle,
  statement: string | CompiledQuery | Compilable | RawBuilder<unknown>,
  params: readonly unknown[] = [],
  options: ExplainOptions = {},
): Promise<Plan> {
  const db = adoptDatabase(handle)
  // A Kysely `sql` template compiles against a database (RawBuilder.compile(db)); a query builder
  // compiles by itself and ignores the argument.
  const compiled =
    typeof statement === 'string'
      ? CompiledQuery.raw(statement, [...params])
      : 'compile' in statement
        ? (statement as { compile(db: unknown): CompiledQuery }).compile(db)
        : statement
  const prefix = options.analyze ? 'explain (analyze, format json) ' : 'explain (format json) '
  const rollback = new Error('pgscale explain rollback')
  let plan: Plan | undefined
  await db
    .transaction(
      async (trx: Kysely<any>) => {
        const { rows } = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(
          CompiledQuery.raw(prefix + compiled.sql, [...compiled.parameters]),
        )
        const raw = rows[0]?.['QUERY PLAN']
        const parsed = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Array<Omit<Plan, 'sql'>>
        plan = { ...parsed[0]!, sql: compiled.sql }
        throw rollback
      },
      { settings: options.settings },
    )
    .catch((err: unknown) => {
      if (err !== rollback) throw err
    })
  return plan!
}

/** Every node of a plan, depth first. */
export function planNodes(plan: Plan | PlanNode): PlanNode[] {
  const root = 'Plan' in plan && typeof plan.Plan === 'object' ? (plan as Plan).Plan : (plan as PlanNode)
  const out: PlanNode[] = []
  const walk = (node: PlanNode, onShard: boolean) => {
    out.push(onShard ? withoutShardSuffix(node) : node)
    for (const child of node.Plans ?? []) walk(child, onShard)
    for (const remote of remotePlans(node)) walk(remote, true)
  }
  walk(root, false)
  return out
}

/**
 * The workers' plans inside a Citus distributed plan (`Custom Scan (Citus Adaptive)` → `Distributed
 * Query` → `Job` → `Tasks[]` → `Remote Plan`), so the same plan assertions see the shard's index scan.
 */
function remotePlans(node: PlanNode): PlanNode[] {
  const job = (node as { 'Distributed Query'?: { Job?: { Tasks?: Array<{ 'Remote Plan'?: unknown }> } } })['Distributed Query']?.Job
  const plans: PlanNode[] = []
  for (const task of job?.Tasks ?? []) {
    const remote = task['Remote Plan']
    const groups = Array.isArray(remote) ? remote.flat() : []
    for (const entry of groups) {
      const inner = (entry as { Plan?: PlanNode } | undefined)?.Plan
      if (inner && typeof inner === 'object') plans.push(inner)
    }
  }
  return plans
}

/** A shard's node with its relation and index named as on the coordinator (`chunks_102008` → `chunks`). */
function withoutShardSuffix(node: PlanNode): PlanNode {
  const copy = { ...node } as PlanNode & { 'Relation Name'?: string }
  if (copy['Index Name']) copy['Index Name'] = copy['Index Name'].replace(/_\d+$/, '')
  if (copy['Relation Name']) copy['Relation Name'] = copy['Relation Name'].replace(/_\d+$/, '')
  return copy
}

/**
 * The names of the indexes a plan reads, in plan order, without duplicates.
 *
 * ### Examples
 * ```ts
 * indexesUsed(plan) // ['rag_chunks_pkey']
 * ```
 */
export function indexesUsed(plan: Plan | PlanNode): string[] {
  return [...new Set(planNodes(plan).flatMap((n) => (n['Index Name'] ? [n['Index Name']] : [])))]
}

const KEYWORDS = new Set([
  'and',
  'or',
  'not',
  'any',
  'all',
  'array',
  'null',
  'is',
  'distinct',
  'from',
  'true',
  'false',
  'subplan',
  'initplan',
  'returns',
  'hashed',
])

/**
 * The columns an index condition constrains, without values: `tenant_id = 'x'::text AND
 * document_id = $2` → `document_id, tenant_id`. A statement that stops constraining the leading
 * column (the seed's `IS NOT DISTINCT FROM`) keeps its index name but changes this.
 */
export function conditionColumns(condition: string): string[] {
  const bare = condition
    .replace(/'(?:[^']|'')*'/g, ' ')
    .replace(/::[a-z_ ]+(\[\])?/gi, ' ')
    .replace(/\$\d+/g, ' ')
  const names = bare.match(/[a-z_][a-z0-9_]*/gi) ?? []
  return [...new Set(names.map((n) => n.toLowerCase()).filter((n) => !KEYWORDS.has(n)))].sort()
}

/**
 * A stable string of a plan's shape: node types, relations, indexes and the columns each index
 * condition constrains, nested, without costs, rows, values or timings. Equal shapes mean the
 * planner chose the same strategy.
 *
 * ### Examples
 * ```ts
 * planShape(plan) // 'ModifyTable [on rag_chunks] > Index Scan [rag_chunks_pkey on rag_chunks: document_id, tenant_id]'
 * ```
 */
export function planShape(plan: Plan | PlanNode): string {
  const root = 'Plan' in plan && typeof plan.Plan === 'object' ? (plan as Plan).Plan : (plan as PlanNode)
  const render = (node: PlanNode): string => {
    const condition = (node['Index Cond'] ?? node['Recheck Cond']) as string | undefined
    const columns = condition && node['Index Name'] ? conditionColumns(condition) : []
    const target =
      [node['Index Name'], node['Relation Name'] && `on ${node['Relation Name']}`].filter(Boolean).join(' ') +
      (columns.length ? `: ${columns.join(', ')}` : '')
    const self = `${node['Node Type']}${node.Strategy && node.Strategy !== 'Plain' ? ` (${node.Strategy})` : ''}${target ? ` [${target}]` : ''}`
    const children = (node.Plans ?? []).map(render)
    if (children.length === 0) return self
    if (children.length === 1) return `${self} > ${children[0]}`
    return `${self} > (${children.join(', ')})`
  }
  return render(root)
}
