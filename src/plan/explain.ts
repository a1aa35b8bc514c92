import { CompiledQuery, type Compilable, type Kysely, type RawBuilder } from 'kysely'
import { adoptDatabase, type DatabaseHandle } from '../db/adopt.js'
import type { LocalSettings } from '../db/local-settings.js'
import { arrayLiteral, inlineParameters, isInlineValue } from '../sql/literal.js'

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
  const run = async (statement: CompiledQuery): Promise<Plan> => {
    const rollback = new Error('pgscale explain rollback')
    let plan: Plan | undefined
    await db
      .transaction(
        async (trx: Kysely<any>) => {
          const { rows } = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(
            CompiledQuery.raw(prefix + statement.sql, [...statement.parameters]),
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
  try {
    return await run(compiled)
  } catch (err) {
    // Citus 13 cannot EXPLAIN some statements with bound parameters (a modifying CTE: 0A000 "could
    // not create distributed plan … parameters in SQL functions") that it runs with them; the plan
    // of the same statement with its values inlined is the plan it runs.
    const inlined = citusInlinedRetry(err, compiled)
    if (!inlined) throw err
    return run(inlined)
  }
}

/** The statement with its values inlined, when `err` is Citus refusing its parameters and that is safe. */
function citusInlinedRetry(err: unknown, compiled: CompiledQuery): CompiledQuery | undefined {
  const e = (err as { cause?: unknown }).cause ?? err
  const { code, message } = e as { code?: string; message?: string }
  if (code !== '0A000' || !/could not create distributed plan/.test(message ?? '')) return undefined
  // Arrays of text and numbers go as array literals (`'{"2025-01-01","2025-02-01"}'`, untyped).
  const values = compiled.parameters.map((v) => (Array.isArray(v) && v.every(isInlineValue) ? arrayLiteral(v) : v))
  // Only `$n` placeholders may contain `$` (no dollar quoting), and only text and numbers inline.
  if (values.length === 0 || /\$(?!\d)/.test(compiled.sql) || !values.every(isInlineValue)) return undefined
  return CompiledQuery.raw(inlineParameters(compiled.sql, values))
}

/** Every node of a plan, depth first. */
export function planNodes(plan: Plan | PlanNode): PlanNode[] {
  const root = 'Plan' in plan && typeof plan.Plan === 'object' ? (plan as Plan).Plan : (plan as PlanNode)
  const out: PlanNode[] = []
  const walk = (node: PlanNode, onShard: boolean) => {
    out.push(onShard ? withoutShardSuffix(node) : node)
    for (const child of [...(node.Plans ?? []), ...coordinatorPlans(node)]) walk(child, onShard)
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
  const job = citusJob(node)
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

/**
 * Plans Citus nests in a coordinator node outside `Plans`: an `INSERT … SELECT` (`Custom Scan
 * (Citus INSERT … SELECT)`) holds its distributed SELECT in `Select Query`, a plan with
 * subplans holds them in `Distributed Query` → `Subplans`.
 */
function coordinatorPlans(node: PlanNode): PlanNode[] {
  const found: PlanNode[] = []
  const collect = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(collect)
    if (value === null || typeof value !== 'object') return
    const inner = (value as { Plan?: unknown }).Plan
    if (inner && typeof inner === 'object' && 'Node Type' in inner) found.push(inner as PlanNode)
    else Object.values(value).forEach(collect)
  }
  collect(node['Select Query'])
  collect((node as { 'Distributed Query'?: { Subplans?: unknown } })['Distributed Query']?.Subplans)
  return found
}

/** The Citus job of a node (`Custom Scan (Citus Adaptive)`'s `Distributed Query`), if it has one. */
interface CitusJob {
  'Task Count'?: number
  Tasks?: Array<{ Node?: string; 'Remote Plan'?: unknown }>
}
function citusJob(node: PlanNode): CitusJob | undefined {
  return (node as { 'Distributed Query'?: { Job?: CitusJob } })['Distributed Query']?.Job
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
 * planner chose the same strategy. A Citus distributed scan shows its task count and the shard's
 * plan (`remote:`), with shard names mapped back to the coordinator's.
 *
 * ### Examples
 * ```ts
 * planShape(plan) // 'ModifyTable [on rag_chunks] > Index Scan [rag_chunks_pkey on rag_chunks: document_id, tenant_id]'
 * planShape(citusPlan) // 'Custom Scan (Citus Adaptive, 1 task) > remote: Limit > Index Scan [rag_chunks_pkey on rag_chunks: …]'
 * ```
 */
export function planShape(plan: Plan | PlanNode): string {
  const root = 'Plan' in plan && typeof plan.Plan === 'object' ? (plan as Plan).Plan : (plan as PlanNode)
  const render = (raw: PlanNode, onShard: boolean): string => {
    const node = onShard ? withoutShardSuffix(raw) : raw
    const condition = (node['Index Cond'] ?? node['Recheck Cond']) as string | undefined
    const columns = condition && node['Index Name'] ? conditionColumns(condition) : []
    const target =
      [node['Index Name'], node['Relation Name'] && `on ${node['Relation Name']}`].filter(Boolean).join(' ') +
      (columns.length ? `: ${columns.join(', ')}` : '')
    const job = citusJob(node)
    const provider = node['Custom Plan Provider'] as string | undefined
    const taskCount = job?.['Task Count'] ?? 0
    const detail = job
      ? `${provider ?? 'Citus'}, ${taskCount} task${taskCount === 1 ? '' : 's'}`
      : (provider ?? (node.Strategy !== 'Plain' && node.Strategy))
    const self = `${node['Node Type']}${detail ? ` (${detail})` : ''}${target ? ` [${target}]` : ''}`
    const children = [
      ...[...(node.Plans ?? []), ...coordinatorPlans(raw)].map((child) => render(child, onShard)),
      ...remotePlans(raw).map((remote) => `remote: ${render(remote, true)}`),
    ]
    if (children.length === 0) return self
    if (children.length === 1) return `${self} > ${children[0]}`
    return `${self} > (${children.join(', ')})`
  }
  return render(root, false)
}

/** What a Citus distributed plan says about where it runs. */
export interface CitusTasks {
  /** Tasks (shards queried) over the plan's distributed scans: 1 for a router query. */
  taskCount: number
  /** The workers of the tasks the plan shows (`host:port`; EXPLAIN shows one task unless `citus.explain_all_tasks`). */
  nodes: string[]
}

/**
 * The Citus tasks of a plan (`Custom Scan (Citus Adaptive)`), or `undefined` for a plan that is not
 * distributed. A tenant's statement routed to one shard has `taskCount` 1.
 *
 * ### Examples
 * ```ts
 * const plan = await explain(db, 'select * from chunks where tenant_id = $1', ['acme'])
 * expect(citusTasks(plan)?.taskCount).toBe(1)
 * ```
 */
export function citusTasks(plan: Plan | PlanNode): CitusTasks | undefined {
  let taskCount = 0
  let distributed = false
  const nodes = new Set<string>()
  const walk = (node: PlanNode) => {
    const job = citusJob(node)
    if (job) {
      distributed = true
      taskCount += job['Task Count'] ?? 0
      for (const task of job.Tasks ?? []) {
        const m = /host=(\S+) port=(\d+)/.exec(task.Node ?? '')
        if (m) nodes.add(`${m[1]}:${m[2]}`)
      }
    }
    for (const child of [...(node.Plans ?? []), ...coordinatorPlans(node)]) walk(child)
  }
  walk('Plan' in plan && typeof plan.Plan === 'object' ? (plan as Plan).Plan : (plan as PlanNode))
  return distributed ? { taskCount, nodes: [...nodes] } : undefined
}
