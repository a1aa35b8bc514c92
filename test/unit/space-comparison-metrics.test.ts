import { describe, expect, it } from 'vitest'
import { ndcgAt, overlapAt, rankCorrelation, recallAt } from '../../src/index.js'

/** The figures of compareSpaces, against values worked out by hand. */
describe('space comparison metrics', () => {
  it('overlap@k counts the shared items over k', () => {
    expect(overlapAt(['a', 'b', 'c'], ['c', 'd', 'a'], 3)).toBeCloseTo(2 / 3)
    expect(overlapAt(['a', 'b'], ['a', 'b'], 4)).toBe(0.5) // fewer than k results count as misses
    expect(overlapAt(['a'], ['b'], 1)).toBe(0)
  })

  it("Spearman's correlation of the shared items' ranks", () => {
    expect(rankCorrelation(['a', 'b', 'c'], ['a', 'b', 'c'])).toBe(1)
    expect(rankCorrelation(['a', 'b', 'c'], ['c', 'b', 'a'])).toBe(-1)
    // shared a, b, d: ranks (1,2,3) against (2,1,3): d² = 1 + 1 + 0 → 1 − 6·2 / (3·8) = 0.5
    expect(rankCorrelation(['a', 'b', 'x', 'd'], ['b', 'y', 'a', 'd'])).toBeCloseTo(0.5)
    expect(rankCorrelation(['a', 'b'], ['a', 'z'])).toBeNull()
  })

  it('recall and nDCG with binary relevance', () => {
    expect(recallAt(['a', 'x', 'b'], ['a', 'b', 'c', 'd'])).toBe(0.5)
    expect(ndcgAt(['a', 'b'], ['a', 'b'], 2)).toBe(1)
    expect(ndcgAt(['x', 'a'], ['a'], 2)).toBeCloseTo(1 / Math.log2(3))
    // relevant at ranks 1 and 3 of 3, two relevant: (1 + 1/2) / (1 + 1/log2 3)
    expect(ndcgAt(['a', 'x', 'b'], ['a', 'b'], 3)).toBeCloseTo(1.5 / (1 + 1 / Math.log2(3)))
    expect(ndcgAt(['x'], ['a'], 1)).toBe(0)
  })
})
