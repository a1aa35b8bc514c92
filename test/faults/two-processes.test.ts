import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { sql } from 'kysely'
import { describe, expect } from 'vitest'
import { PgVectorStore } from '../../src/index.js'
import { expensesRollup, fromScratch, rollupSnapshot, seedExpenses } from '../rollup/rollup-fixture.js'
import { itWithServer } from '../support/skip.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * Two Node processes, each with its own pool and four concurrent loops, replace the same documents
 * and refresh and rebuild the same buckets at once. Afterwards the rollup equals the from-scratch
 * aggregate, and every document is one writer's whole version.
 */
const t = useTestDatabase()
const run = promisify(execFile)
const worker = fileURLToPath(new URL('./two-process-worker.ts', import.meta.url))
const ZONE = 'America/Mexico_City'

describe('two processes', () => {
  itWithServer(t.target)('refresh, rebuild and replace the same buckets and documents: the result equals the truth', async () => {
    await PgVectorStore.open(t.db, { table: 'tp_chunks', dimensions: 4 })
    await seedExpenses(t.db, {
      seed: 'two-processes',
      rows: 400,
      tenants: 2,
      bigTenantRows: 300,
      months: 3,
      end: new Date('2025-05-31T12:00:00Z'),
    })
    const { target, rollup } = expensesRollup(ZONE, 'tp_monthly')
    await target.create(t.db)
    await rollup.rebuild(t.db, { tenantId: 1, since: '2025-03-01', until: '2025-05-31' })

    const outputs = await Promise.all(
      ['left', 'right'].map((name) =>
        run(process.execPath, ['--import', 'tsx', worker, t.url!, name], { timeout: 120_000 }).then((r) => r.stdout.trim()),
      ),
    )
    expect(outputs).toEqual(['left: 160 operations done', 'right: 160 operations done'])

    expect(await rollupSnapshot(t.db, 'tp_monthly', 1)).toEqual(await fromScratch(t.db, ZONE, 1))
    const { rows } = await sql<{ document_id: string; contents: string[] }>`
      select document_id, array_agg(content order by chunk_index) as contents from tp_chunks where tenant_id = 'acme' group by 1 order by 1`.execute(
      t.db,
    )
    expect(rows.length).toBeGreaterThan(0)
    for (const { document_id, contents } of rows) {
      const tag = contents[0]!.split(':')[0]!
      const n = Number(tag.split('/')[1])
      expect(contents, document_id).toEqual(Array.from({ length: n }, (_, i) => `${tag}:${i}`))
    }
  })
})
