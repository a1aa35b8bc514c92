import { CompiledQuery, sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { InvalidArgumentError } from '../../src/index.js'
import { seededRandom, sqlTextConstant } from '../../src/bench-kit.js'
import { useTestDatabase } from '../support/test-database.js'

/**
 * `sqlTextConstant` writes the metadata-index expression's keys and the index comment into DDL (no
 * parameters there): a property test that every string comes back from the server as itself,
 * under both `standard_conforming_strings` settings, and that the text holds no quote, backslash
 * or `$` of the value's own.
 */
const t = useTestDatabase()
const ALPHABET = [
  "'",
  '"',
  '\\',
  '$',
  '$1',
  'a',
  'Z',
  '0',
  ' ',
  '\n',
  '\t',
  '\u0001',
  'é',
  'ü',
  '€',
  '😀',
  '\uffff',
  '\u2028',
  '.',
  '_',
  '{',
  '}',
  '--',
  '/*',
]

function randomString(random: ReturnType<typeof seededRandom>): string {
  return Array.from({ length: random.int(12) }, () => ALPHABET[random.int(ALPHABET.length)]).join('')
}

describe('sqlTextConstant', () => {
  it('round-trips 2,000 random strings through the server, whatever standard_conforming_strings says', async () => {
    const random = seededRandom('text-constant')
    const values = Array.from({ length: 2000 }, () => randomString(random))
    for (const conforming of t.target.citusWorkers ? ['on'] : ['on', 'off']) {
      await t.db.transaction(async (trx) => {
        await sql.raw(`set local standard_conforming_strings = ${conforming}`).execute(trx)
        for (let i = 0; i < values.length; i += 200) {
          const batch = values.slice(i, i + 200)
          const text = `select ${batch.map((v, j) => `${sqlTextConstant(v)} as v${j}`).join(', ')}`
          const { rows } = await trx.executeQuery<Record<string, string>>(CompiledQuery.raw(text))
          expect(batch.map((_, j) => rows[0]![`v${j}`])).toEqual(batch)
        }
      })
    }
  })

  it('holds no quote, backslash sequence or $ of the value inside its delimiters', () => {
    const random = seededRandom('text-constant-shape')
    for (let i = 0; i < 2000; i++) {
      const inner = sqlTextConstant(randomString(random)).slice(2, -1)
      expect(inner).not.toMatch(/['$]/)
      expect(inner.replace(/\\u[0-9a-f]{4}|\\U[0-9a-f]{8}/g, '')).not.toContain('\\')
    }
    expect(() => sqlTextConstant('a\u0000b')).toThrow(InvalidArgumentError)
  })
})
