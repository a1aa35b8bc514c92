/**
 * One of the two processes of `two-processes.test.ts`: its own pool, four concurrent loops of
 * replaces of shared documents, expense inserts and deletes each followed by a refresh of its
 * bucket, and rebuilds of the whole range. Usage: node --import tsx two-process-worker.ts URL NAME
 */
import { sql } from 'kysely'
import { connect, PgVectorStore } from '../../src/index.js'
import { seededRandom } from '../../bench/synthetic/random.js'
import { expensesRollup } from '../rollup/rollup-fixture.js'

const [url, name] = process.argv.slice(2) as [string, string]
const OPS = 40
const db = await connect(url, { maxConnections: 4 })
const store = await PgVectorStore.open(db, { table: 'tp_chunks', dimensions: 4 })
const { rollup } = expensesRollup('America/Mexico_City', 'tp_monthly')
const acme = store.forTenant('acme')

async function loop(lane: number): Promise<void> {
  const random = seededRandom(`${name}-${lane}`)
  for (let op = 0; op < OPS; op++) {
    const pick = random.next()
    if (pick < 0.4) {
      const n = 1 + random.int(8)
      const tag = `${name}.${lane}.${op}/${n}`
      await acme.replaceDocument(
        `doc-${random.int(3)}`,
        Array.from({ length: n }, (_, i) => ({ content: `${tag}:${i}`, embedding: [1, i + 1, lane, op + 1] })),
      )
    } else if (pick < 0.7) {
      const paidAt = new Date(Date.UTC(2025, 2, 1) + random.int(92 * 24) * 3600_000)
      await sql`insert into expenses (tenant_id, paid_at, category, amount, status) values (1, ${paidAt}, ${`c${random.int(3)}`}, ${random.int(10000) / 100}, 'paid')`.execute(
        db,
      )
      await rollup.refreshAt(db, { tenantId: 1, moment: paidAt })
    } else if (pick < 0.9) {
      const { rows } = await sql<{ paid_at: Date }>`
        delete from expenses where tenant_id = 1 and id = (select id from expenses where tenant_id = 1 order by random() limit 1) returning paid_at`.execute(
        db,
      )
      if (rows[0]) await rollup.refreshAt(db, { tenantId: 1, moment: rows[0].paid_at })
    } else {
      await rollup.rebuild(db, { tenantId: 1, since: '2025-03-01', until: '2025-05-31' })
    }
  }
}

await Promise.all([0, 1, 2, 3].map(loop))
await db.close()
console.log(`${name}: ${4 * OPS} operations done`)
