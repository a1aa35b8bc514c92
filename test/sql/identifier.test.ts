import { describe, expect, it } from 'vitest'
import { assertIdentifier, assertQualifiedName, InvalidIdentifierError } from '../../src/index.js'

describe('identifiers', () => {
  it('accepts plain lower-case identifiers', () => {
    expect(assertIdentifier('rag_chunks', 'table')).toBe('rag_chunks')
    expect(assertIdentifier('_t1', 'table')).toBe('_t1')
    expect(assertQualifiedName('analytics.expenses', 'table')).toEqual({ schema: 'analytics', name: 'expenses' })
  })

  it.each(['', 'Chunks', '1abc', 'a-b', 'a b', 'x"; drop table y; --', 'a'.repeat(64), 'a.b.c'])(
    'rejects %j with InvalidIdentifierError',
    (name) => {
      expect(() => assertQualifiedName(name, 'table name')).toThrow(InvalidIdentifierError)
    },
  )

  it('rejects non-strings', () => {
    expect(() => assertIdentifier(42, 'column')).toThrow(InvalidIdentifierError)
    expect(() => assertIdentifier(undefined, 'column')).toThrow(/column "undefined" is not a valid identifier/)
  })
})
