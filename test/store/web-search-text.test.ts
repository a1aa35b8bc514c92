import fc from 'fast-check'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { PgVectorStore } from '../../src/index.js'
import { webSearchText } from '../../src/bench-kit.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * `webSearchText` against the server: on random texts built from what makes `websearch_to_tsquery`
 * nest (dashes alone and in runs, quotes, `or`, hyphenated words, spaces and newlines), the
 * rewritten text always parses, and wherever the original parses the two match the same documents
 * (every single word, pair and triple of the generator's words);
 * and a hybrid search with a pasted separator line answers instead of failing.
 */
const t = useTestDatabase()

const piece = fc.constantFrom(
  '-',
  '--',
  '---',
  '- ',
  '-'.repeat(33),
  '- '.repeat(17),
  ' ',
  ' ',
  '\n',
  'cat',
  'dogs',
  'or',
  '"',
  'e-mail',
  'x--y',
  '(',
  'the',
)
const text = fc.array(piece, { maxLength: 60 }).map((parts) => parts.join(''))

/** Documents of the generator's words, alone, in pairs and in triples: what two queries are compared on. */
const WORDS = ['cat', 'dogs', 'e-mail', 'e', 'mail', 'x', 'y', 'x--y']
const DOCS = [
  '',
  ...WORDS,
  ...WORDS.flatMap((a) => WORDS.map((b) => `${a} ${b}`)),
  ...WORDS.flatMap((a, i) => WORDS.slice(i).map((b) => `${a} ${b} ${WORDS[(i + 3) % WORDS.length]}`)),
]

/** The text as a tsquery, or the server's error. */
async function parse(input: string): Promise<string | Error> {
  try {
    const { rows } = await sql<{ q: string }>`select websearch_to_tsquery('english', ${input})::text as q`.execute(t.db)
    return rows[0]!.q
  } catch (err) {
    return err as Error
  }
}

/** Which of the documents each query matches (a tsquery's text differs where its meaning does not: `!!'cat'` is `'cat'`). */
async function matches(query: string): Promise<boolean[]> {
  const { rows } = await sql<{ m: boolean[] }>`
    select array_agg(to_tsvector('english', d) @@ ${query}::tsquery order by n) as m from unnest(${DOCS}::text[]) with ordinality as u(d, n)`.execute(
    t.db,
  )
  return rows[0]!.m
}

describe('the hybrid search text and websearch_to_tsquery', () => {
  it('the rewritten text always parses, and matches what the original matches wherever that parses (seeded random texts)', async () => {
    let failedBefore = 0
    await fc.assert(
      fc.asyncProperty(text, async (input) => {
        const original = await parse(input)
        const rewritten = await parse(webSearchText(input))
        expect(rewritten).not.toBeInstanceOf(Error)
        if (original instanceof Error) failedBefore++
        else
          expect(await matches(rewritten as string), `${JSON.stringify(input)}: ${original} vs ${String(rewritten)}`).toEqual(
            await matches(original),
          )
      }),
      { seed: 20261203, numRuns: 400 },
    )
    expect(failedBefore).toBeGreaterThan(0) // the generator does reach the parser's limit
  })

  it('a hybrid search whose text holds a long line of dashes answers, from its own tenant only', async () => {
    const store = await PgVectorStore.open(t.db, { table: 'wst_chunks', dimensions: 3 })
    const acme = store.forTenant('acme')
    await acme.replaceDocument('d', [{ content: 'install the package with apt', embedding: [1, 0, 0] }])
    // Another tenant with the same words and vector: never in acme's answer.
    await store.forTenant('globex').replaceDocument('g', [{ content: 'install the package with apt', embedding: [1, 0, 0] }])
    const text = `how do I install the package ${'-'.repeat(72)} ${'- '.repeat(40)}apt`
    const hits = await acme.hybridSearch({ embedding: [1, 0, 0], text, k: 3 })
    expect(hits.map((h) => h.documentId)).toEqual(['d'])
    await store.close()
  })
})
