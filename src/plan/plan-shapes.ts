import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { sql, type CompiledQuery, type RawBuilder } from 'kysely'
import { adoptDatabase, type DatabaseHandle } from '../db/adopt.js'
import { hasCitusShardNodes } from '../db/database.js'
import type { LocalSettings } from '../db/local-settings.js'
import { InvalidArgumentError, PlanRegressionError, type PlanShapeChange } from '../errors.js'
import { explain, planShape } from './explain.js'

/** A statement `explain` takes: SQL text, a compiled Kysely query, or a builder / `sql` fragment. */
export type PlanStatement =
  | string
  | CompiledQuery
  | {
      /** Compiles the builder to SQL and parameters (a Kysely query builder's `compile`). */
      compile(...args: any[]): CompiledQuery
    }
  | RawBuilder<unknown>

/** One case of {@link checkPlanShapes}: a statement, or a statement with its parameters and settings. */
export type PlanCase = PlanStatement | { statement: PlanStatement; params?: readonly unknown[]; settings?: LocalSettings }

/** Options of {@link checkPlanShapes}. */
export interface PlanShapesOptions {
  /**
   * The shapes file, without its server suffix: `test/plans.json` reads and writes
   * `test/plans.pg15.json` on PostgreSQL 15, `plans.pg15-citus.json` on a Citus coordinator,
   * `plans.pg17-pglite.json` on PGlite.
   */
  file: string
  /** Write the shapes instead of comparing (also when `PGSCALE_PLANS_RECORD=1`). */
  record?: boolean
  /** `SET LOCAL` settings for every case (a case's own settings win). */
  settings?: LocalSettings
  /** EXPLAIN ANALYZE (runs each statement, in a transaction rolled back). Default false. */
  analyze?: boolean
}

/** What {@link checkPlanShapes} did. */
export interface PlanShapesResult {
  /** The file it read or wrote. */
  file: string
  recorded: boolean
  /** The shape of every case, by name. */
  shapes: Record<string, string>
}

/**
 * The plan-regression gate for your CI: explains every named statement, reduces each plan to its
 * shape (node types, relations, indexes and the columns their conditions constrain; no costs) and
 * compares the shapes with those recorded for this server's major version. A changed shape, or a
 * statement never recorded, throws a {@link PlanRegressionError} listing only those statements,
 * with the recorded and the new shape. With `record` (or `PGSCALE_PLANS_RECORD=1`) it writes the
 * file instead — exactly the cases given, sorted, one shape per line, so a diff reviews well.
 * Comparing, a recorded case that was not passed is left alone (a run may check a subset).
 *
 * ### Examples
 * ```ts
 * await checkPlanShapes(db, {
 *   'orders page': db.selectFrom('orders').selectAll().where('tenant_id', '=', 42).orderBy('created_at', 'desc').limit(50),
 *   'order by id': { statement: 'select * from orders where tenant_id = $1 and id = $2', params: [42, 7] },
 * }, { file: 'test/plans.json' })
 * ```
 */
export async function checkPlanShapes(
  handle: DatabaseHandle,
  cases: Readonly<Record<string, PlanCase>>,
  options: PlanShapesOptions,
): Promise<PlanShapesResult> {
  if (cases === null || typeof cases !== 'object' || Array.isArray(cases)) {
    throw new InvalidArgumentError('checkPlanShapes: cases must be an object of named statements')
  }
  if (typeof options?.file !== 'string' || options.file.length === 0)
    throw new InvalidArgumentError('checkPlanShapes: options.file is required')
  const normalized = Object.entries(cases).map(([name, c]) => [name, normalizeCase(name, c)] as const)
  const db = adoptDatabase(handle)
  const file = await shapesFile(db, options.file)
  const shapes: Record<string, string> = {}
  for (const [name, c] of normalized.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const plan = await explain(db, c.statement, c.params ?? [], {
      analyze: options.analyze,
      settings: { ...options.settings, ...c.settings },
    })
    shapes[name] = planShape(plan)
  }
  if (options.record || process.env.PGSCALE_PLANS_RECORD === '1') {
    writeFileSync(file, JSON.stringify(sortKeys(shapes), null, 2) + '\n')
    return { file, recorded: true, shapes }
  }
  if (!existsSync(file)) {
    const names = Object.keys(shapes)
    throw new PlanRegressionError(
      `no plan shapes recorded at ${file}: record them with PGSCALE_PLANS_RECORD=1 (or { record: true })`,
      [],
      names,
      file,
    )
  }
  const recorded = readShapes(file)
  const changes: PlanShapeChange[] = []
  const unrecorded: string[] = []
  for (const [name, now] of Object.entries(shapes)) {
    if (!(name in recorded)) unrecorded.push(name)
    else if (recorded[name] !== now) changes.push({ name, recorded: recorded[name]!, now })
  }
  if (changes.length || unrecorded.length) {
    const lines = [
      ...changes.map((c) => `${c.name}\n    recorded: ${c.recorded}\n    now:      ${c.now}`),
      ...unrecorded.map((n) => `${n}\n    recorded: (none)\n    now:      ${shapes[n]}`),
    ]
    throw new PlanRegressionError(
      `plan shapes changed against ${file} (re-record with PGSCALE_PLANS_RECORD=1 if the change is intended):\n  ${lines.join('\n  ')}`,
      changes,
      unrecorded,
      file,
    )
  }
  return { file, recorded: false, shapes }
}

function normalizeCase(name: string, c: PlanCase): { statement: PlanStatement; params?: readonly unknown[]; settings?: LocalSettings } {
  if (isStatement(c)) return { statement: c }
  if (c !== null && typeof c === 'object' && 'statement' in c && isStatement(c.statement)) {
    if (c.params !== undefined && !Array.isArray(c.params))
      throw new InvalidArgumentError(`checkPlanShapes: ${JSON.stringify(name)}: params must be an array`)
    return c
  }
  throw new InvalidArgumentError(
    `checkPlanShapes: ${JSON.stringify(name)} is not a statement (SQL text, a compiled Kysely query, a builder or sql fragment, or { statement, params })`,
  )
}

function isStatement(value: unknown): value is PlanStatement {
  if (typeof value === 'string') return value.trim().length > 0
  if (value === null || typeof value !== 'object') return false
  const v = value as { sql?: unknown; parameters?: unknown; compile?: unknown }
  return (typeof v.sql === 'string' && Array.isArray(v.parameters)) || typeof v.compile === 'function'
}

/** `plans.json` → `plans.pg15.json`, `plans.pg15-citus.json`, `plans.pg17-pglite.json`. */
async function shapesFile(db: ReturnType<typeof adoptDatabase>, file: string): Promise<string> {
  const { rows } = await sql<{ v: string }>`select current_setting('server_version_num') as v`.execute(db)
  const major = Math.floor(Number(rows[0]!.v) / 10000)
  const flavour = db.capabilities.inProcess ? '-pglite' : (await hasCitusShardNodes(db)) ? '-citus' : ''
  const dot = file.toLowerCase().endsWith('.json') ? file.length - 5 : file.length
  return `${file.slice(0, dot)}.pg${major}${flavour}.json`
}

function readShapes(file: string): Record<string, string> {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new InvalidArgumentError(`checkPlanShapes: ${file} is not a shapes file (${err instanceof Error ? err.message : String(err)})`, {
      cause: err,
    })
  }
  if (
    parsed === null ||
    typeof parsed !== 'object' ||
    Array.isArray(parsed) ||
    !Object.values(parsed).every((v) => typeof v === 'string')
  ) {
    throw new InvalidArgumentError(`checkPlanShapes: ${file} is not a shapes file (an object of statement names and shape strings)`)
  }
  return parsed as Record<string, string>
}

function sortKeys(shapes: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(shapes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
