import { join } from 'node:path'
import { beforeAll, describe, it } from 'vitest'
import { checkPlanShapes } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'
import { seedPlanData, type PlanCase } from './plan-cases.js'

/**
 * Plan regression: the shape (node types, relations, indexes; no costs) of every statement the
 * store and the rollup send, through the public `checkPlanShapes` — the gate pgscale offers apps —
 * against test/plans/shapes.pgNN.json (shapes.pgNN-citus.json on a Citus coordinator,
 * shapes.pgNN-pglite.json on PGlite). A changed shape fails with the old and the new side by side.
 * Re-record with `npm run plans:record` (and say why in the commit message); on Citus:
 * `PGSCALE_TEST_CITUS_WORKERS=2 PGSCALE_TEST_PROVIDER=local npm run plans:record`.
 */
const t = useTestDatabase()
let cases: PlanCase[]

beforeAll(async () => {
  cases = await seedPlanData(t.db)
}, 300_000)

describe('plan regression', () => {
  it('every statement keeps its recorded plan shape', async () => {
    const named = Object.fromEntries(cases.map((c) => [c.name, { statement: c.statement, settings: c.settings }]))
    const result = await checkPlanShapes(t.db, named, { file: join(import.meta.dirname, 'shapes.json') })
    if (result.recorded) console.log(`[plans] recorded ${cases.length} shapes in ${result.file}`)
  })
})
