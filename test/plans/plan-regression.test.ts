import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'kysely'
import { beforeAll, describe, expect, it } from 'vitest'
import { explain, hasCitusShardNodes, planShape } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { seedPlanData, type PlanCase } from './plan-cases.js'

/**
 * Plan regression: the shape (node types, relations, indexes; no costs) of every statement the
 * store and the rollup send, compared with the shapes recorded in test/plans/shapes.pgNN.json.
 * A changed shape fails with the old and the new side by side. Re-record with
 * `npm run plans:record` (and say why in the commit message). On a Citus cluster (the tables
 * distributed by tenant) the shapes are the distributed plans, in shapes.pgNN-citus.json:
 * `PGSCALE_TEST_CITUS_WORKERS=2 PGSCALE_TEST_PROVIDER=local npm run plans:record`.
 */
const t = useTestDatabase()
const recording = process.env.PGSCALE_PLANS_RECORD === '1'
let cases: PlanCase[]
let major: number
let flavour: string

beforeAll(async () => {
  cases = await seedPlanData(t.db)
  const { rows } = await sql<{ v: string }>`select current_setting('server_version_num') as v`.execute(t.db)
  major = Math.floor(Number(rows[0]!.v) / 10000)
  flavour = (await hasCitusShardNodes(t.db)) ? '-citus' : ''
}, 300_000)

describe('plan regression', () => {
  it('every statement keeps its recorded plan shape', async (ctx) => {
    const file = join(import.meta.dirname, `shapes.pg${major}${flavour}.json`)
    const shapes: Record<string, string> = {}
    for (const c of cases) shapes[c.name] = planShape(await explain(t.db, c.statement, [], { settings: c.settings }))
    if (recording) {
      writeFileSync(file, JSON.stringify(shapes, null, 2) + '\n')
      console.log(`[plans] recorded ${cases.length} shapes for PostgreSQL ${major} in ${file}`)
      return
    }
    if (!existsSync(file)) {
      console.warn(`[plans] no shapes recorded for PostgreSQL ${major}: run \`npm run plans:record\` on this server`)
      ctx.skip()
      return
    }
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
    const changes = Object.keys({ ...recorded, ...shapes })
      .filter((name) => recorded[name] !== shapes[name])
      .map((name) => `${name}\n    recorded: ${recorded[name] ?? '(none)'}\n    now:      ${shapes[name] ?? '(gone)'}`)
    expect(changes, `plan shapes changed (npm run plans:record re-records, if the change is intended):\n  ${changes.join('\n  ')}`).toEqual(
      [],
    )
  })
})
