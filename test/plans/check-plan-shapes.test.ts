import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Kysely, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeTempDirs, tempDir } from '../support/temp-dir.js'
import { checkPlanShapes, InvalidArgumentError, PlanRegressionError, type Database, type PlanCase } from '../../src/index.js'
import { useTestDatabase } from '../support/test-database.js'

afterAll(removeTempDirs)

/**
 * `checkPlanShapes` as an app uses it in its CI: an app's statements are recorded once, checked
 * green, and a dropped index fails the check naming the statement with both shapes.
 */
const t = useTestDatabase()
// Made before the first test (a file whose tests are all skipped runs no afterAll, and makes none).
let dir = ''
beforeAll(() => void (dir = tempDir('pgscale-plans-')))
let appCases: Record<string, PlanCase>

beforeAll(async () => {
  await sql`create table orders (tenant_id int not null, id int not null, created_at timestamptz not null, total numeric not null, primary key (tenant_id, id))`.execute(
    t.db,
  )
  await sql`create index orders_tenant_created_at on orders (tenant_id, created_at)`.execute(t.db)
  await sql`insert into orders select i % 50, i, timestamptz '2025-01-01' + i * interval '1 minute', i % 97 from generate_series(1, 20000) i`.execute(
    t.db,
  )
  await sql`analyze orders`.execute(t.db)
  const app = t.db as unknown as Kysely<any>
  appCases = {
    'orders page': app.selectFrom('orders').selectAll().where('tenant_id', '=', 42).orderBy('created_at', 'desc').limit(50),
    'order by id': { statement: 'select * from orders where tenant_id = $1 and id = $2', params: [42, 7] },
    'monthly total': sql`select date_trunc('month', created_at), sum(total) from orders where tenant_id = ${42} group by 1`,
  }
})

const fileIn = (name: string) => join(dir, name)
const recordedFile = async (db: Database, base: string) => (await checkPlanShapes(db, appCases, { file: base, record: true })).file

describe('checkPlanShapes', () => {
  it('records one file per server major (sorted, one shape per line), then checks green', async () => {
    const base = fileIn('app-plans.json')
    const file = await recordedFile(t.db, base)
    expect(file).toMatch(/app-plans\.pg\d+(-citus|-pglite)?\.json$/)
    const text = readFileSync(file, 'utf8')
    expect(Object.keys(JSON.parse(text))).toEqual(['monthly total', 'order by id', 'orders page'])
    expect(text.trim().split('\n')).toHaveLength(5)
    const check = await checkPlanShapes(t.db, appCases, { file: base })
    expect(check.recorded).toBe(false)
    expect(check.shapes['orders page']).toContain('orders_tenant_created_at')
  })

  it('a dropped index fails the check, naming the statement with the recorded and the new shape', async () => {
    const base = fileIn('dropped.json')
    await recordedFile(t.db, base)
    await sql`drop index orders_tenant_created_at`.execute(t.db)
    try {
      const err = await checkPlanShapes(t.db, appCases, { file: base }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(PlanRegressionError)
      const regression = err as PlanRegressionError
      expect(regression.code).toBe('PLAN_REGRESSION')
      expect(regression.changes.map((c) => c.name)).toContain('orders page')
      const change = regression.changes.find((c) => c.name === 'orders page')!
      expect(change.recorded).toContain('orders_tenant_created_at')
      expect(change.now).not.toContain('orders_tenant_created_at')
      expect(regression.changes.map((c) => c.name)).not.toContain('order by id')
      expect(regression.message).toContain(`recorded: ${change.recorded}`)
      expect(regression.message).toContain(`now:      ${change.now}`)
    } finally {
      await sql`create index orders_tenant_created_at on orders (tenant_id, created_at)`.execute(t.db)
      await sql`analyze orders`.execute(t.db)
    }
  })

  it('a statement with no recording is listed as such', async () => {
    const base = fileIn('partial.json')
    await checkPlanShapes(t.db, { 'order by id': appCases['order by id']! }, { file: base, record: true })
    const err = (await checkPlanShapes(t.db, appCases, { file: base }).catch((e: unknown) => e)) as PlanRegressionError
    expect(err).toBeInstanceOf(PlanRegressionError)
    expect([...err.unrecorded].sort()).toEqual(['monthly total', 'orders page'])
    expect(err.changes).toEqual([])
  })

  it('bad input is typed: a case that is not a statement, a missing or a corrupt shapes file', async () => {
    await expect(checkPlanShapes(t.db, { nope: 42 as unknown as PlanCase }, { file: fileIn('x.json') })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
    await expect(checkPlanShapes(t.db, { nope: { statement: '   ' } }, { file: fileIn('x.json') })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    )
    await expect(checkPlanShapes(t.db, appCases, { file: '' })).rejects.toBeInstanceOf(InvalidArgumentError)
    const missing = (await checkPlanShapes(t.db, appCases, { file: fileIn('never-recorded.json') }).catch(
      (e: unknown) => e,
    )) as PlanRegressionError
    expect(missing).toBeInstanceOf(PlanRegressionError)
    expect(missing.message).toContain('PGSCALE_PLANS_RECORD=1')
    const corrupt = await recordedFile(t.db, fileIn('corrupt.json'))
    writeFileSync(corrupt, '{ not json')
    await expect(checkPlanShapes(t.db, appCases, { file: fileIn('corrupt.json') })).rejects.toBeInstanceOf(InvalidArgumentError)
    writeFileSync(corrupt, '["a list"]')
    await expect(checkPlanShapes(t.db, appCases, { file: fileIn('corrupt.json') })).rejects.toBeInstanceOf(InvalidArgumentError)
    expect(existsSync(corrupt)).toBe(true)
  })
})
