import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect } from 'vitest'
import { connect, PgVectorStore, type Database } from '../../../src/index.js'
import { seededRandom } from '../../../bench/synthetic/random.js'
import { itWithServer } from '../../support/skip.js'
import { useTestDatabase } from '../../support/test-database.js'

/**
 * Writers of one document at once: whatever the interleaving, the document ends as exactly one
 * writer's whole version (its chunk count, its content in every chunk), never a mix.
 */
const t = useTestDatabase()
const DIM = 4
const ROUNDS = 20
let db: Database
let store: PgVectorStore

const version = (writer: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({ content: `${writer}:${i}`, embedding: [1, i + 1, 0.5, 0.25] }))

/** The document's chunks: whole when all come from one writer, indexes 0..n-1, n that writer's count. */
async function wholeVersion(documentId: string, counts: Map<string, number>): Promise<string | null> {
  const { rows } = await sql<{ content: string; chunk_index: number }>`
    select content, chunk_index from conc_chunks where tenant_id = 'acme' and document_id = ${documentId} order by chunk_index`.execute(db)
  if (rows.length === 0) return null
  const writers = new Set(rows.map((r) => r.content.split(':')[0]!))
  expect([...writers], `document ${documentId} mixes versions`).toHaveLength(1)
  const [writer] = writers
  expect(rows.map((r) => r.chunk_index)).toEqual(Array.from({ length: counts.get(writer!)! }, (_, i) => i))
  expect(rows.map((r) => r.content)).toEqual(version(writer!, counts.get(writer!)!).map((c) => c.content))
  return writer!
}

beforeAll(async () => {
  if (!t.url) return
  db = await connect(t.url, { maxConnections: 16 })
  store = await PgVectorStore.open(db, { table: 'conc_chunks', dimensions: DIM })
})
afterAll(async () => {
  await db?.close()
})

describe('concurrent writes of one document', () => {
  itWithServer(t.target)(
    `2-16 concurrent replaces of different chunk counts leave one whole version (${ROUNDS} rounds, seeded)`,
    async () => {
      const random = seededRandom('concurrent-replace')
      const acme = store.forTenant('acme')
      const winners: string[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const writers = 2 + random.int(15)
        const counts = new Map<string, number>()
        for (let w = 0; w < writers; w++) counts.set(`r${round}w${w}`, 1 + random.int(12))
        const doc = `doc-${round % 3}`
        await Promise.all([...counts].map(([writer, n]) => acme.replaceDocument(doc, version(writer, n))))
        winners.push((await wholeVersion(doc, counts))!)
      }
      expect(winners).toHaveLength(ROUNDS)
    },
  )

  itWithServer(t.target)('replaces and deletes at once: the document is gone or one whole version', async () => {
    const random = seededRandom('replace-delete')
    const acme = store.forTenant('acme')
    for (let round = 0; round < 10; round++) {
      const counts = new Map<string, number>()
      const calls: Promise<unknown>[] = []
      for (let w = 0; w < 8; w++) {
        const writer = `d${round}w${w}`
        counts.set(writer, 1 + random.int(9))
        calls.push(
          random.next() < 0.3 ? acme.deleteDocument('doc-del') : acme.replaceDocument('doc-del', version(writer, counts.get(writer)!)),
        )
      }
      await Promise.all(calls)
      await wholeVersion('doc-del', counts)
    }
  })
})
